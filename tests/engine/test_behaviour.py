"""The engine's shared semantics, for every kind of placement (routers on L3 agents,
networks on DHCP agents, router gateways on OVN gateway chassis), against the real-time
emulator: a journal that cannot be written, a stop request, a move budget, a missing
journal, a run killed mid-move, dry run, the re-check before a move (and the watch's
verdicts it holds), exit codes,
``history``, drains with late arrivals (the kinds whose drain disables the agent)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from tests.engine.conftest import wait_for
from tests.engine.kinds import OPTIONS, Env, Kind

from l3ha.cli.main import main
from l3ha.daemon.decide import overlay
from l3ha.errors import BadInputError
from l3ha.health import Verdict
from l3ha.journal import Journal, MoveStep


class FailingJournal(Journal):
    """A journal that counts the intents of writes; after ``fail_after`` of them it
    cannot be written any more (disk full)."""

    fail_after: int | None = None
    intents = 0

    def record_step(self, move_id: int, step: MoveStep, **kwargs: Any) -> None:
        if self.fail_after is not None and self.intents >= self.fail_after:
            raise OSError("No space left on device")
        if step is MoveStep.INTENT:
            self.intents += 1
        super().record_step(move_id, step, **kwargs)

    def record_outcome(self, *args: Any, **kwargs: Any) -> None:
        if self.fail_after is not None and self.intents >= self.fail_after:
            raise OSError("No space left on device")
        super().record_outcome(*args, **kwargs)


def _kill(env: Env, kind: Kind, host: str) -> set[str]:
    """Kill the node ``host``; what it hosted of the kind once it is reported dead."""
    kind.kill(env, host)
    wait_for(lambda: not kind.alive(env, host), f"{host} dead")
    hosted = kind.on(env, host)
    assert len(hosted) >= 4, hosted
    return hosted


def test_a_journal_that_cannot_be_written_stops_starting_moves(env: Env, kind: Kind) -> None:
    hosted = _kill(env, kind, kind.nodes[0])
    with FailingJournal(env.state_dir) as journal:
        journal.fail_after = 2
        ran = kind.act(env, "evacuate", kind.nodes[0], journal)
    # two intents journalled, the third could not be: nothing after it started
    assert len(hosted - kind.on(env, kind.nodes[0])) <= 2
    assert any("journal write failed" in w for w in ran.warnings)


def test_a_stop_request_lets_moves_in_flight_finish_and_leaves_the_rest_open(
    env: Env, kind: Kind
) -> None:
    hosted = _kill(env, kind, kind.nodes[0])
    with FailingJournal(env.state_dir) as journal:
        stop = lambda: journal.intents >= 2  # noqa: E731
        ran = kind.act(env, "evacuate", kind.nodes[0], journal, should_stop=stop)
        moved = hosted - kind.on(env, kind.nodes[0])
        assert 2 <= len(moved) < len(hosted)
        assert ran.count("moved") == len(moved)
        assert any("stays open" in w for w in ran.warnings)
        (op,) = journal.unfinished_operations()
        open_moves = [m for m in journal.moves(op.id) if not m.finished]
        assert {m.router_id for m in open_moves} == hosted - moved
    # the next leader finishes it: everything off the dead node
    with Journal(env.state_dir) as journal:
        again = kind.act(env, "evacuate", kind.nodes[0], journal)
        assert again.exit_code == 0
        assert kind.on(env, kind.nodes[0]) == set()
        assert journal.unfinished_operations() == []


def test_a_move_budget_cuts_the_plan_and_says_so(env: Env, kind: Kind) -> None:
    hosted = _kill(env, kind, kind.nodes[0])
    with Journal(env.state_dir) as journal:
        ran = kind.act(env, "evacuate", kind.nodes[0], journal, budget=2)
    assert ran.count("moved") == 2
    assert len(kind.on(env, kind.nodes[0])) == len(hosted) - 2
    note = f"{len(hosted) - 2} move(s) left for later by the move budget (2)"
    assert note in ran.warnings


def test_a_real_run_without_a_journal_is_bad_input_and_changes_nothing(
    env: Env, kind: Kind
) -> None:
    hosted = _kill(env, kind, kind.nodes[0])
    with pytest.raises(BadInputError, match="needs a journal"):
        kind.act(env, "evacuate", kind.nodes[0], None)
    assert kind.on(env, kind.nodes[0]) == hosted


def test_an_agent_change_without_a_journal_is_bad_input(env: Env, kind: Kind) -> None:
    _needs_disable(kind)
    kind.disable(env, kind.nodes[1])
    with pytest.raises(BadInputError, match="needs a journal"):
        kind.act(env, "undrain", kind.nodes[1], None)
    assert not kind.enabled(env, kind.nodes[1])


def test_a_run_killed_mid_move_is_finished_from_the_clouds_state(env: Env, kind: Kind) -> None:
    _kill(env, kind, kind.nodes[0])
    with Journal(env.state_dir) as journal:
        interrupted = kind.crash_mid_move(env, journal, kind.nodes[0], kind.nodes[1])
        assert len(journal.unfinished_operations()) == 1
    with Journal(env.state_dir) as journal:  # the next run (or leader)
        ran = kind.act(env, "evacuate", kind.nodes[0], journal)
        assert ran.exit_code == 0, ran
        assert journal.unfinished_operations() == []
    assert kind.on(env, kind.nodes[0]) == set()
    assert len(kind.hosts_of(env, interrupted)) == 1


def test_a_source_alive_again_before_its_moves_keeps_what_it_hosts(env: Env, kind: Kind) -> None:
    hosted = _kill(env, kind, kind.nodes[0])
    stale = kind.stale(env)  # the plan is made on the world as it was
    kind.revive(env, kind.nodes[0])
    wait_for(lambda: kind.alive(env, kind.nodes[0]), "the source alive")
    with Journal(env.state_dir) as journal:
        ran = kind.act(env, "evacuate", kind.nodes[0], journal, stale=stale)
    assert set(ran.outcomes) == {"skipped"}
    assert kind.on(env, kind.nodes[0]) == hosted


@pytest.mark.parametrize("beats_again", [False, True], ids=["silent", "beats-again"])
def test_a_source_judged_dead_stays_dead_to_the_recheck_until_it_beats_again(
    slow_neutron: Env, kind: Kind, beats_again: bool
) -> None:
    """The watch judges before the server does: its verdict (the heartbeat value it judged
    on) holds for the executor's re-check while the server still reads the agent alive."""
    env, host = slow_neutron, kind.nodes[0]
    hosted = kind.on(env, host)
    kind.kill(env, host)
    judged = kind.agent(env, host)
    stale = overlay(kind.stale(env), {judged.id: Verdict.DEAD})  # type: ignore[type-var]
    if beats_again:
        kind.revive(env, host)
        beat = lambda: kind.agent(env, host).heartbeat_timestamp != judged.heartbeat_timestamp  # noqa: E731
        wait_for(beat, "a new heartbeat", timeout=30.0)
    options = replace(OPTIONS, judged_dead={judged.id: judged.heartbeat_timestamp})
    assert kind.alive(env, host)  # the server does not read it dead yet
    with Journal(env.state_dir) as journal:
        ran = kind.act(env, "evacuate", host, journal, stale=stale, options=options)
    if beats_again:
        assert set(ran.outcomes) == {"skipped"}, ran
        assert kind.on(env, host) == hosted
    else:
        assert ran.exit_code == 0, ran
        assert kind.on(env, host) == set()


def test_a_dry_run_writes_nothing_and_needs_no_journal(env: Env, kind: Kind) -> None:
    hosted = _kill(env, kind, kind.nodes[0])
    ran = kind.act(env, "evacuate", kind.nodes[0], None, options=replace(OPTIONS, dry_run=True))
    assert set(ran.outcomes) == {"planned"} and len(ran.outcomes) >= len(hosted)
    assert ran.exit_code == 0
    assert kind.on(env, kind.nodes[0]) == hosted


def _needs_disable(kind: Kind) -> None:
    if not kind.disables:
        pytest.skip(f"a {kind.name} drain disables no agent (Neutron refuses to disable it)")


def _cli(kind: Kind, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main([*kind.cli, *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_dry_run_ends_like_the_real_run_when_it_cannot_finish(
    env: Env, kind: Kind, capsys: pytest.CaptureFixture[str]
) -> None:
    _needs_disable(kind)
    cramped = kind.cramped(env, kind.nodes[1])  # some of what it hosts finds no room
    code, out = _cli(kind, "drain", kind.nodes[1], *cramped, "--dry-run", capsys=capsys)
    assert "would then disable" not in out
    assert "left enabled" in out
    real, real_out = _cli(kind, "drain", kind.nodes[1], *cramped, capsys=capsys)
    assert "left enabled" in real_out
    assert kind.enabled(env, kind.nodes[1])
    assert code == real == 1


def test_a_dry_run_ends_like_the_real_run_when_it_can(
    env: Env, kind: Kind, capsys: pytest.CaptureFixture[str]
) -> None:
    _needs_disable(kind)
    code, out = _cli(kind, "drain", kind.nodes[1], "--dry-run", capsys=capsys)
    assert "would then disable" in out
    assert kind.enabled(env, kind.nodes[1]) and kind.on(env, kind.nodes[1])
    real, _ = _cli(kind, "drain", kind.nodes[1], capsys=capsys)
    assert not kind.enabled(env, kind.nodes[1]) and kind.on(env, kind.nodes[1]) == set()
    assert code == real == 0


def test_exit_codes(env: Env, kind: Kind, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(kind, "evacuate", "no-such-host", capsys=capsys)[0] == 2
    code, out = _cli(kind, "evacuate", kind.nodes[0], capsys=capsys)
    assert code == 3 and kind.refused_alive in out  # refused by the live-source gate
    assert kind.on(env, kind.nodes[0])
    _kill(env, kind, kind.nodes[0])
    assert _cli(kind, "evacuate", kind.nodes[0], capsys=capsys)[0] == 0
    assert kind.on(env, kind.nodes[0]) == set()


def test_history_names_what_each_move_placed(
    env: Env, kind: Kind, capsys: pytest.CaptureFixture[str]
) -> None:
    hosted = _kill(env, kind, kind.nodes[0])
    assert _cli(kind, "evacuate", kind.nodes[0], capsys=capsys)[0] == 0
    assert main(["history", "--moves", "--long", "-f", "json"]) == 0
    out = capsys.readouterr().out
    rows = json.loads(out[out.index("[") :])
    assert {r[f"{kind.noun}_id"] for r in rows} == hosted
    assert main(["history", "--moves"]) == 0
    table = capsys.readouterr().out
    assert f"| {kind.noun.capitalize()} " in table.splitlines()[1]  # the header row


class ArrivalJournal(Journal):
    """Runs ``arrive`` once, when the first move's outcome is journalled."""

    arrive: Any = None

    def record_outcome(self, *args: Any, **kwargs: Any) -> None:
        super().record_outcome(*args, **kwargs)
        arrive, self.arrive = self.arrive, None
        if arrive is not None:
            arrive()


def test_a_drain_moves_what_arrives_on_the_agent_while_it_drains(env: Env, kind: Kind) -> None:
    _needs_disable(kind)
    hosted = kind.on(env, kind.nodes[1])
    arrived: list[str] = []
    with ArrivalJournal(env.state_dir) as journal:
        journal.arrive = lambda: arrived.append(kind.land(env, kind.nodes[1], kind.nodes[2]))
        ran = kind.act(env, "drain", kind.nodes[1], journal)
    assert arrived and arrived[0] not in hosted
    assert any("arrived on" in n for n in ran.notices), ran.notices
    assert ran.exit_code == 0, ran
    assert kind.on(env, kind.nodes[1]) == set()
    assert not kind.enabled(env, kind.nodes[1])
    assert kind.hosts_of(env, arrived[0]) - {kind.nodes[1]}
