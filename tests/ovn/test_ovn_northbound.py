"""``l3ha drain CHASSIS --ovn-nb ADDRESS``: OVN's northbound ``hosting-chassis`` as the check
that a moved gateway is hosted on its new chassis, read from a real ovsdb-server.

OVN 23.03 (Debian's, here) has no ``Logical_Router_Port.status``; later OVN writes
``status:hosting-chassis`` there. The tests serve the northbound schema of this machine's
OVN with that one column added (as later schemas have it) from a real ``ovsdb-server`` on a
unix socket in the test's directory, and play northd's part: a thread copies each emulated
gateway's chassis into its router port's status, a little late, as northd does after the
chassis claims the port. The emulated cloud runs on the real clock. Needs ``ovsdb-server``,
``ovsdb-tool``, ``ovsdb-client``, ``ovn-nbctl`` and the OVN schema (openvswitch-switch,
ovn-central); skips without them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from l3ha.cli.main import main
from l3ha.cloud.adapter import connect
from l3ha.cloud.ovn import NeutronOvn
from l3ha.cloud.ovn_nb import NbAddress, NorthboundReader, parse_nb_address
from l3ha.emulator import CLOUD_NAME, Emulator
from l3ha.emulator.testing import FAST, Clocking, emulated_cloud
from l3ha.errors import BadInputError, CloudError, UnreachableError

SCHEMA = Path("/usr/share/ovn/ovn-nb.ovsschema")
PROGRAMS = ("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl")
MISSING = [p for p in PROGRAMS if shutil.which(p) is None] + (
    [] if SCHEMA.exists() else [str(SCHEMA)]
)
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"needs {', '.join(MISSING)} (scripts/install-system-deps.sh)"
)
ROUTERS = 9
OVN: dict[str, Any] = {"ovn": True, "ovn_chassis": 3, "routers": ROUTERS, **FAST}
NORTHD_DELAY_S = 0.8  # the port's new hosting-chassis shows this long after the move


class Northbound:
    """A real ovsdb-server serving the northbound schema (``status`` added if asked)."""

    def __init__(self, directory: Path, with_status: bool) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        schema = json.loads(SCHEMA.read_text())
        if with_status:
            schema["tables"]["Logical_Router_Port"]["columns"]["status"] = {
                "type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"},
                "ephemeral": True,
            }
        (directory / "nb.ovsschema").write_text(json.dumps(schema))
        self.socket = directory / "nb.sock"
        self.address = f"unix:{self.socket}"
        db = directory / "nb.db"
        subprocess.run(["ovsdb-tool", "create", str(db), str(directory / "nb.ovsschema")],
                       check=True)  # fmt: skip
        argv = [
            "ovsdb-server",
            str(db),
            f"--remote=punix:{self.socket}",
            "--no-chdir",
            f"--unixctl={directory / 'nb.ctl'}",
            f"--log-file={directory / 'nb.log'}",
        ]
        self.server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not self.socket.exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.terminate()
        self.server.wait(10)

    def add_router_port(self, router: str, port: str, index: int) -> None:
        nbctl = ["ovn-nbctl", f"--db={self.address}"]
        subprocess.run([*nbctl, "--may-exist", "lr-add", router], check=True)
        subprocess.run([*nbctl, "lrp-add", router, port, f"00:00:00:00:01:{index:02x}",
                        f"10.0.{index}.1/24"], check=True)  # fmt: skip

    def set_hosting(self, port: str, chassis: str) -> None:
        op = {"op": "update", "table": "Logical_Router_Port", "where": [["name", "==", port]],
              "row": {"status": ["map", [["hosting-chassis", chassis]]]}}  # fmt: skip
        transaction = json.dumps(["OVN_Northbound", op])
        subprocess.run(["ovsdb-client", "transact", self.address, transaction],
                       check=True, capture_output=True)  # fmt: skip


class Northd:
    """Copies each emulated gateway's chassis into its router port's hosting-chassis,
    ``NORTHD_DELAY_S`` after the gateway changed chassis (a thread, until stopped)."""

    def __init__(self, emu: Emulator, nb: Northbound, ports: dict[str, str]) -> None:
        self.emu, self.nb, self.ports = emu, nb, ports
        self.shown = {router: self.bound()[router] for router in ports}
        for router, chassis in self.shown.items():
            nb.set_hosting(ports[router], chassis)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def bound(self) -> dict[str, str]:
        assert self.emu.ovn is not None
        with self.emu.world.lock:
            return {rid: g.bound or "" for rid, g in self.emu.ovn.ovn.gateways.items()}

    def run(self) -> None:
        changed_at: dict[str, float] = {}
        while not self.stop_event.wait(0.05):
            now = time.monotonic()
            for router, chassis in self.bound().items():
                if router not in self.ports or chassis == self.shown[router]:
                    changed_at.pop(router, None)
                    continue
                if now - changed_at.setdefault(router, now) >= NORTHD_DELAY_S:
                    self.nb.set_hosting(self.ports[router], chassis)
                    self.shown[router] = chassis

    def __enter__(self) -> Northd:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.thread.join(10)


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, environ=os.environ, **OVN) as cloud:
        assert cloud.emulator is not None
        yield cloud.emulator


def northbound(tmp_path: Path, with_status: bool = True) -> Iterator[Northbound]:
    nb = Northbound(tmp_path / "nb", with_status)
    try:
        yield nb
    finally:
        nb.stop()


@pytest.fixture
def nb(tmp_path: Path) -> Iterator[Northbound]:
    yield from northbound(tmp_path)


@pytest.fixture
def nb_23_03(tmp_path: Path) -> Iterator[Northbound]:
    yield from northbound(tmp_path, with_status=False)


def gateway_ports(nb: Northbound) -> dict[str, str]:
    """Router id -> its gateway port's name in the northbound (``lrp-<port id>``), each
    router port created there as Neutron's OVN driver would."""
    ports = {
        p.router_id: f"lrp-{p.port_id}"
        for p in NeutronOvn(connect(cloud=CLOUD_NAME)).gateway_ports()
    }
    for index, (router, port) in enumerate(sorted(ports.items()), start=1):
        nb.add_router_port(f"neutron-{router}", port, index)
    return ports


def primaries_of(emu: Emulator, chassis: str) -> set[str]:
    assert emu.ovn is not None
    with emu.world.lock:
        return {rid for rid, g in emu.ovn.ovn.gateways.items() if g.bound == chassis}


def test_the_reader_reads_each_router_ports_hosting_chassis(nb: Northbound) -> None:
    nb.add_router_port("neutron-r1", "lrp-a", 1)
    nb.add_router_port("neutron-r1", "lrp-b", 2)
    nb.set_hosting("lrp-a", "gw-2")
    assert NorthboundReader(parse_nb_address(nb.address)).hosting() == {
        "lrp-a": "gw-2",
        "lrp-b": "",
    }


def test_an_ovn_without_hosting_chassis_says_so(nb_23_03: Northbound) -> None:
    with pytest.raises(CloudError, match="has no Logical_Router_Port status"):
        NorthboundReader(parse_nb_address(nb_23_03.address)).hosting()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("ssl:127.0.0.1:6641", BadInputError),
        ("tcp:nb.example:6641", BadInputError),
        ("tcp:127.0.0.1:0", BadInputError),
        ("unix:", BadInputError),
    ],
)
def test_a_bad_address_is_bad_input(text: str, error: type[Exception]) -> None:
    with pytest.raises(error, match="is not 'unix:PATH' or 'tcp:IP:PORT'"):
        parse_nb_address(text)


def test_a_closed_port_is_unreachable() -> None:
    with pytest.raises(UnreachableError, match=r"tcp:127\.0\.0\.1:1: "):
        NorthboundReader(NbAddress(host="127.0.0.1", port=1)).hosting()


def test_a_drain_waits_until_the_northbound_shows_each_router_on_its_new_chassis(
    emulator: Emulator, nb: Northbound, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ports = gateway_ports(nb)
    victims = primaries_of(emulator, "gw-1")
    assert len(victims) >= 2
    with Northd(emulator, nb, ports):
        argv = ["drain", "gw-1", "--ovn-nb", nb.address, "--state-dir", str(tmp_path / "s"),
                "-f", "json"]  # fmt: skip
        code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    moves = [m for m in json.loads(out)["moves"] if m["outcome"] == "moved"]
    assert {m["router"] for m in moves} == victims
    assert all(m["seconds"] >= NORTHD_DELAY_S for m in moves)  # each waited for the northbound
    hosting = NorthboundReader(parse_nb_address(nb.address)).hosting()
    for move in moves:
        assert hosting[ports[move["router"]]] == move["target"]


def test_a_northbound_that_never_shows_the_move_stops_the_drain_after_the_canary(
    emulator: Emulator, nb: Northbound, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No northd: every port's hosting-chassis stays where it was."""
    ports = gateway_ports(nb)
    victims = primaries_of(emulator, "gw-1")
    for router, port in ports.items():
        nb.set_hosting(port, "gw-1" if router in victims else "gw-2")
    code = main(["drain", "gw-1", "--ovn-nb", nb.address, "--port-timeout", "2",
                 "--state-dir", str(tmp_path / "s")])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 1
    assert "still hosted on gw-1 (northbound hosting-chassis)" in err
    assert len(primaries_of(emulator, "gw-1")) == len(victims) - 1  # the canary alone moved


def test_ovn_nb_without_hosting_chassis_is_one_line_and_changes_nothing(
    emulator: Emulator, nb_23_03: Northbound, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = primaries_of(emulator, "gw-1")
    code = main(["drain", "gw-1", "--ovn-nb", nb_23_03.address, "--state-dir", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code != 0
    assert len(err.strip().splitlines()) == 1 and "has no Logical_Router_Port status" in err
    assert primaries_of(emulator, "gw-1") == before


def test_ovn_nb_on_an_l3_agent_cloud_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with emulated_cloud(Clocking.MANUAL, workdir=tmp_path, environ=os.environ, **FAST):
        code = main(["drain", "net-1", "--ovn-nb", "unix:/nonexistent",
                     "--state-dir", str(tmp_path)])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 2
    assert (
        err.strip()
        == "l3ha: error: --ovn-nb is for ML2/OVN gateway chassis: this cloud has L3 agents"
    )
