"""The files in contrib/: alert rules use only exported metrics; the systemd unit is valid."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from l3ha.daemon.metrics import WatchMetrics

CONTRIB = Path(__file__).parents[2] / "contrib"
METRIC = re.compile(r"\bl3ha_[a-zA-Z0-9_]+")
ALLOWED_PATHS = {
    "/opt/l3ha",
    "/opt/l3ha/bin/l3ha",
    "/opt/l3ha/bin/pip",
    "/bin/kill",
    "/etc/l3ha",
    "/var/lib/l3ha",
    "/etc/l3ha/l3ha.env",
    "/etc/l3ha/l3ha.conf",
    "/etc/systemd/system/",
}


def alert_rules() -> list[dict[str, object]]:
    document = yaml.safe_load((CONTRIB / "l3ha-alerts.yml").read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"]]


def test_every_metric_in_the_alert_rules_is_exported() -> None:
    exported = WatchMetrics().metric_names()
    used = {name for rule in alert_rules() for name in METRIC.findall(str(rule["expr"]))}
    assert used, "no l3ha metric found in the alert rules"
    assert used - exported == set()


def test_move_outcomes_in_the_alert_rules_are_real_outcomes() -> None:
    from l3ha.executor.outcome import MoveOutcome

    used = {
        outcome
        for rule in alert_rules()
        for match in re.findall(r'outcome=~?"([^"]+)"', str(rule["expr"]))
        for outcome in match.split("|")
    }
    assert used, "no outcome matcher in the alert rules"
    assert used <= {o.value for o in MoveOutcome}


def test_the_alerts_the_operators_need_are_there() -> None:
    rules = {str(rule["alert"]): rule for rule in alert_rules()}
    assert {
        "L3haGateHalted",
        "L3haUnhostedRouters",
        "L3haNoLeader",
        "L3haLastGoodCycleTooOld",
        "L3haMoveFailures",
    } <= set(rules)
    assert rules["L3haGateHalted"]["for"] == "5m"
    for name, rule in rules.items():
        assert set(rule) >= {"alert", "expr", "labels", "annotations"}, name
        assert rule["labels"]["severity"] in {"critical", "warning"}, name  # type: ignore[index]
        assert rule["annotations"]["summary"], name  # type: ignore[index]


def unit_lines() -> dict[str, str]:
    text = (CONTRIB / "l3ha-watch.service").read_text(encoding="utf-8")
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line and line[0] != "#")
    return {key.strip(): value.strip() for key, value in pairs}


def test_the_unit_is_a_notify_service_with_a_watchdog() -> None:
    unit = unit_lines()
    assert unit["Type"] == "notify"
    assert unit["WatchdogSec"] == "60"
    assert unit["Restart"] == "on-failure"
    assert unit["ExecReload"] == "/bin/kill -HUP $MAINPID"
    assert unit["ExecStart"].startswith("/opt/l3ha/bin/l3ha watch")  # docs/install.md
    assert int(unit["TimeoutStopSec"]) > 60  # above the default shutdown_timeout


def test_contrib_names_no_machine_paths() -> None:
    for path in CONTRIB.iterdir():
        text = path.read_text(encoding="utf-8")
        paths = set(re.findall(r"(?<![\w.:/])/(?:[\w.-]+/?)+", text))
        assert paths <= ALLOWED_PATHS, f"{path.name}: {sorted(paths - ALLOWED_PATHS)}"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    text = (CONTRIB / "l3ha-watch.service").read_text(encoding="utf-8")
    unit = tmp_path / "l3ha-watch.service"
    unit.write_text(text.replace("/opt/l3ha/bin/l3ha watch", "/bin/true"), encoding="utf-8")
    result = subprocess.run(
        ["systemd-analyze", "verify", str(unit)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    problems = [line for line in result.stderr.splitlines() if "l3ha-watch.service" in line]
    assert problems == []


PROMTOOL_TESTS = """
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'l3ha_leader{{instance="a"}}'
        values: '1x12'
      - series: 'l3ha_leader{{instance="b"}}'
        values: '0x12'
      - series: 'l3ha_gate_halt_reason{{instance="a",reason="control_plane_suspect"}}'
        values: '0 1x11'
      - series: 'l3ha_gate_halt_reason{{instance="b",reason="clock_jump"}}'
        values: '1x12'
      - series: 'l3ha_unhosted_routers{{instance="a"}}'
        values: '0 0 3 3 3 3 0x6'
      - series: 'l3ha_moves_total{{instance="a",reason="evacuate",outcome="moved"}}'
        values: '0+5x12'
      - series: 'l3ha_moves_total{{instance="a",reason="evacuate",outcome="failed"}}'
        values: '0 0 0 1x9'
    alert_rule_test:
      - eval_time: 5m
        alertname: L3haGateHalted
        exp_alerts: []
      - eval_time: 7m
        alertname: L3haGateHalted
        exp_alerts:
          - exp_labels: {{severity: critical, reason: control_plane_suspect}}
      - eval_time: 5m
        alertname: L3haUnhostedRouters
        exp_alerts:
          - exp_labels: {{severity: critical}}
      - eval_time: 10m
        alertname: L3haUnhostedRouters
        exp_alerts: []
      - eval_time: 5m
        alertname: L3haMoveFailures
        exp_alerts:
          - exp_labels: {{severity: warning, reason: evacuate, outcome: failed}}
      - eval_time: 5m
        alertname: L3haNoLeader
        exp_alerts: []
  - interval: 1m
    input_series:
      - series: 'l3ha_leader{{instance="a"}}'
        values: '0x5'
    alert_rule_test:
      - eval_time: 3m
        alertname: L3haNoLeader
        exp_alerts:
          - exp_labels: {{severity: critical}}
"""


@pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool not installed (Debian prometheus)"
)
def test_prometheus_accepts_the_rules_and_they_fire_when_they_should(tmp_path: Path) -> None:
    rules = CONTRIB / "l3ha-alerts.yml"
    check = subprocess.run(
        ["promtool", "check", "rules", str(rules)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    document = yaml.safe_load(rules.read_text(encoding="utf-8"))
    for group in document["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations")  # promtool compares them too; the behaviour is the rest
    bare = tmp_path / "rules.yml"
    bare.write_text(yaml.safe_dump(document), encoding="utf-8")
    spec = tmp_path / "alerts_test.yml"
    spec.write_text(PROMTOOL_TESTS.format(rules=bare), encoding="utf-8")
    result = subprocess.run(
        ["promtool", "test", "rules", str(spec)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
