"""The probe's outputs: summary document, JSON lines, timeline, chart (PNG) and report page.

I/O: writes files in the output directory. ``summary_document`` and
``summary_rows`` are pure; ``draw_chart`` uses matplotlib (Agg backend, imported
inside the function so the CLI starts fast).
"""

from __future__ import annotations

import base64
import html
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from l3ha.probe.analysis import Sample, TargetTracker, gate_violations, latency_block, unsampled
from l3ha.probe.runner import Observer, Probe, ProbeResult
from l3ha.probe.timeline import timeline_lines

UP_COLOUR = "#3fae49"
DOWN_COLOUR = "#d62728"
EVENT_COLOURS = {"cloud": "#1f5fbf", "mark": "#8e44ad", "journal": "#e08a00"}
MAX_LANES = 40
LABEL_LEVELS = 3

SUMMARY_COLUMNS = (
    "target",
    "samples",
    "loss_pct",
    "outages",
    "total_down_s",
    "longest_s",
    "p50_ms",
    "p99_ms",
)


def iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).isoformat(timespec="milliseconds")


def summary_document(
    result: ProbeResult, max_outage: float | None = None, max_loss: float | None = None
) -> dict[str, Any]:
    """The content of ``summary.json``."""
    config = result.config
    targets = [t.summary(result.origin, result.until) for t in result.trackers]
    violations = gate_violations(targets, max_outage, max_loss)
    lateness = sorted(result.lateness)
    return {
        "name": config.name,
        "started_at": iso(result.origin_wall),
        "duration_s": round(result.until - result.origin, 3),
        "interval_s": config.interval,
        "timeout_s": config.timeout,
        "targets": targets,
        "unsampled": unsampled(targets),
        "events": len(result.events),
        "scheduler": {
            "samples_started": result.grid.started,
            "samples_skipped": result.grid.skipped,
            "samples_dropped": result.dropped,
            "lateness_ms": latency_block(lateness),
        },
        "gate": {
            "max_outage_s": max_outage,
            "max_loss_pct": max_loss,
            "passed": not violations,
            "violations": violations,
        },
    }


def summary_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One table row per target, for ``l3ha.cli.output.emit``."""
    return [
        {
            "target": t["target"],
            "samples": t["samples"],
            "loss_pct": "n/a" if t["loss_pct"] is None else f"{t['loss_pct']:.2f}",
            "outages": t["outage_count"],
            "total_down_s": f"{t['total_downtime_s']:.3f}",
            "longest_s": f"{t['longest_outage_s']:.3f}",
            "p50_ms": _ms(t["latency_ms"]["p50"]),
            "p99_ms": _ms(t["latency_ms"]["p99"]),
        }
        for t in summary["targets"]
    ]


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


class SampleLog(Observer):
    """Streams every sample to ``samples.jsonl`` as it finishes (flushed every tick)."""

    def __init__(self, output: Path) -> None:
        output.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = (output / "samples.jsonl").open("w", encoding="utf-8")

    def on_sample(self, sample: Sample) -> None:
        self._file.write(json.dumps(sample.to_json()) + "\n")

    def on_tick(self, probe: Probe) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def write_report(result: ProbeResult, summary: dict[str, Any], output: Path) -> list[Path]:
    """Write summary.json, events.jsonl, timeline.txt, report.png and report.html."""
    output.mkdir(parents=True, exist_ok=True)
    lines = timeline_lines(result.transitions, result.events, result.origin, result.until)
    names = ("summary.json", "events.jsonl", "timeline.txt", "report.png")
    paths = [output / name for name in names]
    paths[0].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(
        "".join(json.dumps(e.to_json(result.origin)) + "\n" for e in result.events),
        encoding="utf-8",
    )
    paths[2].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    draw_chart(result, paths[3])
    page = output / "report.html"
    page.write_text(report_html(summary, lines, paths[3].read_bytes()), encoding="utf-8")
    return [*paths, page]


def lanes(result: ProbeResult) -> list[int]:
    """Tracker indexes to draw: targets with outages or no sample first, at most ``MAX_LANES``."""

    def notable(tracker: TargetTracker) -> bool:
        return bool(tracker.all_outages()) or tracker.samples == 0

    order = sorted(range(len(result.trackers)), key=lambda i: (not notable(result.trackers[i]), i))
    return sorted(order[:MAX_LANES])


def draw_chart(result: ProbeResult, path: Path) -> None:
    """One lane per target (green observed, red outages), events as vertical markers."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    shown = lanes(result)
    span = max(result.until - result.origin, 1e-3)
    figure, axes = plt.subplots(figsize=(12, 1.6 + 0.45 * len(shown)), dpi=100)
    for row, index in enumerate(reversed(shown)):
        tracker = result.trackers[index]
        first = (tracker.first_start or result.until) - result.origin
        axes.broken_barh([(first, span - first)], (row - 0.35, 0.7), facecolors=UP_COLOUR)
        bars = [(o.start - result.origin, o.duration(result.until)) for o in tracker.all_outages()]
        axes.broken_barh(bars, (row - 0.35, 0.7), facecolors=DOWN_COLOUR)
    _draw_events(axes, result, len(shown))
    axes.set_yticks(range(len(shown)), [_lane_label(result.trackers[i]) for i in reversed(shown)])
    axes.set_xlim(0, span)
    levels = min(len(result.events), LABEL_LEVELS)
    axes.set_ylim(-0.6, len(shown) - 0.4 + (0.3 + 0.3 * levels if levels else 0))
    axes.set_xlabel("seconds since start")
    hidden = len(result.trackers) - len(shown)
    title = f"{result.config.name}: {iso(result.origin_wall)}"
    axes.set_title(title + (f" ({hidden} targets without outage not drawn)" if hidden else ""))
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def _lane_label(tracker: TargetTracker) -> str:
    return tracker.target if tracker.samples else f"{tracker.target} (no sample)"


def _draw_events(axes: Any, result: ProbeResult, rows: int) -> None:
    """Dashed vertical lines, labels on up to ``LABEL_LEVELS`` heights to keep them legible."""
    for number, event in enumerate(result.events):
        at = event.mono - result.origin
        colour = EVENT_COLOURS.get(event.source, "#555555")
        axes.axvline(at, color=colour, linestyle="--", linewidth=1.2)
        label = event.text if len(event.text) <= 40 else event.text[:39] + "…"
        height = rows - 0.35 + 0.3 * (number % LABEL_LEVELS)
        axes.text(at, height, " " + label, fontsize=8, color=colour, va="bottom")


def report_html(summary: dict[str, Any], lines: list[str], png: bytes) -> str:
    """A self-contained page: chart, summary table, gate verdict and timeline."""
    image = base64.b64encode(png).decode("ascii")
    head = ("target", "samples", "loss %", "outages", "downtime s", "longest s", "p50 ms", "p99 ms")
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row.values()) + "</tr>"
        for row in summary_rows(summary)
    )
    gate = summary["gate"]
    verdict = "passed" if gate["passed"] else "FAILED: " + "; ".join(gate["violations"])
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>l3ha probe: {html.escape(summary["name"])}</title>
<style>
body {{ font-family: sans-serif; margin: 1em 2em; }}
table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 2px 8px; text-align: right; }}
td:first-child {{ text-align: left; }}
pre {{ background: #f4f4f4; padding: 0.5em; }}
</style></head><body>
<h1>l3ha probe: {html.escape(summary["name"])}</h1>
<p>started {html.escape(summary["started_at"])}, {summary["duration_s"]} s,
interval {summary["interval_s"]} s, timeout {summary["timeout_s"]} s;
gate {html.escape(verdict)}</p>
<img alt="timeline chart" style="max-width: 100%" src="data:image/png;base64,{image}">
<h2>Summary</h2>
<table><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>{rows}</table>
<h2>Timeline</h2>
<pre>{html.escape(chr(10).join(lines))}</pre>
</body></html>
"""
