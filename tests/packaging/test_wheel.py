"""The wheel ``python -m build`` makes installs into a clean virtualenv and runs.

Spawns processes: builds the wheel from this source tree, installs it with pip
into a new virtualenv (no site packages, nothing editable; pip's cache makes
this quick after the first run), then runs that virtualenv's ``l3ha`` against an
emulator served by the same installed ``l3ha``, on loopback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha import __version__

pytestmark = pytest.mark.slow

REPO = Path(__file__).parents[2]


def run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=900, check=False, cwd="/"
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean virtualenv with the freshly built wheel installed."""
    pytest.importorskip("build", reason="'build' is a dev extra: pip install -e '.[dev]'")
    out = tmp_path_factory.mktemp("dist")
    built = run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)])
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    wheels = sorted(out.glob("l3ha-*.whl"))
    assert [w.name for w in wheels] == [f"l3ha-{__version__}-py3-none-any.whl"]
    target = tmp_path_factory.mktemp("venv") / "l3ha"
    made = run([sys.executable, "-m", "venv", str(target)])
    assert made.returncode == 0, made.stderr
    pip = [str(target / "bin" / "pip"), "install", "-q", "--disable-pip-version-check"]
    installed = run([*pip, str(wheels[0])])
    assert installed.returncode == 0, installed.stderr[-3000:]
    return target


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "PYTHON"))}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["L3HA_STATE_DIR"] = str(tmp_path / "state")
    return env


def test_the_installed_l3ha_is_the_wheels_and_tells_its_version(venv: Path) -> None:
    where = run([str(venv / "bin" / "python"), "-c", "import l3ha; print(l3ha.__file__)"])
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(venv)
    version = run([str(venv / "bin" / "l3ha"), "--version"])
    assert (version.returncode, version.stdout.strip()) == (0, f"l3ha {__version__}")


def test_the_installed_config_sample_is_the_committed_one(venv: Path) -> None:
    sample = run([str(venv / "bin" / "l3ha"), "config", "sample"])
    assert sample.returncode == 0, sample.stderr
    assert sample.stdout == (REPO / "etc" / "l3ha.conf.sample").read_text(encoding="utf-8")


@pytest.fixture
def emulator(venv: Path, tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """The installed ``l3ha emulator serve``: its clouds.yaml and the environment to use it."""
    env = clean_env(tmp_path)
    serve = [str(venv / "bin" / "l3ha"), "emulator", "serve", "--port", "0"]
    proc = subprocess.Popen(
        [*serve, "--agents", "3", "--routers", "6"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        clouds = Path(proc.stdout.readline().split(": ", 1)[1].strip())
        yield clouds, dict(env, OS_CLIENT_CONFIG_FILE=str(clouds), OS_CLOUD="l3ha-emulator")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_installed_l3ha_checks_the_emulated_cloud(
    venv: Path, emulator: tuple[Path, dict[str, str]]
) -> None:
    _clouds, env = emulator
    checked = run([str(venv / "bin" / "l3ha"), "check"], env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("L3HA OK"), checked.stdout
    assert "agents=3" in checked.stdout and "routers=6" in checked.stdout
