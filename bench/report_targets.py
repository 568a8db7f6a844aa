"""The report's targets: what each is held to, and the verdict (PASS / MISS) a run's results earn.

:func:`evaluate_targets` gives the rows the markdown's table (:mod:`bench.report`), the notes
(:mod:`bench.report_analysis`) and the chart (:mod:`bench.report_chart`) all read, so the three never
disagree. The ratio targets of the two exactly-once writers are :mod:`bench.ratios`' (their rows come
from :mod:`bench.report_writers`); the rest are defined here.
"""

from __future__ import annotations

from typing import Any

from bench.report_cells import mmm
from bench.report_writers import EOS_LATENCY_MODES, cluster_ratio_targets, is_writers_format, ratio_targets

#: The bounds that are not ratios. The chart draws them too; TARGETS' text says the same numbers.
RECOVERY_LIMIT_S, VERIFY_LIMIT_MS, P99_MARGIN_MS = 60.0, 5000.0, 250.0

#: ``{key: (the target as the table prints it, its bound where it is one number)}``.
TARGETS = {
    "c/b": ("exactly-once throughput / at-least-once throughput >= 1.0", 1.0),
    "c/a": ("exactly-once throughput / raw transactional producer >= 0.5", 0.5),
    "p99": ("exactly-once p99 latency <= at-least-once p99 + 250 ms (trigger 1 s)", None),
    "scaling": ("scaling of c_e from 1 to 2 standalone workers >= that of b", None),
    "memory": ("driver writer: driver RSS at 10x the batch within 20% of that at 1x", None),
    "recovery": ("recovery (abort + verify + restart until output flows) <= 60 s", RECOVERY_LIMIT_S),
    "verify": ("verification of 10,000 partitions <= 5 s", VERIFY_LIMIT_MS),
}


def eos_latency(results: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The exactly-once latency the p99 target applies to: the executor writers' when measured."""
    lat = results.get("latency") or {}
    for mode in EOS_LATENCY_MODES:
        if (lat.get(mode) or {}).get("latency_ms"):
            return mode, lat[mode]
    return "exactly-once", None


def evaluate_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per target the results measured, in the table's order.

    :param results: a run's results (the JSON :mod:`bench.__main__` writes), any format since the first run.
    :returns: rows of ``key``, ``target`` (its text), ``value`` (the figure judged), ``measured`` (as
        printed), ``pass`` (``None``: measured, but what it is held against was not) and ``note``.
    """
    rows: list[dict[str, Any]] = []

    def add(key: str, value: float | None, passed: bool | None, shown: str, note: str = "") -> None:
        rows.append({"key": key, "target": TARGETS[key][0], "value": value, "measured": shown,
                     "pass": passed, "note": note})

    tp = results.get("throughput")
    if is_writers_format(tp):
        rows += ratio_targets(tp)
    elif tp and "ratios" in tp:
        for key in ("c/b", "c/a"):
            value = tp["ratios"][key]
            paired = (tp.get("paired_ratios") or {}).get(key)
            note = "ratio of the medians"
            if paired and paired["n"] > 1:
                note += f"; per repetition (paired runs) {mmm(paired, '{:.2f}')} min / median / max"
                if (paired["median"] >= TARGETS[key][1]) != (value >= TARGETS[key][1]):
                    note += ": the paired median disagrees, the result is within the noise of this machine"
            add(key, value, value >= TARGETS[key][1], f"{value:.2f}", note)
    mixed = results.get("throughput_mixed_headers")
    if is_writers_format(mixed):
        every = mixed["input"].get("headers_every")
        rows += [{**row, "key": f"{row['key']}:headers", "target": f"{row['target']} (a header on every {every}th)"}
                 for row in ratio_targets(mixed)]
    lat_mode, lat = eos_latency(results)
    baseline = ((results.get("latency") or {}).get("at-least-once") or {}).get("latency_ms")
    if lat and "latency_ms" in lat:
        p99 = lat["latency_ms"]["p99"]
        if baseline:
            limit = baseline["p99"] + P99_MARGIN_MS
            add("p99", p99, p99 <= limit, f"{p99:,.0f} ms (limit {limit:,.0f} ms)",
                f"{lat_mode} against at-least-once's p99 of {baseline['p99']:,.0f} ms, "
                f"{lat['rate_per_s']:,} rec/s for {lat['duration_s']} s, trigger {lat['trigger_ms']:,} ms")
        else:
            add("p99", p99, None, f"{p99:,.0f} ms", "at-least-once's latency was not measured in this run")
    rows += cluster_ratio_targets(results.get("cluster") or {})
    mixed_cluster = results.get("cluster_mixed_headers") or {}
    every = mixed_cluster.get("headers_every")
    rows += [{**row, "key": f"{row['key']}:headers", "target": f"{row['target']} (a header on every {every}th)"}
             for row in cluster_ratio_targets(mixed_cluster)]
    cluster_scaling = (results.get("cluster") or {}).get("scaling") or {}
    mine, base = (cluster_scaling.get(letter, {}).get("of_medians") for letter in ("c_e", "b"))
    if mine is not None and base is not None:
        add("scaling", mine, mine >= base, f"{mine:.2f}x (b {base:.2f}x)", "median records/s, 2 workers over 1")
    mem = results.get("memory") or {}
    if mem.get("driver_writer_within_bound") is not None:
        growth = ((mem.get("writers") or {}).get("driver") or {}).get("growth") or {}
        sizes = mem.get("sizes") or [0, 0]
        add("memory", growth.get("total"), mem["driver_writer_within_bound"],
            f"{growth.get('total', '-')}x (Python + JVM)", f"{sizes[1]:,} vs {sizes[0]:,} records per batch")
    rec = results.get("recovery")
    if rec and "seconds" in rec:
        median, worst = rec["seconds"]["median"], rec["seconds"]["max"]
        add("recovery", median, median <= RECOVERY_LIMIT_S, f"{median:.1f} s median, {worst:.1f} s max",
            "" if worst <= RECOVERY_LIMIT_S else "the worst repetition exceeded 60 s")
    ver = (results.get("scale") or {}).get("verification")
    if ver and "worst_median_ms" in ver:
        value = ver["worst_median_ms"]
        add("verify", value, value <= VERIFY_LIMIT_MS, f"{value:,.0f} ms",
            f"{ver['partitions']:,} partitions, worst of {len(ver['scenarios'])} verdict scenarios")
    return rows
