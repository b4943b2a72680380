"""The emulator process: HTTP server, simulation thread, clouds.yaml; faults via ``injector``.

I/O: sockets, threads, files.

``Emulator(cfg).start()`` serves the Neutron API (``api``), the control API
under ``/_emulator/`` and, with ``cfg.keystone``, a minimal Keystone under
``/identity``. With no clock given it uses the system clock and a background
thread that runs the simulation every ~25 ms; with a ManualClock the
simulation moves only in ``advance``.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from l3ha.clock import Clock, ManualClock, SystemClock
from l3ha.emulator.api import NeutronApi
from l3ha.emulator.api_ovn import OvnApi
from l3ha.emulator.build import build_world
from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.faults import FaultError, Step, parse_fault
from l3ha.emulator.http_types import Request, Response, not_found_path
from l3ha.emulator.injector import FaultInjector
from l3ha.emulator.keystone import PREFIX as KEYSTONE_PREFIX
from l3ha.emulator.keystone import UNAUTHORIZED, Keystone
from l3ha.emulator.listeners import Listeners
from l3ha.emulator.query import ApiError
from l3ha.emulator.records import OWNER_GATEWAY, RouterRec
from l3ha.emulator.render import ha_view, iso_time
from l3ha.emulator.sim import Simulation
from l3ha.emulator.sim_ovn import OvnSimulation
from l3ha.emulator.traffic import CONTENT_TYPE, TrafficMeter

LOG = logging.getLogger(__name__)
CLOUD_NAME = "l3ha-emulator"
TICK_SECONDS = 0.025


class Emulator:
    """A running emulated Neutron (see the module docstring)."""

    def __init__(self, cfg: EmulatorConfig | None = None, clock: Clock | None = None) -> None:
        self.cfg = cfg or EmulatorConfig()
        self.cfg.validate()
        self.clock: Clock = clock or SystemClock()
        self._manual = clock is not None and hasattr(clock, "advance")
        built = build_world(self.cfg, self.clock.wall())
        self.world = built.world
        self.public = built.public
        self.sim = Simulation(self.world, self.cfg, self.clock, built.ha_net)
        self.api = NeutronApi(self.world, self.sim, self.cfg, self.clock, self.public)
        self.listeners = Listeners(self.cfg.listener_prefix[0], self.cfg.dataplane_port)
        for number, router in enumerate(list(self.world.routers.values())[
                :self.cfg.dataplane_listeners], start=1):
            self.listeners.assign(router.id, number + (self.cfg.listener_prefix[1] << 8))
            gateway = next((p for p in router.ports if p.owner == OWNER_GATEWAY), None)
            if gateway is not None:  # the API shows the listener as the gateway address
                gateway.ip = self.listeners.ip(router.id) or gateway.ip
        self.traffic = TrafficMeter(self.world, self.sim, self.cfg, self.clock)
        self.sim.on_reachability = self._reachability_changed
        self.keystone = (Keystone(self.cfg.username, self.cfg.password, self.cfg.project_name)
                         if self.cfg.keystone else None)
        self.faults = FaultInjector(self.world, self.sim, self.clock, self.cfg.seed)
        self.ovn: OvnSimulation | None = None
        if self.cfg.ovn:
            self.ovn = OvnSimulation(self.sim, self.cfg)
            self.api.serve_ovn(OvnApi(self.api, self.ovn))
            self.faults.ovn = self.ovn
        self._server: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._started_mono = 0.0

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> Emulator:
        server = ThreadingHTTPServer((self.cfg.host, self.cfg.port), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self.listeners.start()
        with self.world.lock:
            self._started_mono = self.clock.monotonic()
            self.sim.start()
            if self.ovn is not None:
                self.ovn.start()
        self._spawn(lambda: server.serve_forever(poll_interval=0.05), "emulator-http")
        if not self._manual:
            self._spawn(self._simulate, "emulator-sim")
        return self

    def _spawn(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _simulate(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            with self.world.lock:
                self.sim.run_due()

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self.listeners.stop()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the emulator is not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.cfg.host}:{self.port}/"

    def advance(self, seconds: float) -> None:
        """ManualClock only: move time forward, running the simulation on the way."""
        clock = self.clock
        if not isinstance(clock, ManualClock):
            raise RuntimeError("advance() needs the emulator to run on a ManualClock")
        with self.world.lock:
            self.sim.advance(seconds, clock.advance)

    # --- clouds.yaml ----------------------------------------------------------------------

    def clouds_entry(self) -> dict[str, Any]:
        if self.cfg.keystone:
            return {"auth_type": "password", "identity_api_version": 3,
                    "auth": {"auth_url": f"{self.url.rstrip('/')}{KEYSTONE_PREFIX}/v3",
                             "username": self.cfg.username, "password": self.cfg.password,
                             "project_name": self.cfg.project_name,
                             "user_domain_name": "Default", "project_domain_name": "Default"},
                    "region_name": "RegionOne"}
        return {"auth_type": "none", "network_endpoint_override": self.url}

    def write_clouds_yaml(self, path: str | Path, name: str = CLOUD_NAME) -> Path:
        """Write (or merge into) a clouds.yaml holding entry ``name`` for this emulator."""
        target = Path(path)
        data: dict[str, Any] = {}
        if target.exists():
            loaded = yaml.safe_load(target.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                data = loaded
        clouds = data.setdefault("clouds", {})
        if not isinstance(clouds, dict):
            clouds = data["clouds"] = {}
        clouds[name] = self.clouds_entry()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return target

    # --- data plane ---------------------------------------------------------------------------

    def _reachability_changed(self, router: RouterRec) -> None:
        alive = router.reachable and router.id in self.world.routers
        self.listeners.set_open(router.id, alive)
        self.traffic.settle(router)

    def dataplane(self) -> dict[str, dict[str, Any]]:
        with self.world.lock:
            return {r.id: {"reachable": r.reachable, "since": iso_time(r.since),
                           "downtime_s": round(self.sim.downtime(r), 3),
                           "address": self.listeners.address(r.id)}
                    for r in self.world.routers.values()}

    def agent_ids_by_host(self) -> dict[str, str]:
        with self.world.lock:
            return {host: agent.id for host, agent in self.world.agents_by_host.items()}

    def state(self) -> dict[str, Any]:
        """A summary for ``GET /_emulator/state``."""
        with self.world.lock:
            now = self.clock.wall()
            agents = [{"host": a.host, "id": a.id, "alive": self.sim.is_alive(a, now),
                       "running": a.running, "stopped": a.stopped, "dataplane_ok": a.dataplane_ok,
                       "admin_state_up": a.admin_state_up, "routers": len(a.routers),
                       "weight": a.weight, "overloaded": a.weight > self.cfg.agent_capacity,
                       "queued": len(a.work.queue) + len(a.work.sync_queue),
                       "processing": len(a.work.inflight), "slow_factor": a.slow_factor,
                       "connected": self.sim.can_report(a), "stale_routers": len(a.stale)}
                      for a in self.world.l3_agents()]
            routers = list(self.world.routers.values())
            return {
                "time": iso_time(now),
                "agents": agents,
                "routers": len(routers),
                "unreachable": sum(1 for r in routers if not r.reachable),
                "unhosted": sum(1 for r in routers if not r.bindings),
                "duplicated": sum(1 for r in routers
                                  if len(self.sim.forwarding_copies(r)) > 1 and not r.ha),
                "broker_outage": self.clock.monotonic() < self.sim.lifecycle.broker_until,
                "api": {"error_rate": self.faults.error_rate,
                        "error_status": self.faults.error_status,
                        "latency_ms": self.faults.latency_ms,
                        "outage": self.faults.api_outage_now()},
                "auto_failover_moves": self.sim.failover.moves,
                "auto_failover": self.sim.failover.counters(),
                "auto_scheduled": self.sim.scheduler.bound,
                "dhcp": self.sim.dhcp.summary(),
                "dhcp_agents": self.sim.dhcp.agent_rows(now),
                "dhcp_auto_failover": self.sim.dhcp_failover.counters(),
                "dataplane_port": self.listeners.port,
                "ovn": self.ovn.summary() if self.ovn is not None else None,
            }

    # --- faults ---------------------------------------------------------------------------------

    def schedule_scenario(self, steps: list[Step]) -> None:
        """Apply each step at its offset from the emulator's start (faults naming
        unknown hosts are checked now)."""
        self.faults.schedule(steps, self._started_mono)

    # --- HTTP ------------------------------------------------------------------------------------

    def handle(self, req: Request) -> Response:
        if req.path.startswith("/_emulator/"):
            return self._control(req)
        if self.keystone is not None and req.path.startswith(KEYSTONE_PREFIX):
            return self.keystone.handle(req, self.clock.wall())
        injected = self.faults.injected_response()
        if injected is not None:
            return Response(*injected)
        if (self.keystone is not None and req.path != "/"
                and not self.keystone.valid(req.headers.get("x-auth-token"))):
            return Response(401, UNAUTHORIZED)
        return self.api.handle(req)

    def _control(self, req: Request) -> Response:
        path = req.path.rstrip("/")
        if req.method == "GET" and path == "/_emulator/dataplane":
            return Response(200, self.dataplane())
        if req.method == "GET" and path == "/_emulator/state":
            return Response(200, self.state())
        if req.method == "GET" and path == "/_emulator/ha":
            with self.world.lock:
                return Response(200, ha_view(self.world, self.sim, self.clock.wall()))
        if req.method == "GET" and path == "/_emulator/metrics":
            with self.world.lock:
                text = self.traffic.render()
            return Response(200, text.encode(), headers={"Content-Type": CONTENT_TYPE})
        if req.method == "POST" and path == "/_emulator/faults":
            try:
                if not isinstance(req.body, dict):
                    raise FaultError("the body must be a JSON object {\"fault\": KIND, ...}")
                return Response(200, self.faults.apply(parse_fault(req.body)))
            except FaultError as err:
                kind = "NotFound" if err.status == 404 else "BadRequest"
                return Response(err.status, ApiError(err.status, kind, err.message).body())
        return Response(404, not_found_path().body())


def _handler_for(emulator: Emulator) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        emu = emulator

    return Handler


class _Handler(BaseHTTPRequestHandler):
    """Parses HTTP into ``Request`` and writes ``Response`` as JSON."""

    emu: Emulator
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms stalls
    server_version = "l3ha-emulator"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def handle(self) -> None:
        """Serve the connection; a client that hung up early is no error of ours."""
        try:
            super().handle()
        except ConnectionError as exc:  # BrokenPipe, ConnectionReset, ConnectionAborted
            LOG.debug("client %s went away: %s", self.client_address[0], exc)
            self.close_connection = True

    def _serve(self) -> None:
        split = urllib.parse.urlsplit(self.path)
        params = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        host = self.headers.get("Host") or f"{self.emu.cfg.host}:{self.emu.port}"
        try:
            body = json.loads(raw) if raw.strip() else None
        except ValueError:
            self._send(Response(400, ApiError(400, "HTTPBadRequest",
                                              "Malformed request body").body()))
            return
        req = Request(self.command, split.path or "/", params, body, headers, f"http://{host}")
        try:
            resp = self.emu.handle(req)
        except Exception as exc:  # any bug must still answer, as Neutron's 500 does
            LOG.exception("emulator failed on %s %s", self.command, self.path)
            resp = Response(500, ApiError(500, "HTTPInternalServerError",
                                          f"Request Failed: internal server error while "
                                          f"processing your request. ({type(exc).__name__})")
                            .body())
        self._send(resp)

    def _send(self, resp: Response) -> None:
        raw = isinstance(resp.body, bytes)  # a text body (the metrics), sent as it is
        data = b"" if not resp.has_body else resp.body if raw else json.dumps(resp.body).encode()
        self.send_response(resp.status)
        for key, value in resp.headers.items():
            self.send_header(key, value)
        if resp.has_body and not raw:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Openstack-Request-Id", "req-emulator")
        self.end_headers()
        if data and self.command != "HEAD":
            self.wfile.write(data)

    do_GET = _serve  # noqa: N815 - BaseHTTPRequestHandler's names
    do_POST = _serve  # noqa: N815 - BaseHTTPRequestHandler's names
    do_PUT = _serve  # noqa: N815 - BaseHTTPRequestHandler's names
    do_DELETE = _serve  # noqa: N815 - BaseHTTPRequestHandler's names
    do_HEAD = _serve  # noqa: N815 - BaseHTTPRequestHandler's names
    do_PATCH = _serve  # noqa: N815 - BaseHTTPRequestHandler's names
