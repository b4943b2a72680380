"""``l3ha rolling``'s command line: bad input changes nothing; the dry run lists the steps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.emulator import Emulator
from l3ha.emulator.testing import PRE_CALIBRATION, Clocking, emulated_cloud


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    for key in ("OS_AUTH_TYPE", "OS_ENDPOINT", "OS_AUTH_URL", "OS_PASSWORD", "OS_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("L3HA_STATE_DIR", str(tmp_path / "state"))
    settings = {**PRE_CALIBRATION, "report_interval": 0.2, "agent_down_time": 1.0, "seed": 2}
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, agents=3, routers=12,
                        **settings) as cloud:  # fmt: skip
        assert cloud.emulator is not None
        for key, value in cloud.environ().items():
            monkeypatch.setenv(key, value)
        yield cloud.emulator


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors
        return int(str(exc.code))


def _all_enabled(emu: Emulator) -> bool:
    return all(a["admin_state_up"] for a in emu.state()["agents"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--hosts", "net-1,net-9", "--no-run"], "no L3 agent with host or id 'net-9'"),
        (["--hosts", "net-1,net-1", "--pause"], "names net-1 more than once"),
        (["--no-run"], "name the hosts"),
        (["--hosts", "net-1"], "--run COMMAND, --pause or --no-run"),
        (["--hosts", "net-1", "--dry-run"], "--run COMMAND, --pause or --no-run"),
        (["--hosts", "net-1", "--run", "x", "--pause"], "not allowed with argument --run"),
        (["--hosts", "net-1", "--pause", "--shell"], "--shell goes with --run"),
        (["--hosts", "net-1", "--run", "ssh 'net-1"], "cannot be split"),
        (["--hosts", "net-1", "--no-run", "--max-outage", "5"], "--max-outage needs probe"),
        (["--hosts", "net-1", "--no-run", "--max-outage", "5", "--dry-run"], "needs probe"),
        (["--hosts", "net-1", "--no-run", "--probe-routers", "x", "--dry-run"], "is not 'tcp:"),
        (["--hosts", "net-1", "--no-run", "--no-wait"], "always waits for the ports"),
        (["--hosts", "net-1", "--no-run", "--probe-routers", "udp:5"], "is not 'tcp:PORT' or"),
        (["--resume"], "no rolling run recorded"),
        (["--hosts", "net-1", "--no-run", "--report-interval", "80"], "shorter than --dead-"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
    message: str,
) -> None:  # fmt: skip
    assert _exit_code(["rolling", *argv]) == 2
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


def test_a_rehearsal_dry_run_has_no_upgrade_step_and_pause_has_one(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rolling", "--hosts", "net-1", "--no-run", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "  1. net-1: drain l3\n  2. net-1: stable l3\n" in out
    assert "longest outage" not in out  # nothing ran: no outage to report
    assert main(["rolling", "--hosts", "net-1", "--pause", "--dry-run"]) == 0
    assert "  2. net-1: pause\n  3. net-1: stable l3\n" in capsys.readouterr().out
    assert _all_enabled(emu)
