"""Fixtures for the keepalived lab tests: labs that are always torn down, VIP holder polling.

Lab tests need root and keepalived; they skip with the reason otherwise. Each
lab gets a unique name ``t<pytest pid>p<hex>`` (namespaces
``l3ha-lab-t<pid>p<hex>-*``) and its state dir in ``tmp_path``, and is torn
down in ``finally`` even when the test fails. A session fixture removes labs
left by crashed runs (their pytest pid is gone; also old-style ``t<8 hex>``
names) at session start, and this session's own at its end.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from l3ha.hastate.netlink import AddressReader
from l3ha.hastate.statefile import read_transition
from l3ha.lab import netns
from l3ha.lab.lab import Lab, lab_up, teardown
from l3ha.lab.topology import DEVICE, NAMESPACE_PREFIX, LabSpec

ROOT_REASON = "needs root for network namespaces"
KEEPALIVED_REASON = "needs keepalived (Debian package keepalived)"

needs_lab = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason=ROOT_REASON),
    pytest.mark.skipif(shutil.which("keepalived") is None, reason=KEEPALIVED_REASON),
]

LabFactory = Callable[..., Lab]


_TEST_LAB = re.compile(rf"^{NAMESPACE_PREFIX}(?P<lab>t(?:(?P<pid>\d+)p[0-9a-f]+|[0-9a-f]{{8}}))-")


def unique_name() -> str:
    """A lab name of this session: ``t<pid>p<hex>`` (at most 16 characters)."""
    return f"t{os.getpid()}p{uuid.uuid4().hex[:6]}"


def leftover_labs(include_own: bool) -> list[str]:
    """Test labs whose creating pytest is gone (or is this one, if ``include_own``)."""
    found: set[str] = set()
    for name in netns.list_namespaces():
        match = _TEST_LAB.match(name)
        if match is None:
            continue
        pid = int(match["pid"]) if match["pid"] else None
        if pid is None or not netns.alive(pid) or (include_own and pid == os.getpid()):
            found.add(match["lab"])
    return sorted(found)


def sweep_labs(include_own: bool, scratch: Path) -> list[str]:
    """Tear down leftover test labs (their processes and namespaces)."""
    swept = leftover_labs(include_own)
    for name in swept:
        teardown(name, scratch / name)
    return swept


@pytest.fixture(scope="session", autouse=True)
def sweep_test_labs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    if os.geteuid() != 0:
        yield
        return
    scratch = tmp_path_factory.mktemp("lab-sweep")
    sweep_labs(False, scratch)
    yield
    sweep_labs(True, scratch)


@pytest.fixture
def make_lab(tmp_path: Path) -> Iterator[LabFactory]:
    made: list[tuple[str, Path]] = []

    def make(
        nodes: int = 3, routers: int = 1, advert_int: float = 0.1, hook: str | None = None
    ) -> Lab:
        spec = LabSpec(unique_name(), nodes, routers, advert_int)
        state_dir = tmp_path / f"lab-{spec.name}"
        made.append((spec.name, state_dir))
        return lab_up(spec, state_dir, hook=hook, settle_timeout=60)

    try:
        yield make
    finally:
        for name, state_dir in made:
            teardown(name, state_dir)


class Holders:
    """Fast polling of who holds a VIP, over sockets kept open in each node's namespace."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.readers = {
            n: AddressReader(lab.spec.namespace(n), DEVICE) for n in lab.spec.node_names
        }

    def of(self, router: str, nodes: list[str] | None = None) -> list[str]:
        vip = self.lab.spec.vip(router).split("/")[0]
        chosen = nodes if nodes is not None else list(self.readers)
        return [n for n in chosen if vip in self.readers[n].addresses()]

    def close(self) -> None:
        for reader in self.readers.values():
            reader.close()


@pytest.fixture
def holders_of() -> Iterator[Callable[[Lab], Holders]]:
    opened: list[Holders] = []

    def open_for(lab: Lab) -> Holders:
        h = Holders(lab)
        opened.append(h)
        return h

    try:
        yield open_for
    finally:
        for h in opened:
            h.close()


def reported(lab: Lab, router: str, node: str) -> str | None:
    found = read_transition(lab.monitor_state(router, node))
    return found.state.value if found else None


def mismatches(lab: Lab, holders: Holders, router: str) -> list[str]:
    """Nodes whose monitor disagrees with their own namespace (empty when consistent)."""
    truth = set(holders.of(router))
    wrong = []
    for node in lab.spec.node_names:
        expected = "master" if node in truth else "backup"
        got = reported(lab, router, node)
        if got != expected:
            wrong.append(f"{node}: monitor {got}, namespace {expected}")
    return wrong


def wait_until(what: str, predicate: Callable[[], bool], timeout: float) -> float:
    """Poll until true; return the seconds it took; AssertionError on timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(0.005)
    raise AssertionError(f"timed out after {timeout:.1f} s waiting for {what}")


def wait_consistent(lab: Lab, holders: Holders, router: str, timeout: float = 5.0) -> None:
    """Until every monitor agrees with its namespace and stays so for three adverts."""
    hold = 3 * lab.spec.advert_int
    deadline = time.monotonic() + timeout
    stable_since: float | None = None
    last: list[str] = []
    while time.monotonic() < deadline:
        last = mismatches(lab, holders, router)
        now = time.monotonic()
        if last:
            stable_since = None
        elif stable_since is None:
            stable_since = now
        elif now - stable_since >= hold:
            return
        time.sleep(0.01)
    raise AssertionError(f"{router} monitors never settled: {last}")
