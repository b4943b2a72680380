"""The watch daemon's start-up check: a daemon that could not act exits 2 at once, one line.

Unit checks of each part (state directory, coordination, probe rights), then ``l3ha watch``
itself: with a bad state directory, an unreachable coordination service or an ICMP probe
it has no rights for, it exits 2 with one line before it opens the cloud, and leaves
nothing behind.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.daemon.norights import needs_root_tools, run_without_raw_sockets

from l3ha.daemon.preflight import check_coordination, check_directory
from l3ha.errors import BadInputError

RUN = "from l3ha.cli.main import run; run()"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on loopback that accepts connections."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield int(server.getsockname()[1])


# --- the parts -----------------------------------------------------------------------


def test_a_directory_that_can_be_created_passes_and_is_not_created(tmp_path: Path) -> None:
    check_directory(tmp_path / "a" / "b", "state directory")
    check_directory(tmp_path, "state directory")
    assert list(tmp_path.iterdir()) == []


def test_a_state_directory_below_a_file_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(BadInputError, match=r"state directory .*/file/state: .*/file is not a dir"):
        check_directory(blocker / "state", "state directory")
    with pytest.raises(BadInputError, match="is not a directory"):
        check_directory(blocker, "state directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere; see the read-only mount")
def test_a_directory_without_write_permission_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(BadInputError, match=r"cannot be created: .*locked is not writable"):
        check_directory(locked / "state", "state directory")


READ_ONLY_CHILD = """
import sys
from pathlib import Path
from l3ha.daemon.preflight import check_directory
from l3ha.errors import BadInputError
for path in sys.argv[1:]:
    try:
        check_directory(Path(path), "state directory")
        print("ok")
    except BadInputError as err:
        print(err)
"""


@needs_root_tools
def test_a_directory_on_a_read_only_mount_is_refused(tmp_path: Path) -> None:
    mount = tmp_path / "ro"
    mount.mkdir()
    script = f'mount --bind -o ro "{mount}" "{mount}" && exec "$@"'
    argv = [sys.executable, "-c", READ_ONLY_CHILD, str(mount), str(mount / "new")]
    result = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script, "sh", *argv],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"state directory {mount} is not writable",
        f"state directory {mount / 'new'} cannot be created: {mount} is not writable",
    ]


def test_a_coordination_service_that_answers_passes(listener: int) -> None:
    check_coordination(f"etcd3+http://127.0.0.1:{listener}?lock_timeout=3", timeout=3.0)


def test_an_unreachable_coordination_service_is_refused() -> None:
    url = f"etcd3+http://127.0.0.1:{free_port()}?lock_timeout=3"
    with pytest.raises(BadInputError, match=r"coordination service .*:\d+ is not reachable"):
        check_coordination(url, timeout=3.0)


def test_a_coordination_url_with_a_bad_port_is_refused() -> None:
    with pytest.raises(BadInputError, match=r"etcd3\+http://127.0.0.1:99999: the port is not"):
        check_coordination("etcd3+http://user:secret@127.0.0.1:99999", timeout=3.0)


def test_a_coordination_lock_directory_below_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInputError, match=r"coordination directory .* is not a directory"):
        check_coordination((tmp_path / "file" / "lock").as_uri(), timeout=3.0)
    check_coordination((tmp_path / "locks").as_uri(), timeout=3.0)
    assert not (tmp_path / "locks").exists()


# --- l3ha watch ----------------------------------------------------------------------


def _environment(tmp_path: Path) -> dict[str, str]:
    """No cloud at all: the check must refuse before the daemon opens one."""
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(
        "clouds:\n  gone:\n    auth_type: none\n"
        f"    network_endpoint_override: http://127.0.0.1:{free_port()}/\n",
        encoding="utf-8",
    )
    return {
        "OS_CLIENT_CONFIG_FILE": str(clouds),
        "OS_CLOUD": "gone",
        "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
        "PYTHONPATH": ":".join(p for p in sys.path if p),
        "HOME": str(tmp_path),
    }


def _watch_argv(state_dir: Path, *args: str) -> list[str]:
    return [
        sys.executable, "-c", RUN, "watch", "--once", "--metrics-port", "0",
        "--state-dir", str(state_dir), *args,
    ]  # fmt: skip


def _assert_refused(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert result.stdout == ""


def test_watch_with_a_state_directory_below_a_file_exits_2(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    result = subprocess.run(
        _watch_argv(tmp_path / "file" / "state"),
        env=_environment(tmp_path), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    _assert_refused(result, "is not a directory")


def test_watch_with_an_unreachable_coordination_service_exits_2(tmp_path: Path) -> None:
    state = tmp_path / "state"
    url = f"etcd3+http://127.0.0.1:{free_port()}?lock_timeout=3"
    result = subprocess.run(
        _watch_argv(state, "--coordination", url),
        env=_environment(tmp_path), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    _assert_refused(result, "is not reachable")
    assert not state.exists()


@needs_root_tools
def test_watch_with_an_icmp_probe_and_no_rights_for_it_exits_2(tmp_path: Path) -> None:
    state = tmp_path / "state"
    argv = ["env", *(f"{k}={v}" for k, v in _environment(tmp_path).items())]
    result = run_without_raw_sockets(
        [*argv, *_watch_argv(state, "--dataplane-probe", "icmp")], timeout=120
    )
    _assert_refused(result, "cannot open an ICMP socket")
    assert not state.exists()
