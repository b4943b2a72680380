"""``l3ha probe`` and ``l3ha probe mark`` as an operator runs them: bad input, gate, report
files, markers from another process, Ctrl-C still writing the report."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from l3ha.cli.main import main

from .servers import HungHttpServer, TcpListener


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
        (["--tcp", "127.0.0.1:1", "--interval", "0"], "argument --interval: must be positive"),
        (["--tcp", "127.0.0.1:1", "--interval", "-1"], "must be positive: '-1'"),
        (["--tcp", "127.0.0.1:1", "--interval", "nan"], "--interval: must be a finite number"),
        (["--tcp", "127.0.0.1:1", "--interval", "1e-9"], "--interval: must be at least 0.001"),
        (["--tcp", "127.0.0.1:1", "--timeout", "inf"], "--timeout: must be a finite number"),
        (["--tcp", "127.0.0.1:1", "--duration", "inf"], "--duration: must be a finite number"),
        (["--tcp", "127.0.0.1:1", "--events-interval", "inf"], "--events-interval: must be a fin"),
        (["--tcp", "127.0.0.1:1", "--max-loss", "200"], "--max-loss: must be a percentage from"),
        (["--tcp", "127.0.0.1:1", "--max-loss", "-1"], "--max-loss: must be a percentage from"),
        (["--tcp", "127.0.0.1:1", "--max-loss", "nan"], "--max-loss: must be a finite number"),
        (["--tcp", "127.0.0.1:1", "--max-outage", "inf"], "--max-outage: must be a finite num"),
        (["--tcp", "127.0.0.1:1", "--max-outage", "-1"], "--max-outage: must not be negative"),
        (
            ["--tcp", "127.0.0.1:1", "--tcp", "127.0.0.2:1", "--duration", "0.3"],
            "duration 0.3 s is shorter than the interval 1 s, so some targets would never be",
        ),
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


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("file", "exists and is not a directory"),
        ("/proc/self/l3ha-out", "is not a writable directory: No such file or directory"),
        ("/sys/kernel", "is not a writable directory: Permission denied"),
    ],
)
def test_an_unusable_output_is_one_line_bad_input_before_sampling(
    output: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = tmp_path / "file"
    existing.write_text("keep\n")
    target = existing if output == "file" else Path(output)
    started = time.monotonic()
    code = main(["probe", "--tcp", "127.0.0.1:1", "--duration", "5", "--output", str(target)])
    assert code == 2
    assert time.monotonic() - started < 4  # refused before sampling
    err = capsys.readouterr().err
    assert err == f"l3ha: error: --output {target} {message}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["file"] and existing.read_text() == "keep\n"


def test_a_targets_file_that_is_not_utf8_is_one_line_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    targets = tmp_path / "targets"
    targets.write_bytes(b"\xff\xfe\n")
    assert main(["probe", "--targets-file", str(targets)]) == 2
    err = capsys.readouterr().err
    assert err == f"l3ha: error: targets file {targets} is not UTF-8 text (byte 0xff at offset 0)\n"


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
    assert "| Target " in proc.stdout and "tcp up" in proc.stdout
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


class Running:
    """A probe in a subprocess, with --output; its stderr read line by line as it comes.

    Its runtime directory is private, so that no other probe's well-known marker socket
    makes it warn.
    """

    def __init__(self, out: Path, *args: str) -> None:
        self.out = out
        runtime = out.parent / "run"
        runtime.mkdir()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "l3ha.cli.main", "probe", "--output", str(out), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        assert self.proc.stderr is not None
        threading.Thread(target=self._read, args=(self.proc.stderr,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line)

    def wait_sampling(self, seconds: float) -> None:
        """Until the probe has started (its marker socket exists), then ``seconds`` more."""
        deadline = time.monotonic() + 15
        while not (self.out / "probe.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(seconds)

    def interrupt(self) -> str:
        """Send SIGINT; return the line it prints on stderr."""
        self.proc.send_signal(signal.SIGINT)
        line = self.lines.get(timeout=10)
        self.stderr.append(line)
        return line

    def finish(self, timeout: float) -> tuple[int, str]:
        """Exit code and the rest of stderr."""
        self.proc.wait(timeout)
        time.sleep(0.1)
        while not self.lines.empty():
            self.stderr.append(self.lines.get())
        return self.proc.returncode, "".join(self.stderr)

    def summary(self) -> dict[str, Any]:
        document = json.loads((self.out / "summary.json").read_text())
        return {"": document, **{t["target"]: t for t in document["targets"]}}


def test_first_ctrl_c_says_it_waits_for_samples_in_flight_then_reports(tmp_path: Path) -> None:
    listener = TcpListener().start()
    with HungHttpServer() as hung:
        run = Running(
            tmp_path / "o", "--http", f"hung={hung.url}", "--tcp", f"up={listener.address}",
            "--interval", "0.1", "--timeout", "2",
        )  # fmt: skip
        try:
            run.wait_sampling(0.5)
            stopped = time.monotonic()
            line = run.interrupt()
            code, stderr = run.finish(timeout=20)
            waited = time.monotonic() - stopped
        finally:
            run.proc.kill()
            listener.stop()
    assert line.startswith("l3ha: stopping: waiting up to 2.2 s for "), line
    assert line.endswith(" samples in flight; Ctrl-C again to stop now\n")
    assert code == 0, stderr
    assert stderr.count("\n") == 1, stderr
    assert 1.5 < waited < 12, stderr  # the hung samples ran into their 2 s timeout
    summary = run.summary()
    assert summary["http hung"]["samples"] == summary["http hung"]["failed"] > 0
    assert summary["tcp up"]["samples"] > 0 and summary["tcp up"]["failed"] == 0
    assert summary[""]["scheduler"]["samples_dropped"] == 0


def test_second_ctrl_c_drops_samples_in_flight_and_still_reports(tmp_path: Path) -> None:
    listener = TcpListener().start()
    with HungHttpServer() as hung:
        run = Running(
            tmp_path / "o", "--http", f"hung={hung.url}", "--tcp", f"up={listener.address}",
            "--interval", "0.1", "--timeout", "30", "--max-outage", "100",
        )  # fmt: skip
        try:
            run.wait_sampling(0.5)
            assert "waiting up to 30.2 s" in run.interrupt()
            stopped = time.monotonic()
            second = run.interrupt()
            code, stderr = run.finish(timeout=20)
            waited = time.monotonic() - stopped
        finally:
            run.proc.kill()
            listener.stop()
    assert second == "l3ha: stopping now: samples in flight are dropped; writing the report\n"
    assert waited < 10  # not the 30 s timeout
    assert code == 1, stderr  # the gate fails: the hung target was never measured
    assert "l3ha: gate failed: http hung: no sample taken, so it was not measured" in stderr
    assert "Traceback" not in stderr
    summary = run.summary()
    assert summary["http hung"]["samples"] == 0 and summary["http hung"]["failed"] == 0
    assert summary["http hung"]["loss_pct"] is None
    assert summary["tcp up"]["samples"] > 0 and summary["tcp up"]["failed"] == 0
    assert summary[""]["scheduler"]["samples_dropped"] > 0
    assert summary[""]["unsampled"] == ["http hung"]
    samples = [json.loads(line) for line in (run.out / "samples.jsonl").read_text().splitlines()]
    assert samples and {s["target"] for s in samples} == {"tcp up"}
    for name in ("events.jsonl", "timeline.txt", "report.png", "report.html"):
        assert (run.out / name).exists()
