"""The pure VIP state machine: observations -> ordered transitions, dump order, hook coalescing."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from l3ha.errors import BadInputError
from l3ha.hastate.vipstate import (
    DumpOrdering,
    HookQueue,
    SequenceFilter,
    Transition,
    VipState,
    VipStateMachine,
    is_vip_event,
    parse_vip,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def feed(machine: VipStateMachine, observations: list[bool]) -> list[Transition]:
    out = []
    for i, present in enumerate(observations):
        t = machine.observe(present, 100.0 + i, T0 + timedelta(seconds=i))
        if t is not None:
            out.append(t)
    return out


def transition(seq: int, state: VipState = VipState.MASTER) -> Transition:
    return Transition(seq, state, None, float(seq), T0)


class TestStateMachine:
    def test_first_observation_always_reports(self) -> None:
        (first,) = feed(VipStateMachine(), [False])
        assert (first.seq, first.state, first.previous) == (1, VipState.BACKUP, None)

    def test_only_changes_report(self) -> None:
        out = feed(VipStateMachine(), [True, True, False, False, True])
        expected = [(1, "master"), (2, "backup"), (3, "master")]
        assert [(t.seq, t.state.value) for t in out] == expected
        assert [t.previous for t in out] == [None, VipState.MASTER, VipState.BACKUP]

    def test_numbering_continues_after_restart(self) -> None:
        out = feed(VipStateMachine(last_seq=41), [True, False])
        assert [t.seq for t in out] == [42, 43]

    def test_times_are_the_observation_times(self) -> None:
        machine = VipStateMachine()
        t = machine.observe(True, 12.5, T0)
        assert t is not None and t.monotonic == 12.5 and t.wall == T0
        assert machine.current == t

    @given(st.lists(st.booleans(), max_size=60), st.integers(min_value=0, max_value=10**6))
    def test_sequence_strictly_increasing_and_final_state_is_last_observation(
        self, observations: list[bool], base: int
    ) -> None:
        out = feed(VipStateMachine(base), observations)
        seqs = [t.seq for t in out]
        assert seqs == list(range(base + 1, base + 1 + len(out)))
        for earlier, later in itertools.pairwise(out):
            assert earlier.state != later.state
        if observations:
            assert out[-1].state == (VipState.MASTER if observations[-1] else VipState.BACKUP)


class TestTransitionDocument:
    def test_round_trip(self) -> None:
        t = Transition(7, VipState.BACKUP, VipState.MASTER, 3.25, T0)
        assert Transition.from_dict(t.to_dict()) == t

    @pytest.mark.parametrize(
        "doc",
        [
            {},
            {"seq": 0, "state": "master", "monotonic": 1, "wall": T0.isoformat()},
            {"seq": 1, "state": "primary", "monotonic": 1, "wall": T0.isoformat()},
            {"seq": 1, "state": "master", "monotonic": "x", "wall": T0.isoformat()},
        ],
    )
    def test_malformed_is_bad_input(self, doc: dict[str, object]) -> None:
        with pytest.raises(BadInputError):
            Transition.from_dict(doc)


class TestVipMatching:
    def test_address_matches_regardless_of_prefix(self) -> None:
        vip = parse_vip("169.254.0.1/24")
        assert is_vip_event(3, ("169.254.0.1", "169.254.0.1"), 3, vip)
        assert is_vip_event(3, (None, "169.254.0.1"), 3, vip)

    def test_other_device_or_address_does_not_match(self) -> None:
        vip = parse_vip("169.254.0.1/24")
        assert not is_vip_event(4, ("169.254.0.1", None), 3, vip)
        assert not is_vip_event(3, ("169.254.0.2", None), 3, vip)
        assert not is_vip_event(3, ("garbage", None), 3, vip)

    def test_ipv6(self) -> None:
        vip = parse_vip("fe80::1/64")
        assert is_vip_event(2, (None, "fe80::1"), 2, vip)

    def test_bad_vip(self) -> None:
        with pytest.raises(BadInputError, match="invalid VIP"):
            parse_vip("169.254.0.300/24")


class TestDumpOrdering:
    def test_broadcasts_before_the_dump_reply_are_reflected_in_it(self) -> None:
        order = DumpOrdering()
        order.start_dump()
        assert order.on_broadcast(True) == []
        assert order.on_broadcast(False) == []
        order.on_dump_entry(False)
        assert order.on_dump_done() == [False]

    def test_broadcasts_after_the_dump_started_apply_after_its_result(self) -> None:
        order = DumpOrdering()
        order.start_dump()
        order.on_dump_entry(True)
        assert order.on_broadcast(False) == []
        assert order.on_broadcast(True) == []
        assert order.on_dump_done() == [True, False, True]
        assert order.on_broadcast(False) == [False]

    def test_unrelated_broadcasts_are_ignored(self) -> None:
        order = DumpOrdering()
        assert order.on_broadcast(None) == []
        order.start_dump()
        order.on_dump_entry(False)
        assert order.on_broadcast(None) == []
        assert order.on_dump_done() == [False]

    def test_resync_forgets_the_previous_dump(self) -> None:
        order = DumpOrdering()
        order.start_dump()
        order.on_dump_entry(True)
        order.on_broadcast(False)
        order.start_dump()
        order.on_dump_entry(False)
        assert order.on_dump_done() == [False]


class TestHookQueue:
    def test_serial_and_newest_first(self) -> None:
        q = HookQueue()
        q.offer(transition(1))
        first, skipped = q.take()
        assert first is not None and first.seq == 1 and skipped == []
        q.offer(transition(2, VipState.BACKUP))
        q.offer(transition(3))
        assert q.take() == (None, [])  # one at a time
        assert q.finish().seq == 1
        nxt, skipped = q.take()
        assert nxt is not None and nxt.seq == 3 and skipped == [2]
        q.finish()
        assert q.take() == (None, [])

    def test_old_transition_offered_late_never_runs(self) -> None:
        q = HookQueue()
        q.offer(transition(5))
        q.take()
        q.finish()
        q.offer(transition(4))
        assert q.take() == (None, [])

    def test_finish_without_running_is_an_error(self) -> None:
        with pytest.raises(RuntimeError):
            HookQueue().finish()

    @given(st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=40))
    def test_started_sequences_strictly_increase(self, bursts: list[int]) -> None:
        q, seq, started = HookQueue(), 0, []
        for burst in bursts:
            for _ in range(burst):
                seq += 1
                q.offer(transition(seq))
            t, _ = q.take()
            if t is not None:
                started.append(t.seq)
                q.finish()
        assert started == sorted(set(started))
        assert started[-1] == seq


def test_sequence_filter_applies_only_increasing() -> None:
    f = SequenceFilter()
    accepted = [s for s in [1, 2, 2, 1, 5, 3, 6] if f.accept(transition(s))]
    assert accepted == [1, 2, 5, 6]


def test_sequence_filter_starts_over_for_a_new_monitor_run() -> None:
    f = SequenceFilter()

    def of(seq: int, run: str) -> Transition:
        return Transition(seq, VipState.MASTER, None, float(seq), T0, run)

    stream = [of(1, "a"), of(2, "a"), of(2, "a"), of(1, "b"), of(1, "b"), of(2, "b"), of(3, "b")]
    accepted = [(t.run, t.seq) for t in stream if f.accept(t)]
    assert accepted == [("a", 1), ("a", 2), ("b", 1), ("b", 2), ("b", 3)]
    assert f.resets == 1 and f.run == "b"
