"""``l3ha probe`` and ``l3ha probe mark`` as an operator runs them: bad input, gate, report
files, markers from another process, Ctrl-C still writing the report."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from l3ha.cli.main import main

from .servers import TcpListener


def l3ha(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "l3ha.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tcp", "nowhere"], "tcp target 'nowhere' is not HOST:PORT"),
        (["--tcp", "127.0.0.1:1", "--interval", "0"], "argument --interval: '0' must be greater"),
        (["--tcp", "127.0.0.1:1", "--interval", "-1"], "must be greater than 0"),
        (["--targets-file", "/nonexistent/targets"], "targets file /nonexistent/targets does"),
        ([], "no targets"),
        (["--http-ok", "abc", "--tcp", "127.0.0.1:1"], "is not a status range"),
        (["--icmp", "a.b"], "icmp target 'a.b' is not an IP address"),
        (["--tcp", "127.0.0.1:1", "-c", "nosuch"], "unknown column nosuch; columns are:"),
        (["mark"], "l3ha probe mark: error: the following arguments are required: TEXT"),
        (["--dns", "x.org@[::1]:99999"], "port 99999 is out of range"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        code = main(["probe", *args])
        raise SystemExit(code)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_gate_fails_on_a_refused_port_and_writes_the_report(tmp_path: Path) -> None:
    listener = TcpListener().start()
    closed = TcpListener().start()
    closed.stop()
    out = tmp_path / "out"
    proc = l3ha(
        "probe",
        "--dns",
        f"name=x.org@{closed.address}",
        "--tcp",
        f"up={listener.address}",
        "--tcp",
        f"down={closed.address}",
        "--interval",
        "0.05",
        "--duration",
        "0.5",
        "--output",
        str(out),
        "--max-outage",
        "0.2",
        "--name",
        "gate test",
    )
    listener.stop()
    assert proc.returncode == 1, proc.stderr
    assert "gate failed: tcp down: longest outage" in proc.stderr
    assert "tcp down: DOWN (connection refused)" in proc.stdout
    assert "TARGET" in proc.stdout and "tcp up" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    blocks = {t["target"]: t for t in summary["targets"]}
    assert list(blocks) == ["dns name", "tcp up", "tcp down"]  # command-line order
    assert blocks["tcp up"]["loss_pct"] == 0 and blocks["tcp up"]["samples"] == 10
    assert blocks["tcp down"]["loss_pct"] == 100 and blocks["tcp down"]["open_outage"]
    assert not summary["gate"]["passed"]
    lines = (out / "samples.jsonl").read_text().splitlines()
    assert len(lines) == 30 and json.loads(lines[0])["target"] in blocks
    for name in ("events.jsonl", "timeline.txt", "report.png", "report.html"):
        assert (out / name).stat().st_size > 0 or name == "events.jsonl"


def test_json_summary_and_passing_gate(tmp_path: Path) -> None:
    listener = TcpListener().start()
    proc = l3ha(
        "probe",
        "--tcp",
        listener.address,
        "--interval",
        "0.05",
        "--duration",
        "0.3",
        "--max-loss",
        "0",
        "-f",
        "json",
    )
    listener.stop()
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["gate"]["passed"] and summary["targets"][0]["samples"] == 6


def test_mark_from_another_shell_and_ctrl_c_still_reports(tmp_path: Path) -> None:
    listener = TcpListener().start()
    out = tmp_path / "o"
    runner = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "l3ha.cli.main",
            "probe",
            "--tcp",
            listener.address,
            "--interval",
            "0.05",
            "--output",
            str(out),
            "--socket",
            str(tmp_path / "m.sock"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 15
        while not (out / "probe.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        marked = l3ha("probe", "mark", "upgrade starts", "--output", str(out))
        assert marked.returncode == 0, marked.stderr
        assert marked.stdout.startswith("marked at +")
        assert l3ha("probe", "mark", "second", "--socket", str(tmp_path / "m.sock")).returncode == 0
        runner.send_signal(signal.SIGINT)
        stdout, stderr = runner.communicate(timeout=20)
    finally:
        runner.kill()
        listener.stop()
    assert runner.returncode == 0, stderr
    assert "mark: upgrade starts" in stdout
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert [(e["source"], e["text"]) for e in events] == [
        ("mark", "upgrade starts"),
        ("mark", "second"),
    ]
    assert json.loads((out / "summary.json").read_text())["targets"][0]["samples"] > 0
    assert not (out / "probe.sock").exists()


def test_mark_without_a_running_probe_says_so(tmp_path: Path) -> None:
    proc = l3ha("probe", "mark", "hello", "--socket", str(tmp_path / "none.sock"))
    assert proc.returncode == 1
    assert proc.stderr.startswith("l3ha: error: no running probe at ")
    assert proc.stderr.count("\n") == 1
