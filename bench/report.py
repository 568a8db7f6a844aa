"""One bench run's report: the markdown (:func:`markdown`), its targets and notes, and the PNG chart.

This module assembles the markdown from its sections; the parts live beside it, one concern each:

- :mod:`bench.report_targets`: the targets and their verdicts (:func:`evaluate_targets`);
- :mod:`bench.report_analysis`: the notes on where the time goes (:func:`analyze`);
- :mod:`bench.report_writers`: the two exactly-once writers' throughput, ratios and control records;
- :mod:`bench.report_tables`: the other benches' tables (latency, recovery, scale, memory, profile);
- :mod:`bench.report_chart`: the chart (:func:`chart`).

:func:`bench.run_record.write_results` imports all four public functions from here.
"""

from __future__ import annotations

import re
from typing import Any

from bench.cpu_pinning import describe
from bench.report_analysis import analyze
from bench.report_chart import chart
from bench.report_tables import (
    cluster_section,
    latency_section,
    memory_section,
    profile_section,
    recovery_section,
    scale_section,
    throughput_before_writers,
)
from bench.report_targets import TARGETS, evaluate_targets
from bench.report_writers import control_section, is_writers_format, throughput_section

__all__ = ["TARGETS", "analyze", "chart", "evaluate_targets", "markdown"]


def _error_line(trace: str) -> str:
    """The exception line of a formatted traceback (its message's first line)."""
    lines = trace.splitlines()
    for line in lines:
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line):
            return line
    return lines[-1] if lines else ""


def markdown(results: dict[str, Any]) -> str:
    """The report of ``results`` (with ``targets`` and ``analysis`` filled in), one section per bench it has.

    Each section prints only what its bench measured, so the results of any run, full or partial
    (``--only``), old or new format, render; the sections keep the order every report has had.
    """
    meta = results["meta"]
    out = [f"# Benchmarks {meta['date']}{' (quick)' if meta.get('quick') else ''}", ""]
    out.append(f"Command: `{meta['command']}` · commit `{meta.get('git_commit', '?')}` · {meta['machine']} · "
               f"run {meta['started']} to {meta['finished']} ({meta['duration_min']:.0f} min)")
    out.append("")
    protocol = f", {meta['kafka_protocol']}" if meta.get("kafka_protocol") else ""
    out.append(f"Versions: {meta['versions']}. One broker (Kafka {meta['kafka']}{protocol}, KRaft, single node, "
               "started by the bench); jobs via `eos run --master local[2]`"
               + (" (the throughput table: " + " and ".join(f"local[{c}]" for c in results["throughput"]["cores"])
                  + ")" if is_writers_format(results.get("throughput")) else "") + ", `spark.driver.memory=1g`.")
    out.append("")
    if pinning := describe(meta.get("cpu_pinning")):
        out += [pinning, ""]
    out.append(f"Load (`os.getloadavg()` 1-minute, recorded before each measurement): "
               f"{meta['load_summary']}. The machine is shared with other engineers' test runs; "
               "every figure below was measured under that load.")
    out.append("")
    if meta.get("disturbances"):
        out += ["**Disturbed:**", "", *[f"- {line}" for line in meta["disturbances"]], ""]
    if meta.get("reruns"):
        # A bench of the run that failed for a reason outside what it measures, run again on its own.
        out += ["**Run again separately:**", "", *[f"- {line}" for line in meta["reruns"]], ""]
    if results.get("errors"):
        out += ["**Errors:**", ""]
        out += [f"- {name}: {_error_line(error)}" for name, error in results["errors"].items()]
        out.append("")

    targets = results.get("targets") or []
    if targets:
        out += ["## Targets", "", "| target | measured | result | note |", "|---|---|---|---|"]
        for t in targets:
            verdict = "PASS" if t["pass"] else "MISS"
            out.append(f"| {t['target']} | {t['measured']} | **{verdict}** | {t['note']} |")
        out.append("")

    tp = results.get("throughput")
    if is_writers_format(tp):
        out += throughput_section(tp)
    elif tp and "modes" in tp:
        out += throughput_before_writers(tp)

    mixed = results.get("throughput_mixed_headers")
    if is_writers_format(mixed):
        out += throughput_section(mixed, f"Throughput, input with a header on every "
                                         f"{mixed['input'].get('headers_every')}th record")

    if (results.get("control") or {}).get("shapes"):
        out += control_section(results["control"])
    if results.get("latency"):
        out += latency_section(results["latency"])
    rec = results.get("recovery")
    if rec and "runs" in rec:
        out += recovery_section(rec)
    if results.get("scale"):
        out += scale_section(results["scale"])
    if (results.get("cluster") or {}).get("modes"):
        out += cluster_section(results["cluster"])
    mixed_cluster = results.get("cluster_mixed_headers") or {}
    if mixed_cluster.get("modes"):
        out += cluster_section(mixed_cluster, f", input with a header on every {mixed_cluster['headers_every']}th "
                                              "record")
    if results.get("memory"):
        out += memory_section(results["memory"])
    prof = results.get("profile")
    if prof and "modes" in prof:
        out += profile_section(prof)
    if results.get("analysis"):
        out += ["## Where the time goes, and what would close the gaps", "", *results["analysis"], ""]
    out += ["Raw figures: the JSON next to this file; chart: the PNG next to it.", ""]
    return "\n".join(out)
