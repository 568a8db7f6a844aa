"""The PNG chart of one bench run's results: 3 x 3 panels, every target marked on the bar it applies to.

:func:`build` turns the results into a :class:`~bench.chart_model.Chart` (pure); :func:`chart` draws
it with matplotlib (:mod:`bench.plot`, the ``bench`` extra). Verdicts come from the results' target
rows (:func:`bench.report_targets.evaluate_targets`), the same rows the markdown table prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.chart_model import Bar, Chart, Panel, spread, verdicts
from bench.ratios import RATIO_TARGETS, SPARK_LETTERS, master, mode_key
from bench.report_targets import P99_MARGIN_MS, RECOVERY_LIMIT_S, VERIFY_LIMIT_MS, eos_latency, evaluate_targets
from bench.report_writers import is_writers_format

#: Short names of the latency modes (the throughput table's letters where there is one).
LATENCY_LETTERS = {"exactly-once executors": "c_e", "exactly-once driver": "c_d", "exactly-once": "c",
                   "at-least-once": "b"}


def chart(results: dict[str, Any], path: Path) -> None:
    """Draw :func:`build`'s chart of ``results`` into the PNG ``path``."""
    from bench.plot import render

    render(build(results), path)


def build(results: dict[str, Any]) -> Chart:
    if results.get("targets") is None:
        results = {**results, "targets": evaluate_targets(results)}
    passed = verdicts(results["targets"])
    meta = results["meta"]
    panels = (_throughput(results), _ratios(results, passed), _latency(results, passed),
              _recovery(results, passed), _scale(results, passed), _memory(results, passed),
              *_control(results.get("control") or {}), _scaling(results, passed))
    return Chart(title=f"airflow-provider-eos benchmarks {meta['date']}" + (" (quick)" if meta.get("quick") else ""),
                 subtitle=f"load (1-minute) {meta.get('load_summary', 'not recorded')}", panels=panels)


def _throughput(results: dict[str, Any]) -> Panel:
    tp = results.get("throughput") or {}
    modes = tp.get("modes") or {}

    def rate(key: str) -> tuple[float | None, float | None, float | None]:
        return spread((modes.get(key) or {}).get("records_per_s"), 1000)

    unit = "thousand records/s (median; whiskers: min to max)"
    if is_writers_format(tp):
        raw = rate("a")[0]
        bars = tuple(Bar(key, *rate(key)) for cores in tp["cores"] for letter in SPARK_LETTERS
                     if (key := mode_key(letter, cores)) in modes)
        return Panel("Throughput", unit, bars, category="mode @ local cores",
                     note=f"raw transactional producer (a, no Spark): {raw:,.0f}k/s" if raw else "")
    bars = tuple(Bar(label, *rate(key)) for key, label in (("a", "a raw txn"), ("b", "b at-least-once"),
                                                           ("c", "c exactly-once")))
    return Panel("Throughput", unit, bars, category="mode")


def _ratios(results: dict[str, Any], passed: dict[str, bool | None]) -> Panel:
    """Every ratio target, grouped by ratio: on each local master, with headers in the input, on the cluster."""
    tp = results.get("throughput") or {}
    unit = "ratio of the medians (whiskers: per repetition, min to max)"
    if not is_writers_format(tp):
        ratios, paired = tp.get("ratios") or {}, tp.get("paired_ratios") or {}
        bars = tuple(Bar(key, ratios.get(key), *spread(paired.get(key))[1:], target=target,
                         passed=passed.get(key) if target else None)
                     for key, target in (("c/b", 1.0), ("c/a", 0.5), ("b/a", None)))
        return Panel("Ratio targets", unit, bars, horizontal=True)
    # Each scope: the result, its cores, its label, and how its target rows' keys are spelled.
    scopes = [(tp, str(cores), master(cores), "{}") for cores in tp["cores"]]
    mixed = results.get("throughput_mixed_headers")
    if is_writers_format(mixed):
        scopes += [(mixed, str(cores), f"{master(cores)}, headers", "{}:headers") for cores in mixed["cores"]]
    for name, where, spelled in (("cluster", "cluster, 2 workers", "cluster:{}"),
                                 ("cluster_mixed_headers", "cluster, 2 workers, headers", "cluster:{}:headers")):
        if (results.get(name) or {}).get("ratios"):
            scopes.append((results[name], "2", where, spelled))
    bars = []
    for name, target in RATIO_TARGETS.items():
        for source, cores, where, spelled in scopes:
            key = f"{name}@{cores}"
            verdict_key = spelled.format(key)
            bars.append(Bar(f"{name}  {where}", (source.get("ratios") or {}).get(key),
                            *spread((source.get("paired_ratios") or {}).get(key))[1:], target=target,
                            passed=passed.get(verdict_key)))
    return Panel("Ratio targets", unit, tuple(bars), horizontal=True,
                 note="batch 0 included (the steady-state rows: the markdown table)")


def _latency(results: dict[str, Any], passed: dict[str, bool | None]) -> Panel:
    lat = results.get("latency") or {}
    target_mode, _ = eos_latency(results)
    baseline = ((lat.get("at-least-once") or {}).get("latency_ms") or {}).get("p99")
    bars, trigger = [], None
    for mode, letter in LATENCY_LETTERS.items():
        figures = (lat.get(mode) or {}).get("latency_ms")
        if not figures:
            continue
        trigger = trigger or lat[mode].get("trigger_ms")
        for q in (50, 95, 99):
            held = mode == target_mode and q == 99 and baseline is not None
            bars.append(Bar(f"{letter}\np{q}", figures[f"p{q}"], target=baseline + P99_MARGIN_MS if held else None,
                            at_most=True, passed=passed.get("p99") if held else None))
    note = ""
    if trigger:
        note = f"trigger {trigger:,} ms; target: {LATENCY_LETTERS[target_mode]} p99 <= b p99 + {P99_MARGIN_MS:.0f} ms"
    return Panel("End-to-end latency", "milliseconds", tuple(bars), category="mode, percentile", note=note)


def _recovery(results: dict[str, Any], passed: dict[str, bool | None]) -> Panel:
    rec = results.get("recovery") or {}
    bars = (Bar("abort", *spread(rec.get("abort_s"))), Bar("verify", *spread(rec.get("verify_s"))),
            Bar("restart to\noutput", *spread(rec.get("restart_to_first_output_s"))),
            Bar("total", *spread(rec.get("seconds")), target=RECOVERY_LIMIT_S, at_most=True,
                passed=passed.get("recovery")))
    return Panel("Recovery after SIGKILL", "seconds (median; whiskers: min to max)", bars, category="step")


def _scale(results: dict[str, Any], passed: dict[str, bool | None]) -> Panel:
    sc = results.get("scale") or {}
    ver = sc.get("verification") or {}
    scenarios = ver.get("scenarios") or {}
    # The target is on the slowest verdict scenario's median; its whiskers are that scenario's.
    worst = max(scenarios.values(), key=lambda s: (s.get("verify_checkpoint_ms") or {}).get("median") or 0,
                default={})
    txn, live = sc.get("transactions") or {}, sc.get("preflight_live") or {}
    bars = (Bar("verify", *spread(worst.get("verify_checkpoint_ms")), target=VERIFY_LIMIT_MS, at_most=True,
                passed=passed.get("verify")),
            Bar("render\nverdict", *spread((scenarios.get("KAFKA_BEHIND") or {}).get("render_ms"))),
            Bar("find\nlingering", *spread(txn.get("find_lingering_ms"))),
            Bar("plan\nabort", *spread(txn.get("plan_abort_ms"))),
            Bar("pre-flight\nlive", *spread(live.get("gather_facts_ms"))))
    partitions = ver.get("partitions") or 10_000
    return Panel(f"Airflow-side work at {partitions:,} partitions", "milliseconds, log scale", bars,
                 category="operation", log=True, note="verify: the slowest verdict scenario")


def _memory(results: dict[str, Any], passed: dict[str, bool | None]) -> Panel:
    mem = results.get("memory") or {}
    unit = "peak RSS, MB"
    if not mem.get("sizes"):
        def rss(mode: str, part: str) -> float | None:
            return ((mem.get(mode) or {}).get("peak_rss_mb") or {}).get(part)

        return Panel("Driver memory, one batch", unit,
                     (Bar("c Python", rss("exactly-once", "driver_python")),
                      Bar("b Python", rss("at-least-once", "driver_python")),
                      Bar("c JVM", rss("exactly-once", "jvm")), Bar("b JVM", rss("at-least-once", "jvm"))),
                     category="mode, process")
    small, large = mem["sizes"][:2]
    limit = mem.get("max_growth") or 1.2

    def total(writer: str, size: int) -> float | None:
        by_size = (mem.get("writers") or {}).get(writer) or {}
        return ((by_size.get(str(size)) or {}).get("peak_rss_mb") or {}).get("total")

    bars = []
    for writer in ("driver", "executors"):
        for size in (small, large):
            held = writer == "driver" and size == large and total(writer, small) is not None
            bars.append(Bar(f"{writer}\n{size // 1000:,}k", total(writer, size),
                            target=total(writer, small) * limit if held else None, at_most=True,
                            passed=passed.get("memory") if held else None))
    return Panel("Driver memory (Python + JVM)", unit, tuple(bars), category="writer, records per batch",
                 note=f"target: the driver writer at {large // small}x the batch within {limit - 1:.0%}")


def _control(control: dict[str, Any]) -> tuple[Panel, Panel]:
    """Markers per 1,000 records and records/s of the executor writers' control-record runs (no targets)."""
    markers, rates = [], []
    for shape, data in (control.get("shapes") or {}).items():
        for batch, by_key in data["batches"].items():
            name = f"{shape}\n{int(batch) // 1000:,}k"
            for key, s in by_key.items():
                if key.split("@")[0] != "c_e":
                    continue
                markers.append(Bar(name, (s.get("markers_per_1000_records") or {}).get("median")))
                rates.append(Bar(name, *spread(s.get("records_per_s"), 1000)))
    category = "partitions in x out, records per batch"
    return (Panel("c_e transaction markers", "markers per 1,000 records", tuple(markers), category=category),
            Panel("c_e throughput by shape", "thousand records/s", tuple(rates), category=category))


def _scaling(results: dict[str, Any], passed: dict[str, bool | None]) -> Panel:
    tp = results.get("throughput") or {}
    # The standalone cluster's 1 -> 2 workers, where the target is, else the throughput table's local cores.
    scale_up, title, held = (results.get("cluster") or {}).get("scaling") or {}, "Scaling, 1 to 2 workers", True
    if not scale_up:
        scale_up, title, held = tp.get("scaling") or {}, "Scaling, 1 to 2 local cores", False
    base = (scale_up.get("b") or {}).get("of_medians")
    bars = tuple(Bar(letter, (scale_up.get(letter) or {}).get("of_medians"),
                     *spread((scale_up.get(letter) or {}).get("paired"))[1:],
                     target=base if held and letter == "c_e" else None,
                     passed=passed.get("scaling") if held and letter == "c_e" else None)
                 for letter in SPARK_LETTERS if letter in scale_up)
    return Panel(title, "records/s on 2 over 1 (whiskers: per repetition)", bars, category="mode",
                 reference=(2.0, "linear"), note="target (cluster): c_e scales at least as b" if held else "")
