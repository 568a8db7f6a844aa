"""The bench chart (bench/report_chart.py, drawn by bench/plot.py): every target on its bar, misses drawn apart.

What is checked is the data the plot is built from (:func:`build`'s panels and bars) and the artists
matplotlib was given (colours, hatches, target lines), not pixels.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from bench.chart_model import Bar, Panel
from bench.plot import COLORS, HATCHES, draw_panel
from bench.report import chart, evaluate_targets
from bench.report_chart import build
from tests.unit.test_bench_report_writers import _results

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
PANELS = ("Throughput", "Ratio targets", "End-to-end latency", "Recovery after SIGKILL", "Airflow-side work",
          "Driver memory", "c_e transaction markers", "c_e throughput by shape", "Scaling")


def committed(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def test_each_ratio_target_is_on_its_bar_with_the_reports_verdict() -> None:
    results = _results()
    results["targets"] = evaluate_targets(results)
    ratios = build(results).panel("Ratio targets").by_label()
    assert ratios["c_e/b  local[1]"].target == 1.0 and ratios["c_e/b  local[1]"].status == "pass"
    assert ratios["c_e/b  local[2]"].value == pytest.approx(0.944, abs=1e-3)
    assert ratios["c_e/b  local[2]"].status == "miss"  # 17,000 / 18,000
    assert ratios["c_e/n  local[2]"].target == 0.85 and ratios["c_e/n  local[2]"].status == "miss"
    assert ratios["c_d/b  local[2]"].target == 0.8
    # The whiskers are the per-repetition ratios the table's note gives.
    assert ratios["c_e/b  local[1]"].low == pytest.approx(0.9) and ratios["c_e/b  local[1]"].high == pytest.approx(1.1)


def test_latency_and_scaling_targets_sit_on_the_bars_they_judge() -> None:
    results = _results()
    results["targets"] = evaluate_targets(results)
    chart_ = build(results)
    latency = chart_.panel("End-to-end latency").by_label()
    p99 = latency["c_e\np99"]
    assert (p99.target, p99.at_most, p99.status, p99.bound) == (1850.0, True, "pass", "<= 1,850")
    assert latency["b\np99"].target is None and latency["c_e\np50"].status == "plain"
    scaling = chart_.panel("Scaling").by_label()
    assert chart_.panel("Scaling").title == "Scaling, 1 to 2 workers"  # the cluster's, where the target is
    assert scaling["c_e"].target == 1.5 and scaling["c_e"].status == "pass" and scaling["b"].target is None


def test_a_target_the_report_misses_is_a_miss_on_the_chart() -> None:
    results = _results()
    results["targets"] = [{**row, "pass": False} if row["key"] == "p99" else row for row in evaluate_targets(results)]
    assert build(results).panel("End-to-end latency").by_label()["c_e\np99"].status == "miss"


def test_the_committed_run_shows_its_misses_and_its_passes() -> None:
    results = committed("2026-11-27.json")
    chart_ = build(results)
    assert [p.title.split(",")[0].split(" at ")[0] for p in chart_.panels] == [
        "Throughput", "Ratio targets", "End-to-end latency", "Recovery after SIGKILL", "Airflow-side work",
        "Driver memory (Python + JVM)", "c_e transaction markers", "c_e throughput by shape", "Scaling"]
    ratios = chart_.panel("Ratio targets").by_label()
    missed = {label for label, bar in ratios.items() if bar.status == "miss"}
    table = {row["target"] for row in results["targets"] if row["pass"] is False
             and "steady" not in row["target"] and not row["key"].startswith("cpu")}
    assert len(missed) == len(table) == 6, (missed, table)
    assert {"c_e/n  local[2]", "c_e/n  local[2], headers", "c_d/b  cluster, 2 workers"} <= missed
    assert ratios["c_e/b  local[2], headers"].status == "pass"
    total = chart_.panel("Recovery").by_label()["total"]
    assert (total.value, total.target, total.status) == (11.59, 60.0, "pass")
    verify = chart_.panel("Airflow-side work").by_label()["verify"]
    assert (verify.value, verify.target, verify.status) == (142.32, 5000.0, "pass")
    assert chart_.panel("Airflow-side work").log, "a 5 s bound over figures of 0.1 s needs a log axis"
    memory = chart_.panel("Driver memory").by_label()["driver\n1,000k"]
    assert memory.target == pytest.approx(614.2 * 1.2) and memory.status == "pass"


@pytest.mark.parametrize("name", sorted(p.name for p in RESULTS.glob("*.json")
                                        if "meta" in json.loads(p.read_text())))
def test_every_committed_results_file_still_builds(name: str) -> None:
    # Older formats (one c mode, one master; partial runs) draw the panels they have and say the rest is absent.
    chart_ = build(committed(name))
    assert len(chart_.panels) == len(PANELS)
    assert any(not panel.empty for panel in chart_.panels)


def test_a_missed_bar_is_red_and_hatched_and_its_target_is_a_line_across_it() -> None:
    panel = Panel("ratios", "ratio", (Bar("met", 1.1, target=1.0, passed=True), Bar("missed", 0.7, target=0.85,
                                                                                      passed=False),
                                      Bar("plain", 0.5), Bar("absent", None)))
    ax = Figure().subplots()
    draw_panel(ax, panel)
    met, missed, plain, absent = ax.patches[:4]
    assert met.get_facecolor() == to_rgba(COLORS["pass"]) and not met.get_hatch()
    assert missed.get_facecolor() == to_rgba(COLORS["miss"]) and missed.get_hatch() == HATCHES["miss"]
    assert plain.get_facecolor() == to_rgba(COLORS["plain"])
    assert absent.get_height() == 0, "not measured: no bar, the label says n/a"
    assert COLORS["miss"] not in (COLORS["pass"], COLORS["plain"], COLORS["target"])
    lines = [segment for c in ax.collections if isinstance(c, LineCollection) for segment in c.get_segments()]
    assert sorted(round(float(s[0][1]), 2) for s in lines) == [0.85, 1.0], "one target line per held bar"
    texts = [t.get_text() for t in ax.texts]
    assert "0.70\nMISS" in texts and "n/a" in texts and ">= 0.85" in texts
    assert ax.get_ylabel() == "ratio"


def test_the_chart_is_a_png_of_the_grid(tmp_path: Path) -> None:
    path = tmp_path / "chart.png"
    chart(committed("2026-11-27.json"), path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1860, 1410)  # 3 x 3 panels at 100 dpi
