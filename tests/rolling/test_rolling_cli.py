"""``l3ha rolling``'s command line: bad input changes nothing; the dry run lists the steps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.emulator import Emulator, EmulatorConfig


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    for key in ("OS_AUTH_TYPE", "OS_ENDPOINT", "OS_AUTH_URL", "OS_PASSWORD", "OS_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("L3HA_STATE_DIR", str(tmp_path / "state"))
    with Emulator(EmulatorConfig(agents=3, routers=12, report_interval=0.2,
                                 agent_down_time=1.0, seed=2)) as running:  # fmt: skip
        path = running.write_clouds_yaml(tmp_path / "clouds.yaml")
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
        monkeypatch.setenv("OS_CLOUD", "l3ha-emulator")
        yield running


def _all_enabled(emu: Emulator) -> bool:
    return all(a["admin_state_up"] for a in emu.state()["agents"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--hosts", "net-1,net-9"], "no L3 agent with host or id 'net-9'"),
        (["--hosts", "net-1,net-1"], "names net-1 more than once"),
        ([], "name the hosts"),
        (["--hosts", "net-1", "--run", "ssh 'net-1"], "cannot be split"),
        (["--hosts", "net-1", "--max-outage", "5"], "--max-outage needs probe targets"),
        (["--hosts", "net-1", "--no-wait"], "always waits for the ports"),
        (["--hosts", "net-1", "--probe-routers", "udp:5"], "is not 'tcp:PORT' or 'icmp'"),
        (["--resume"], "no rolling run recorded"),
        (["--hosts", "net-1", "--report-interval", "80"], "shorter than --dead-after"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
    message: str,
) -> None:  # fmt: skip
    assert main(["rolling", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert _all_enabled(emu)
    assert not (tmp_path / "state" / "journal.sqlite").exists()


def test_dry_run_lists_every_step_and_changes_nothing(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["rolling", "--hosts", "net-2,net-1", "--run", "ssh {host} upgrade", "--dry-run"])
    assert code == 0
    out = capsys.readouterr().out
    assert "  1. net-2: drain l3" in out and "  5. net-2: restore l3" in out
    assert "  6. net-1: drain l3" in out and " 10. net-1: restore l3" in out
    assert out.index("| net-2 | planned") < out.index("| net-1 | planned")
    assert _all_enabled(emu)
    assert not (tmp_path / "state").exists()
