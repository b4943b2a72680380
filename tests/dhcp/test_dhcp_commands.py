"""``l3ha dhcp ...`` and ``agent list --type`` end to end, against the real-time emulator."""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest
from tests.dhcp.conftest import DhcpCloudEnv, dead, wait_for

from l3ha.cli.main import main
from l3ha.dhcp_model import DhcpSnapshot


def _bindings(snap: DhcpSnapshot) -> set[tuple[str, str]]:
    return {(b.network_id, b.agent_id) for b in snap.bindings}


def _operations(env: DhcpCloudEnv) -> int:
    path = env.state_dir / "journal.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM operations").fetchone()[0])


def test_a_killed_host_is_evacuated_and_every_network_is_served_with_an_active_port(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    victims = dhcp_env.networks_on("net-1")
    assert victims
    dhcp_env.emu.faults.kill_agent("net-1")
    wait_for(lambda: dead(dhcp_env, "net-1"), 10, "net-1 reported dead")
    capsys.readouterr()
    assert main(["dhcp", "evacuate", "net-1", "--port-timeout", "20", "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs"][0]["counts"]["moved"] == len(victims)
    after = dhcp_env.snapshot()
    assert after.networks_of_agent(after.find_agent("net-1").id) == ()
    for network_id in victims:
        assert dhcp_env.served_with_active_port(network_id, after), network_id
    assert main(["dhcp", "audit", "-f", "json"]) == 0  # the dead agent hosts nothing now
    assert json.loads(capsys.readouterr().out)["findings"] == []


def test_a_drain_never_leaves_a_network_without_a_live_agent(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    before = dhcp_env.snapshot()
    watched = {n.id for n in before.networks if before.serving_agents(n.id)}
    moving = dhcp_env.networks_on("net-2", before)
    unserved: list[tuple[int, str]] = []
    samples = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal samples
        while not stop.is_set():
            snap = dhcp_env.snapshot()
            samples += 1
            unserved.extend((samples, n) for n in watched if not snap.serving_agents(n))
            stop.wait(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        assert main(["dhcp", "drain", "net-2", "--port-timeout", "20"]) == 0
    finally:
        stop.set()
        sampler.join(10)
    assert samples >= 5, "the sampler did not sample the drain"
    assert unserved == []
    after = dhcp_env.snapshot()
    agent = after.find_agent("net-2")
    assert not agent.admin_state_up
    assert agent.description.startswith("l3ha: drained")
    assert after.networks_of_agent(agent.id) == ()
    assert all(dhcp_env.served_with_active_port(n, after) for n in moving)
    assert main(["dhcp", "undrain", "net-2"]) == 0
    back = dhcp_env.snapshot().find_agent("net-2")
    assert back.admin_state_up and back.description == ""
    assert "DHCP agent net-2 enabled" in capsys.readouterr().err


def test_dry_run_plans_and_changes_nothing(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _bindings(dhcp_env.snapshot())
    assert main(["dhcp", "drain", "net-3", "--dry-run", "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    planned = doc["runs"][0]["moves"]
    assert planned and {m["outcome"] for m in planned} == {"planned"}
    assert doc["agent_changes"][0]["outcome"] == "planned"
    assert _bindings(dhcp_env.snapshot()) == before
    assert dhcp_env.snapshot().find_agent("net-3").admin_state_up
    assert _operations(dhcp_env) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["dhcp", "evacuate", "no-such-host"], "no DHCP agent with host or id 'no-such-host'"),
        (["dhcp", "drain", "{l3}"], "is not a DHCP agent (it is the L3 agent on net-1)"),
        (["dhcp", "evacuate", "net-4", "--to", "{l3}"], "is not a DHCP agent"),
        (["dhcp", "undrain", "net"], "did you mean: net-1"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    l3_agent = next(o for o in dhcp_env.snapshot().other_agents if o.host == "net-1")
    argv = [a.replace("{l3}", l3_agent.id) for a in argv]
    before = _bindings(dhcp_env.snapshot())
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert _bindings(dhcp_env.snapshot()) == before
    assert _operations(dhcp_env) == 0


def test_an_invalid_count_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["dhcp", "repair", "--agents-per-network", "0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--agents-per-network" in err and len(err.strip().splitlines()) == 1


def test_evacuating_a_live_agent_is_refused_with_exit_3(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _bindings(dhcp_env.snapshot())
    assert main(["dhcp", "evacuate", "net-4"]) == 3
    assert "use 'l3ha dhcp drain net-4'" in capsys.readouterr().err
    assert _bindings(dhcp_env.snapshot()) == before


def test_repair_adds_missing_copies_and_trims_extra_ones_only_when_asked(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = dhcp_env.snapshot()
    network = sorted(snap.networks_of_agent(snap.find_agent("net-1").id))[0]
    extra = next(a for a in snap.agents if a.id not in snap.agents_of_network(network))
    dhcp_env.dhcp.add_network_to_agent(network, extra.id)  # a leftover "replicated" copy
    capsys.readouterr()
    assert main(["dhcp", "audit", "-f", "json"]) == 1
    kinds = {f["kind"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert kinds == {"above_count"}
    assert main(["dhcp", "repair", "--port-timeout", "20"]) == 0
    assert len(dhcp_env.hosts_of(network)) == 2  # not trimmed
    assert main(["dhcp", "repair", "--trim", "--port-timeout", "20"]) == 0
    assert len(dhcp_env.hosts_of(network)) == 1
    # two copies wanted: every network gets a second one on another agent
    assert main(["dhcp", "repair", "--agents-per-network", "2", "--port-timeout", "20"]) == 0
    after = dhcp_env.snapshot()
    served = [len(after.serving_agents(n.id)) for n in after.networks if n.needs_dhcp]
    assert served and set(served) == {2}


def test_agent_list_shows_dhcp_agents_with_networks_and_ports(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["agent", "list", "--type", "dhcp", "-f", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["host"] for r in rows] == [f"net-{i}" for i in range(1, 6)]
    assert set(rows[0]) == {"host", "id", "az", "alive", "admin_state", "networks", "ports"}
    assert sum(r["networks"] for r in rows) == len(dhcp_env.snapshot().bindings)
    assert main(["agent", "list", "--type", "all", "-f", "json"]) == 0
    kinds = {r["type"] for r in json.loads(capsys.readouterr().out)}
    assert kinds == {"l3", "dhcp"}


def test_audit_of_a_healthy_cloud_is_ok(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dhcp", "audit"]) == 0
    assert capsys.readouterr().out.startswith("DHCP OK - every network served")


def test_check_with_dhcp_reports_networks_without_dhcp(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    dhcp_env.emu.faults.kill_agent("net-5")
    wait_for(lambda: dead(dhcp_env, "net-5"), 10, "net-5 reported dead")
    capsys.readouterr()
    assert main(["check", "--dhcp", "-f", "json"]) == 2
    kinds = {p["kind"] for p in json.loads(capsys.readouterr().out)["problems"]}
    assert {"dhcp_no_dhcp", "dhcp_dead_agent"} <= kinds


def test_many_dead_dhcp_agents_at_once_trip_the_fleet_gate(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    for host in ("net-1", "net-2", "net-3"):
        dhcp_env.emu.faults.kill_agent(host)
    wait_for(lambda: all(dead(dhcp_env, h) for h in ("net-1", "net-2", "net-3")), 10, "dead")
    before = _bindings(dhcp_env.snapshot())
    assert main(["dhcp", "evacuate", "net-1"]) == 3
    err = capsys.readouterr().err
    assert "3 of 5 enabled DHCP agents are reported dead at once" in err
    assert "refusing to evacuate (override with --force)" in err
    assert _bindings(dhcp_env.snapshot()) == before
    assert _operations(dhcp_env) == 0


def test_history_names_the_networks_and_hosts_of_dhcp_moves(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    before = dhcp_env.snapshot()
    victims = dhcp_env.networks_on("net-1", before)
    names = {n.id: n.name for n in before.networks}
    assert victims and all(names[v] for v in victims)
    dhcp_env.emu.faults.kill_agent("net-1")
    wait_for(lambda: dead(dhcp_env, "net-1"), 10, "net-1 reported dead")
    assert main(["dhcp", "evacuate", "net-1", "--port-timeout", "20"]) == 0
    capsys.readouterr()
    assert main(["history", "--moves", "--long", "-f", "json"]) == 0
    out = capsys.readouterr().out
    rows = json.loads(out[out.index("[") :])
    assert {r["network_id"] for r in rows} == victims
    for row in rows:
        assert row["network"] == names[row["network_id"]] != row["network_id"]
        assert row["source"] == "net-1"
        assert row["target"].startswith("net-") and row["target"] != row["target_id"]
    assert main(["history", "--moves"]) == 0
    table = capsys.readouterr().out
    assert all(names[v] in table for v in victims)
