"""Helpers of fault scenarios on a running stack: heal it, watch it, fail over serially. I/O: HTTP.

- ``heal``: every node up, every router hosted (optionally back where a given
  placement had it), every VM answering: the same starting point for each run.
- ``Watch``: ``l3ha watch`` on the stack as a process (with extra options, optionally
  inside a namespace such as the client's, where routers' gateways answer), stopped with
  SIGTERM; its log read back (``resumed``: acting again, every agent judged alive).
- ``SerialFailover``: the one-router-at-a-time way of older HA tools, as a
  baseline: when Neutron says an agent is dead (``alive: false``) and others
  are alive, move its routers one by one (unbind, bind to the least loaded live
  agent, wait until the router's ports are ACTIVE on the new host).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from l3ha.lab.stack.stack import Stack
from l3ha.lab.stack.topology import (
    NeutronHttp,
    ports_active_on,
    router_hosts,
    wait_for_agents,
    wait_for_routers,
)

PORT_TIMEOUT_S = 60.0


def heal(stack: Stack, placement: dict[str, list[str]] | None = None) -> None:
    """Every node up, every router on one live agent (its host in ``placement``), all answered."""
    for host in stack.spec.hosts:
        if f"{host}/l3" not in stack.state.pids:
            stack.revive_node(host)
    stack.stop_neutron_failover()
    wait_for_agents(stack.api, stack.spec, 180)
    routers: dict[str, str] = stack.state.data["routers"]
    agents = {str(a["host"]): str(a["id"]) for a in stack.api.agents("L3 agent")}
    hosts = router_hosts(stack.api, routers)
    for index, name in enumerate(sorted(routers)):
        wanted = (placement or {}).get(name) or hosts[name] or [sorted(agents)[index % len(agents)]]
        if hosts[name] != wanted:
            for host in hosts[name]:
                stack.api.call("DELETE", f"agents/{agents[host]}/l3-routers/{routers[name]}")
            stack.api.post(f"agents/{agents[wanted[0]]}/l3-routers", {"router_id": routers[name]})
    wait_for_routers(stack.spec, 180)


class Watch:
    """``l3ha watch`` on the stack (through ``clouds_file`` if given), logging to a file.

    ``options`` come after the stack's own timing (a later flag wins); with ``namespace``
    the watch runs inside that network namespace (its API address must be reachable
    there: see ``l3ha.lab.stack.relay``).
    """

    def __init__(
        self,
        stack: Stack,
        directory: Path,
        clouds_file: Path | None = None,
        options: Sequence[str] = (),
        namespace: str | None = None,
    ) -> None:
        argv, env = stack.watch_command(directory / "state", *options)
        if namespace is not None:
            argv = ["ip", "netns", "exec", namespace, *argv]
        if clouds_file is not None:
            env["OS_CLIENT_CONFIG_FILE"] = str(clouds_file)
        self.log = directory / "watch.log"
        directory.mkdir(parents=True, exist_ok=True)
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env}
            )

    def resumed(self, hosts: Iterable[str]) -> bool:
        return watch_resumed(self.log.read_text(), hosts)

    def stop(self) -> str:
        """SIGTERM (finishes moves in flight), SIGKILL after 30 s; the log."""
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        return self.log.read_text()


def watch_resumed(log: str, hosts: Iterable[str]) -> bool:
    """Whether a watch ``log`` shows it acting again (its last halt followed by ``resumed``,
    or no halt) with its latest verdict on each of ``hosts`` ``alive``."""
    verdicts: dict[str, str] = {}
    halted = False
    for line in log.splitlines():
        event, fields = log_line(line)
        if event == "verdict":
            verdicts[fields.get("agent", "")] = fields.get("verdict", "")
        elif event in ("halt", "resumed"):
            halted = event == "halt"
    return not halted and all(verdicts.get(host) == "alive" for host in hosts)


def log_line(line: str) -> tuple[str, dict[str, str]]:
    """A watch log line (``TIME LEVEL EVENT key=value ...``): its event and fields."""
    words = line.split(maxsplit=3)
    if len(words) < 3:
        return "", {}
    fields = re.findall(r'(\w+)=("[^"]*"|\S+)', words[3] if len(words) > 3 else "")
    return words[2], {key: value.strip('"') for key, value in fields}


class SerialFailover:
    """The serial baseline, in a thread, through ``api`` (e.g. a counting proxy)."""

    def __init__(self, api: NeutronHttp, routers: dict[str, str]) -> None:
        self.api, self.routers = api, routers
        self.moved: list[str] = []
        self.move_seconds: list[float] = []  # each move: unbind until ports ACTIVE
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> SerialFailover:
        self._thread.start()
        return self

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(PORT_TIMEOUT_S + 30)
        return self.moved

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            agents = self.api.agents("L3 agent")
            live = [a for a in agents if a["alive"] and a["admin_state_up"]]
            for dead in (a for a in agents if not a["alive"]):
                if live:
                    self._evacuate(dead, live)

    def _evacuate(self, dead: dict[str, Any], live: list[dict[str, Any]]) -> None:
        hosted = self.api.get(f"agents/{dead['id']}/l3-routers")["routers"]
        for router in hosted:
            if self._stop.is_set():
                return
            load = {a["id"]: len(self.api.get(f"agents/{a['id']}/l3-routers")["routers"])
                    for a in live}  # fmt: skip
            target = min(live, key=lambda a: (load[a["id"]], a["host"]))
            began = time.monotonic()
            self.api.call("DELETE", f"agents/{dead['id']}/l3-routers/{router['id']}")
            self.api.post(f"agents/{target['id']}/l3-routers", {"router_id": router["id"]})
            self.moved.append(str(router["name"]))
            deadline = time.monotonic() + PORT_TIMEOUT_S
            while time.monotonic() < deadline and not ports_active_on(
                self.api, str(router["id"]), str(target["host"])
            ):
                time.sleep(0.5)
            self.move_seconds.append(time.monotonic() - began)
