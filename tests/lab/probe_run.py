"""Runs ``l3ha probe --icmp`` inside a lab's client namespace and reads its summary.

I/O: a subprocess (``ip netns exec``) and its ``--output`` directory.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from l3ha.lab.lab import Lab
from l3ha.lab.topology import CLIENT


class ClientProbe:
    """An ICMP probe of one VIP from the client namespace, 10 ms apart, stopped with SIGINT."""

    def __init__(self, lab: Lab, address: str, output: Path) -> None:
        self.output = output
        argv = ["ip", "netns", "exec", lab.spec.namespace(CLIENT), sys.executable, "-m"]
        argv += ["l3ha.cli.main", "probe", "--icmp", address, "--interval", "0.01"]
        argv += ["--timeout", "0.2", "--output", str(output), "-f", "json"]
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def samples(self) -> int:
        path = self.output / "samples.jsonl"
        return len(path.read_text().splitlines()) if path.exists() else 0

    def wait_sampling(self, count: int = 30, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.samples() < count:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"probe did not start: {self.proc.stderr and self.stop()}")
            time.sleep(0.05)

    def stop(self) -> dict[str, Any]:
        """Stop it (SIGINT) and return the target's summary."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=60)
        summary = json.loads((self.output / "summary.json").read_text())
        target: dict[str, Any] = summary["targets"][0]
        target["stderr"] = err
        return target

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
