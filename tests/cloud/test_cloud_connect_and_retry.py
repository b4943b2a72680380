"""Connecting (deadline, wrong auth URL, config problems) and retried reads, against the emulator.

The adapter shares the emulator's ManualClock, so its retry pauses move the
emulated time (an API outage ends while the adapter backs off) and nothing
sleeps for real. The CLI tests run ``l3ha`` as a subprocess to see exactly
what an operator sees on stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cloud.neutron_fake import closed_port

from l3ha.clock import ManualClock
from l3ha.cloud.adapter import connect
from l3ha.cloud.sdk_errors import run_with_deadline
from l3ha.emulator import Emulator
from l3ha.emulator.testing import Clocking, emulated_cloud
from l3ha.errors import AuthError, ConfigError, ConflictError, ServerError, UnreachableError

L3HA = [sys.executable, "-m", "l3ha.cli.main"]
KEYSTONE_USER = {
    "OS_USERNAME": "admin",
    "OS_PROJECT_NAME": "admin",
    "OS_USER_DOMAIN_NAME": "Default",
    "OS_PROJECT_DOMAIN_NAME": "Default",
}


@pytest.fixture
def keystone_emulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """An emulator that requires Keystone tokens; only the user's OS_* names are set."""
    with emulated_cloud(Clocking.MANUAL, agents=2, routers=4, keystone=True) as cloud:
        for key, value in KEYSTONE_USER.items():
            monkeypatch.setenv(key, value)
        yield cloud.emulator


def _cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    return {**env, **extra}


def _l3ha(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*L3HA, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


# --- connecting -------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_auth_url_answering_401_is_an_auth_error_not_a_hang(
    keystone_emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OS_AUTH_URL", keystone_emulator.url + "v2.0/")
    monkeypatch.setenv("OS_PASSWORD", "x")
    with pytest.raises(AuthError, match="not a Keystone identity URL") as info:
        connect(timeout=5)
    assert "HTTP 401" in str(info.value)


def test_wrong_password_says_the_credentials_were_rejected_once(
    keystone_emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OS_AUTH_URL", keystone_emulator.url + "identity/v3")
    monkeypatch.setenv("OS_PASSWORD", "wrong")
    with pytest.raises(AuthError, match="credentials were rejected") as info:
        connect(timeout=5)
    assert str(info.value).count("401") == 1
    assert "Request-ID" not in str(info.value)


def test_right_password_connects(
    keystone_emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OS_AUTH_URL", keystone_emulator.url + "identity/v3")
    monkeypatch.setenv("OS_PASSWORD", keystone_emulator.cfg.password)
    assert len(connect(timeout=5).list_routers()) == 4


def test_deadline_abandons_a_hung_call_and_passes_errors_on() -> None:
    release = threading.Event()
    try:
        assert run_with_deadline(release.wait, 0.05) is None
    finally:
        release.set()
    assert run_with_deadline(lambda: None, 5) is True
    with pytest.raises(ServerError, match="boom"):
        run_with_deadline(lambda: (_ for _ in ()).throw(ServerError("boom")), 5)


def test_unknown_cloud_from_os_cloud_is_named_without_a_wrong_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "clouds.yaml"
    config.write_text("clouds:\n  lab: {auth_type: none, endpoint: 'http://127.0.0.1:9/'}\n")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(config))
    monkeypatch.setenv("OS_CLOUD", "nosuch")
    with pytest.raises(ConfigError) as info:
        connect()
    text = str(info.value)
    assert "'nosuch' (from OS_CLOUD)" in text and "lab" in text and str(config) in text
    assert "--os-cloud" not in text


def test_malformed_clouds_yaml_is_reported_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "clouds.yaml"
    config.write_text("clouds:\n  x: [\n", encoding="utf-8")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(config))
    monkeypatch.setenv("OS_CLOUD", "x")
    with pytest.raises(ConfigError, match=r"is not valid YAML: .*line 3") as info:
        connect()
    assert str(config) in str(info.value) and "\n" not in str(info.value)


# --- what the operator sees -----------------------------------------------------------


def test_unreachable_keystone_prints_exactly_one_line(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/identity/v3"
    env = _cli_env(OS_AUTH_URL=url, OS_PASSWORD="x", **KEYSTONE_USER)
    done = _l3ha(["agent", "list", "--api-timeout", "2"], env)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("l3ha: error: reach Keystone at " + url)
    assert "connection refused" in lines[0] and "temporary" in lines[0]


def test_malformed_clouds_yaml_prints_exactly_one_line(tmp_path: Path) -> None:
    config = tmp_path / "clouds.yaml"
    config.write_text("clouds:\n  x: [\n", encoding="utf-8")
    done = _l3ha(["agent", "list"], _cli_env(OS_CLOUD="x", OS_CLIENT_CONFIG_FILE=str(config)))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not valid YAML" in lines[0], done.stderr


# --- retried reads ---------------------------------------------------------------------


@pytest.fixture
def shared_clock_cloud(emulator: Emulator) -> Iterator[tuple[Emulator, ManualClock]]:
    clock = emulator.clock
    assert isinstance(clock, ManualClock)
    yield emulator, clock


def test_reads_are_retried_through_a_short_outage(
    shared_clock_cloud: tuple[Emulator, ManualClock],
) -> None:
    emulator, clock = shared_clock_cloud
    cloud = connect("l3ha-emulator", timeout=10, clock=clock)
    emulator.faults.api_outage(0.5)
    started = clock.monotonic()
    assert len(cloud.list_routers()) == 20
    assert 0.5 <= clock.monotonic() - started <= 1.0  # backed off 0.1 + 0.2 + 0.4 s


def test_reads_that_keep_failing_say_they_were_temporary_and_retried(
    shared_clock_cloud: tuple[Emulator, ManualClock],
) -> None:
    emulator, clock = shared_clock_cloud
    cloud = connect("l3ha-emulator", timeout=10, clock=clock)
    emulator.faults.api_errors(1.0, 503)
    with pytest.raises(ServerError) as info:
        cloud.list_agents()
    assert info.value.retryable
    assert str(info.value).endswith(
        "HTTP 503 (HTTPServiceUnavailable: Injected fault.) (temporary; retried 4 times)"
    )


def test_writes_are_retried_by_the_same_policy_through_a_short_outage(
    shared_clock_cloud: tuple[Emulator, ManualClock],
) -> None:
    """Every call l3ha makes is idempotent (PUT of a field, the scheduler's POST and DELETE),
    so the adapter's one retry policy covers writes too and the executor retries nothing."""
    emulator, clock = shared_clock_cloud
    cloud = connect("l3ha-emulator", timeout=10, clock=clock)
    agent = cloud.read_snapshot().agents[0]
    emulator.faults.api_outage(0.25)
    cloud.set_admin_state(agent.id, False)
    assert cloud.get_agent(agent.id).admin_state_up is False


def test_a_refused_write_is_sent_once(shared_clock_cloud: tuple[Emulator, ManualClock]) -> None:
    _emulator, clock = shared_clock_cloud
    cloud = connect("l3ha-emulator", timeout=10, clock=clock)
    snap = cloud.read_snapshot()
    binding = next(b for b in snap.bindings if not snap.routers_by_id[b.router_id].ha)
    other = next(a for a in snap.agents if a.id != binding.agent_id)
    started = clock.monotonic()
    with pytest.raises(ConflictError) as info:  # a legacy router bound elsewhere: 409
        cloud.bind(binding.router_id, other.id)
    assert "retried" not in str(info.value)
    assert clock.monotonic() == started


def test_connect_is_retried_through_a_short_outage(
    shared_clock_cloud: tuple[Emulator, ManualClock],
) -> None:
    emulator, clock = shared_clock_cloud
    emulator.faults.api_outage(0.25)
    cloud = connect("l3ha-emulator", timeout=10, clock=clock)
    assert len(cloud.list_agents()) == 4


def test_unreachable_neutron_is_retried_then_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OS_AUTH_TYPE", "none")
    monkeypatch.setenv("OS_ENDPOINT", f"http://127.0.0.1:{closed_port()}/")
    with pytest.raises(UnreachableError, match=r"temporary; retried 4 times\)$"):
        connect(clock=ManualClock())
