"""The report files, and the report page rendered in headless Chromium: the screenshot shows
the timeline (not blank, the up and down lane colours, the event marker colour)."""

from __future__ import annotations

import json
import shutil
import subprocess
from array import array
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image
from tests.probe.fold import transitions_of

from l3ha.probe.analysis import TargetTracker
from l3ha.probe.events import Event
from l3ha.probe.report import (
    DOWN_COLOUR,
    EVENT_COLOURS,
    UP_COLOUR,
    summary_document,
    summary_rows,
    write_report,
)
from l3ha.probe.runner import ProbeConfig, ProbeResult
from l3ha.probe.scheduler import GridStats
from l3ha.probe.targets import parse_target

from .test_analysis import stream

CHROMIUM = "/usr/bin/chromium"


def synthetic_result() -> ProbeResult:
    """Three targets, 10 s at 0.1 s: two outages, one clean lane, a marker, an agent event."""
    targets = (
        parse_target("http", "keystone=http://127.0.0.1:5000/"),
        parse_target("tcp", "127.0.0.1:22"),
        parse_target("icmp", "127.0.0.1"),
    )
    patterns = ["." * 20 + "x" * 30 + "." * 50, "." * 100, "." * 60 + "x" * 15 + "." * 25]
    samples = [s for t, p in zip(targets, patterns, strict=True) for s in stream(t.name, p, skew=0)]
    trackers = []
    for target in targets:
        tracker = TargetTracker(target.name)
        for sample in (s for s in samples if s.target == target.name):
            tracker.feed(sample)
        trackers.append(tracker)
    events = [
        Event(101.5, 0.0, "mark", "switchover starts"),
        Event(102.1, 0.0, "cloud", "agent net-2: dead"),
    ]
    return ProbeResult(
        ProbeConfig(targets, interval=0.1, timeout=0.5, name="switchover"),
        origin=100.0,
        origin_wall=1_790_000_000.0,
        until=110.0,
        trackers=trackers,
        transitions=transitions_of(samples),
        events=events,
        lateness=array("d", [0.0005]),
        grid=GridStats(started=300),
    )


def test_report_files_agree(tmp_path: Path) -> None:
    result = synthetic_result()
    summary = summary_document(result, max_outage=2.0)
    write_report(result, summary, tmp_path)
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["gate"]["violations"] == ["http keystone: longest outage 3.000 s > 2 s"]
    timeline = (tmp_path / "timeline.txt").read_text()
    assert "+02.000s  http keystone: DOWN (timeout)" in timeline
    assert "+05.000s  http keystone: UP after 3.0 s" in timeline
    assert "+02.100s  agent net-2: dead" in timeline
    events = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["t_s"] for e in events] == [1.5, 2.1]
    page = (tmp_path / "report.html").read_text()
    assert "data:image/png;base64," in page and "switchover starts" in page
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def colour_pixels(pixels: np.ndarray, hex_colour: str, tolerance: float = 0.06) -> int:
    rgb = np.array([int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    return int((np.abs(pixels[:, :, :3] - rgb).max(axis=2) < tolerance).sum())


@pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="chromium is not installed")
def test_report_page_renders_the_timeline_in_chromium(tmp_path: Path) -> None:
    result = synthetic_result()
    out = tmp_path / "report"
    write_report(result, summary_document(result), out)
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1200,800",
            (out / "report.html").as_uri(),
        ],
        capture_output=True,
        timeout=60,
        check=True,
    )
    pixels = image.imread(str(shot))
    assert pixels.shape[0] == 800 and pixels.shape[1] == 1200
    flat = (pixels[:, :, :3] * 255).round().astype(np.uint8).reshape(-1, 3)
    assert len(np.unique(flat, axis=0)) > 200  # not blank: text, bars, axes
    assert (flat.min(axis=1) < 200).mean() > 0.05  # plenty of non-white
    up, down = colour_pixels(pixels, UP_COLOUR), colour_pixels(pixels, DOWN_COLOUR)
    assert up > 20_000  # three green lanes
    assert 2_000 < down < up  # two red outage bars, shorter than the lanes
    assert colour_pixels(pixels, EVENT_COLOURS["mark"], 0.1) > 30  # the marker line


def test_a_target_without_samples_shows_loss_na_and_is_listed_as_unsampled() -> None:
    result = synthetic_result()
    result.trackers[1] = TargetTracker(result.trackers[1].target)
    summary = summary_document(result, max_loss=50.0)
    rows = {row["target"]: row for row in summary_rows(summary)}
    assert rows["tcp 127.0.0.1:22"]["samples"] == 0
    assert rows["tcp 127.0.0.1:22"]["loss_pct"] == "n/a"
    assert summary["unsampled"] == ["tcp 127.0.0.1:22"]
    assert summary["gate"]["violations"] == [
        "tcp 127.0.0.1:22: no sample taken, so it was not measured"
    ]
