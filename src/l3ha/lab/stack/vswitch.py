"""One Open vSwitch instance in a namespace: ovsdb-server + ovs-vswitchd. I/O: spawns, ovs-vsctl.

Without the kernel module, Open vSwitch runs with the userspace ``netdev``
datapath; each vswitchd makes its own ``ovs-netdev`` tap, so every namespace
that switches gets an instance of its own, with private run/log/db files.
"""

from __future__ import annotations

from pathlib import Path

from l3ha.lab.stack.processes import StateFile, run, spawn, wait_for

OVS_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
ROLES = ("vswitchd", "ovsdb")


class Ovs:
    """ovsdb-server and ovs-vswitchd of ``namespace``, files in ``directory``, roles ROLE/..."""

    def __init__(self, namespace: str, directory: Path, state: StateFile, role: str) -> None:
        self.namespace, self.dir, self.state, self.role = namespace, directory, state, role
        self.socket = directory / "db.sock"
        self.env = {
            "OVS_RUNDIR": str(directory),
            "OVS_LOGDIR": str(directory),
            "OVS_DBDIR": str(directory),
        }

    def vsctl(self, *args: str) -> str:
        return run(["ovs-vsctl", f"--db=unix:{self.socket}", *args], env=self.env)

    def _spawn(self, name: str, argv: list[str]) -> None:
        self.state.record(
            f"{self.role}/{name}",
            spawn(name, argv, self.dir, namespace=self.namespace, env=self.env),
        )

    def start(self) -> None:
        """Both daemons, with a database created on first start."""
        db = self.dir / "conf.db"
        self.dir.mkdir(parents=True, exist_ok=True)
        if not db.exists():
            run(["ovsdb-tool", "create", str(db), str(OVS_SCHEMA)])
        for stale in (self.socket, self.dir / "ovsdb-server.ctl", self.dir / "ovs-vswitchd.ctl"):
            stale.unlink(missing_ok=True)  # left by a killed instance
        self._spawn("ovsdb", [
            "ovsdb-server", str(db), f"--remote=punix:{self.socket}",
            f"--unixctl={self.dir / 'ovsdb-server.ctl'}", "-vconsole:off",
            f"--log-file={self.dir / 'ovsdb-server.log'}",
        ])  # fmt: skip
        wait_for(f"ovsdb-server of {self.namespace}", self.socket.exists, 20)
        self.vsctl("--no-wait", "init")
        self.start_vswitchd()

    def restart_vswitchd(self) -> None:
        """Stop ovs-vswitchd (SIGTERM) and start it again, as a package upgrade would."""
        self.state.stop(f"{self.role}/vswitchd")
        (self.dir / "ovs-vswitchd.ctl").unlink(missing_ok=True)
        self.start_vswitchd()

    def start_vswitchd(self) -> None:
        self._spawn("vswitchd", [
            "ovs-vswitchd", f"unix:{self.socket}", f"--unixctl={self.dir / 'ovs-vswitchd.ctl'}",
            "-vconsole:off", f"--log-file={self.dir / 'ovs-vswitchd.log'}",
        ])  # fmt: skip

    def add_bridge(self, bridge: str, *ports: str) -> None:
        """A netdev bridge with ``ports`` (existing devices) on it."""
        args = ["--may-exist", "add-br", bridge, "--", "set", "bridge", bridge]
        args.append("datapath_type=netdev")
        for port in ports:
            args += ["--", "--may-exist", "add-port", bridge, port]
        self.vsctl(*args)
