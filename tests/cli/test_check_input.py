"""``l3ha check``: bad input is a one-line error and UNKNOWN (exit 3, as Nagios plugins do);
an unreadable cloud is UNKNOWN too."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.emulator import Emulator
from l3ha.model import Agent, Snapshot
from l3ha.snapshotfile import save_snapshot


@pytest.fixture
def snapshot_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("L3HA_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "world.json"
    save_snapshot(Snapshot((Agent("a1", "net-1"),), (), ()), path)
    return path


def _one_line_error(capsys: pytest.CaptureFixture[str], *words: str) -> None:
    out, err = capsys.readouterr()
    assert out.startswith("L3HA UNKNOWN - ") and len(out.splitlines()) == 1, out
    assert len(err.strip().splitlines()) == 1 and err.startswith("l3ha: error: "), err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--weights-prometheus", "prometheus:9090", "--weights-query", "q"], "http://"),
        (["--weights-prometheus", "http://127.0.0.1:9"], "--weights-query"),
        (["--weights-query", "sum(x)"], "--weights-prometheus"),
        (["--busy-ports", "3"], "--snapshot"),
        (["--busy-fips", "2"], "--snapshot"),
        (["--dhcp"], "--dhcp"),
    ],
)
def test_bad_weight_options_are_unknown_with_one_line(
    snapshot_file: Path, capsys: pytest.CaptureFixture[str], options: list[str], named: str
) -> None:
    assert main(["check", "--snapshot", str(snapshot_file), *options]) == 3
    _one_line_error(capsys, named)


def test_a_malformed_snapshot_file_is_unknown(
    snapshot_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot_file.write_text("{not json", encoding="utf-8")
    assert main(["check", "--snapshot", str(snapshot_file)]) == 3
    _one_line_error(capsys, str(snapshot_file))


def test_bad_options_against_a_cloud_are_unknown_before_reading_it(
    emulator: Emulator, snapshot_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--weights-prometheus", "localhost:9090", "--weights-query", "q"]) == 3
    _one_line_error(capsys, "--weights-prometheus")
    assert main(["check", "--imbalance-threshold", "500"]) == 0  # the same cloud reads fine
    assert capsys.readouterr().out.startswith("L3HA OK")


def test_an_unreachable_cloud_is_still_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(
        "clouds:\n  gone:\n    auth_type: none\n"
        f"    network_endpoint_override: http://127.0.0.1:{port}/\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
    monkeypatch.setenv("OS_CLOUD", "gone")
    monkeypatch.setenv("L3HA_STATE_DIR", str(tmp_path / "state"))
    assert main(["check"]) == 3
    assert capsys.readouterr().out.startswith("L3HA UNKNOWN - ")


@pytest.mark.parametrize(
    "argv",
    [["--bogus"], ["--replicas", "x"], ["--imbalance-threshold", "-1"], ["-f", "xml"]],
)
def test_usage_errors_exit_3_unknown_as_nagios_plugins_do(
    snapshot_file: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check", "--snapshot", str(snapshot_file), *argv])
    assert exited.value.code == 3
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "error:" in err, err
    with pytest.raises(SystemExit) as other:
        main(["agent", "list", "--bogus"])  # every other command: still 2
    assert other.value.code == 2


def test_a_cleanly_stopped_daemon_is_ok_and_a_warning_only_when_expected(
    snapshot_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from l3ha.daemon.status import stopped_document, write_status

    state = tmp_path / "watch-state"
    write_status(state, stopped_document(None, member="local", stopped=1000.0, interval=10.0))
    argv = ["check", "--snapshot", str(snapshot_file), "--state-dir", str(state)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("L3HA OK - ") and "'l3ha watch' stopped cleanly at 1970-01-01" in out
    assert main([*argv, "--expect-daemon"]) == 1
    assert capsys.readouterr().out.startswith("L3HA WARNING - 'l3ha watch' stopped cleanly")
