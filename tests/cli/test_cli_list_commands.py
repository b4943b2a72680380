"""``l3ha agent list``, ``router list`` and ``snapshot save`` in-process against the emulator."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.cloud.neutron_fake import closed_port

from l3ha.cli.main import main
from l3ha.cloud.adapter import connect
from l3ha.emulator import CLOUD_NAME as CLOUD
from l3ha.emulator import Emulator
from l3ha.emulator.testing import SMALL, Clocking, emulated_cloud
from l3ha.snapshotfile import load_snapshot


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, object]]:
    code, out, err = _run(capsys, *argv, "-f", "json")
    assert code == 0, err
    rows: list[dict[str, object]] = json.loads(out)
    return rows


def table_cells(out: str) -> list[list[str]]:
    """The cells of a cliff (``openstack``-style) table, header row first."""
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in out.splitlines()
        if line.startswith("|")
    ]


def _one_line_error(err: str) -> str:
    assert err.count("\n") == 1, err
    assert err.startswith("l3ha: error: ")
    assert "Traceback" not in err
    return err


# --- agent list -----------------------------------------------------------------


def test_agent_list_table_has_a_header_and_one_row_per_agent(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "agent", "list")
    assert code == 0
    cells = table_cells(out)
    assert cells[0] == [
        "Host", "ID", "AZ", "Mode", "Alive", "Admin State", "Heartbeat Age", "Routers", "Busy",
        "Weight",
    ]  # fmt: skip
    assert [row[0] for row in cells[1:]] == ["net-1", "net-2", "net-3", "net-4"]
    assert {row[4] for row in cells[1:]} == {"True"}


def test_agent_list_json_counts_routers_busy_and_weight(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _json(capsys, "agent", "list", "--os-cloud", CLOUD)
    snap = connect(CLOUD).read_snapshot()
    assert sum(int(str(r["routers"])) for r in rows) == len(snap.bindings)
    busy_bindings = sum(
        len(snap.bindings_of_router(r.id)) for r in snap.routers if "l3ha:busy" in r.tags
    )
    assert sum(int(str(r["busy"])) for r in rows) == busy_bindings
    assert sum(int(str(r["weight"])) for r in rows) == len(snap.bindings) + 9 * busy_bindings
    assert {r["az"] for r in rows} == {"az1", "az2"}
    assert all(r["alive"] is True and r["admin_state"] == "up" for r in rows)


def test_busy_weight_option_changes_the_weight(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = _json(capsys, "agent", "list")
    heavy = _json(capsys, "agent", "list", "--busy-weight", "100")
    busy = sum(int(str(r["busy"])) for r in plain)
    assert (
        sum(int(str(r["weight"])) for r in heavy) - sum(int(str(r["weight"])) for r in plain)
        == 90 * busy
    )


def test_weights_file_overrides_tags(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    snap = connect(CLOUD).read_snapshot()
    router = next(r for r in snap.routers if len(snap.bindings_of_router(r.id)) == 1)
    host = snap.agents_by_id[snap.bindings_of_router(router.id)[0].agent_id].host
    weights = tmp_path / "weights.yaml"
    weights.write_text(f"{router.id}: 50\n", encoding="utf-8")
    before = {r["host"]: r["weight"] for r in _json(capsys, "agent", "list")}
    after = {
        r["host"]: r["weight"] for r in _json(capsys, "agent", "list", "--weights", str(weights))
    }
    assert int(str(after[host])) - int(str(before[host])) == 50 - (
        10 if "l3ha:busy" in router.tags else 1
    )
    routers = _json(capsys, "router", "list", "--weights", str(weights), "-c", "id", "-c", "busy")
    assert {"id": router.id, "busy": True} in routers


def test_killed_agent_shows_dead(emulator: Emulator, capsys: pytest.CaptureFixture[str]) -> None:
    emulator.faults.kill_agent("net-2")
    emulator.advance(2.0)
    rows = _json(capsys, "agent", "list", "-c", "host", "-c", "alive")
    assert rows == [
        {"host": "net-1", "alive": True},
        {"host": "net-2", "alive": False},
        {"host": "net-3", "alive": True},
        {"host": "net-4", "alive": True},
    ]


def test_agent_list_yaml_and_extra_columns(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "agent", "list", "-f", "yaml", "-c", "id", "-c", "heartbeat")
    assert code == 0
    rows = yaml.safe_load(out)
    assert len(rows) == 4
    assert all(set(r) == {"id", "heartbeat"} and r["heartbeat"] for r in rows)


def test_unknown_column_is_one_line_exit_2(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "agent", "list", "-c", "nosuch")
    assert code == 2
    assert "nosuch" in _one_line_error(err)


# --- router list ----------------------------------------------------------------


def test_router_list_shows_ha_state_of_hosting_agents(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _json(capsys, "router", "list")
    assert len(rows) == 20
    ha = [r for r in rows if r["ha"]]
    assert len(ha) == 2
    for row in ha:
        agents = row["agents"]
        assert isinstance(agents, list)
        assert sorted(a.split("(")[1] for a in agents) == ["active)", "standby)"]
    assert sum(1 for r in rows if r["busy"]) == 2


def test_router_list_table_joins_agents(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "router", "list", "-c", "ha", "-c", "agents")
    assert code == 0
    cells = table_cells(out)
    assert cells[0] == ["HA", "Agents"]
    ha_rows = [row for row in cells[1:] if row[0] == "True"]
    assert len(ha_rows) == 2
    assert all("(active)" in agents and "(standby)" in agents for _, agents in ha_rows)
    assert all(", " in agents for _, agents in ha_rows)


def test_router_list_by_agent_host_or_id(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = connect(CLOUD).read_snapshot()
    net1 = snap.find_agent("net-1")
    expected = sorted(b.router_id for b in snap.bindings_of_agent(net1.id))
    by_host = _json(capsys, "router", "list", "--agent", "net-1", "-c", "id", "-c", "agents")
    by_id = _json(capsys, "router", "list", "--agent", net1.id, "-c", "id")
    assert sorted(str(r["id"]) for r in by_host) == expected
    assert sorted(str(r["id"]) for r in by_id) == expected
    assert all(any(str(a).startswith("net-1") for a in r["agents"]) for r in by_host)  # type: ignore[attr-defined]


def test_unknown_agent_is_one_line_exit_2(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "router", "list", "--agent", "net")
    assert code == 2
    line = _one_line_error(err)
    assert "no L3 agent with host or id 'net'" in line
    assert "net-1" in line  # candidates


def test_unhosted_lists_routers_without_agent(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud = connect(CLOUD)
    snap = cloud.read_snapshot()
    router = next(r for r in snap.routers if not r.ha and snap.bindings_of_router(r.id))
    cloud.unbind(router.id, snap.bindings_of_router(router.id)[0].agent_id)
    rows = _json(capsys, "router", "list", "--unhosted")
    assert [r["id"] for r in rows] == [router.id]
    assert rows[0]["agents"] == []


# --- snapshot save and offline use ------------------------------------------------


def test_snapshot_save_then_list_offline(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "snap.json"
    code, _, err = _run(capsys, "snapshot", "save", str(path))
    assert code == 0, err
    assert "20 routers" in err
    snap = load_snapshot(path)
    assert len(snap.agents) == 4
    assert any(b.ha_state is not None for b in snap.bindings)
    live_agents = _json(capsys, "agent", "list", "-c", "host", "-c", "routers", "-c", "weight")
    live_routers = _json(capsys, "router", "list")
    emulator.stop()
    offline = ["--snapshot", str(path), "--os-cloud", "nowhere"]
    assert (
        _json(capsys, "agent", "list", *offline, "-c", "host", "-c", "routers", "-c", "weight")
        == live_agents
    )
    assert _json(capsys, "router", "list", *offline) == live_routers


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot read snapshot"),
        ("{not json", "not valid JSON"),
        ('{"format": "l3ha-snapshot", "version": 99}', "version 99"),
        ('{"format": "l3ha-snapshot", "version": 1, "agents": 3}', "'agents' must be a list"),
        ("[]", "not an l3ha snapshot"),
    ],
)
def test_bad_snapshot_file_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None, reason: str
) -> None:
    path = tmp_path / "snap.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    code, _, err = _run(capsys, "router", "list", "--snapshot", str(path))
    assert code == 2
    assert reason in _one_line_error(err)


def test_snapshot_save_to_unwritable_place_is_one_line_exit_2(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _run(capsys, "snapshot", "save", str(tmp_path / "no" / "such" / "dir.json"))
    assert code == 2
    assert "cannot write snapshot" in _one_line_error(err)


# --- cloud problems ---------------------------------------------------------------


def test_unreachable_cloud_is_one_line_non_zero(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "clouds.yaml"
    url = f"http://127.0.0.1:{closed_port()}/"
    config.write_text(
        f"clouds:\n  gone:\n    auth_type: none\n    network_endpoint_override: {url}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(config))
    code, out, err = _run(capsys, "agent", "list", "--os-cloud", "gone")
    assert code != 0
    assert out == ""
    line = _one_line_error(err)
    assert "gone" in line and url in line and "connection refused" in line


def test_missing_cloud_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "router", "list", "--os-cloud", "nosuch")
    assert code == 2
    assert "nosuch" in _one_line_error(err)


def test_bad_credentials_are_one_line_exit_2_without_the_password(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, name="kc", **{**SMALL, "keystone": True}):
        config = tmp_path / "clouds.yaml"
        good = config.read_text(encoding="utf-8")
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(config))
        code, out, err = _run(capsys, "agent", "list", "--os-cloud", "kc", "-c", "host")
        assert code == 0, err
        assert "net-1" in out
        config.write_text(good.replace("l3ha-emulator", "Wrong-Pa55word"), encoding="utf-8")
        code, out, err = _run(capsys, "agent", "list", "--os-cloud", "kc")
    assert code == 2
    line = _one_line_error(err)
    assert "401" in line or "auth" in line.lower()
    assert "Wrong-Pa55word" not in line


def test_bad_weights_file_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    weights = tmp_path / "w.json"
    weights.write_text('{"r1": "heavy"}', encoding="utf-8")
    code, _, err = _run(capsys, "agent", "list", "--snapshot", "x", "--weights", str(weights))
    assert code == 2
    assert "weight of 'r1'" in _one_line_error(err)


def test_console_stderr_is_exactly_one_line_for_an_unreachable_cloud(tmp_path: Path) -> None:
    config = tmp_path / "clouds.yaml"
    url = f"http://127.0.0.1:{closed_port()}/"
    config.write_text(
        f"clouds:\n  gone:\n    auth_type: none\n    network_endpoint_override: {url}\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env["OS_CLIENT_CONFIG_FILE"] = str(config)
    proc = subprocess.run(
        [sys.executable, "-m", "l3ha.cli.main", "router", "list", "--os-cloud", "gone"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "connection refused" in _one_line_error(proc.stderr)


def test_debug_logging_shows_no_password_or_token(
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = {**SMALL, "keystone": True, "password": "Pw-9f8e7d"}
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, name="kc", **settings):
        config = tmp_path / "clouds.yaml"
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(config))
        code, _, err = _run(capsys, "-vv", "agent", "list", "--os-cloud", "kc")
    assert code == 0, err
    assert "Pw-9f8e7d" not in caplog.text
    assert "X-Auth-Token" not in caplog.text
    assert "X-Subject-Token" not in caplog.text
