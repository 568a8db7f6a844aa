"""The soak's report: ``<stamp>-seed<seed>.json`` (everything), ``.md`` (the summary and the fault log),
``.png`` (the timeline) and ``LATEST.md``. :func:`summarize` and :func:`markdown` are pure."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from soak.schedule import KINDS

FULL_RECORDS, FULL_FAULTS = 1_000_000, 100
_FULL_MARK = "<!-- full soak -->"


def _eos(results: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in results.get("phases") or [] if p["mode"] == "exactly-once"]


def _control(results: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in results.get("phases") or [] if p["mode"] == "at-least-once"]


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    """Fault counts by kind (applied, hitting an open transaction), control duplicates, verdicts, pass/fail."""
    faults = [f for p in _eos(results) for f in p.get("faults") or []]
    scheduled = Counter(f["kind"] for f in faults)
    applied = Counter(f["kind"] for f in faults if f.get("applied", True))
    hits = Counter(f["kind"] for f in faults if f.get("open_transaction"))
    verdicts = Counter(r["verdict"] for p in _eos(results) for r in p.get("recoveries") or [])
    control = _control(results)
    planned_phases = len((results.get("schedule") or {}).get("phases") or [])
    complete = planned_phases > 0 and len(_eos(results)) == planned_phases and "checks" in (_eos(results) or [{}])[-1]
    passed = (complete and not results.get("error")
              and all((p.get("checks") or {}).get("passed") for p in _eos(results)))
    return {
        "by_kind": {k: {"scheduled": scheduled[k], "applied": applied[k], "hit_open_transaction": hits[k]}
                    for k in KINDS},
        "faults": len(faults), "applied": sum(applied.values()), "hit_open_transaction": sum(hits.values()),
        "verdicts": dict(verdicts), "all_verdicts_ok": all(r["ok"] for p in _eos(results)
                                                           for r in p.get("recoveries") or []),
        "control_duplicates": sum(p["checks"]["output"]["duplicates"] for p in control if "checks" in p)
        if control else None,
        "control_phases": len(control),
        "exactly_once_duplicates": sum(p["checks"]["output"]["duplicates"] for p in _eos(results) if "checks" in p),
        "exactly_once_lost": sum(p["checks"]["output"]["lost"] for p in _eos(results) if "checks" in p),
        "complete": complete, "passed": passed,
    }


def markdown(results: dict[str, Any], stem: str) -> str:
    s = results["summary"]
    meta = results["meta"]
    out = [f"# Soak: exactly-once through faults, seed {results['seed']}", "",
           f"**{results['verdict']}**: " + ("exactly-once held through every fault, every verification IN_SYNC or "
                                            "KAFKA_AHEAD_SAFE, no transaction left open."
                                            if s["passed"] else "see the failures below."), "",
           f"- Command: `{meta['command']}` (replays this schedule exactly)",
           f"- Started {meta['started']}, wall time {results['wall_s'] / 60:.1f} min; git {meta['git_commit']}; "
           f"{meta['machine']}",
           f"- Input: {results['schedule']['records_per_phase']:,} records per phase ({meta['input_note']}); "
           f"batches of at most {meta['batch']:,} records, transaction.timeout.ms {meta['transaction_timeout_ms']:,}",
           f"- Executor writer (the tasks' runtime): {_executor_writer(meta)}",
           f"- Cluster: 3 KRaft brokers ({_brokers(meta)}; replication 3, min.insync.replicas 2), Spark standalone "
           f"with 2 workers, "
           f"job in processing-time mode (`{meta['trigger']}`), restarted after every exit as the DAG would "
           f"(`eos abort --force`, `eos verify`)",
           f"- Faults: {s['faults']} in total, {s['applied']} applied, **{s['hit_open_transaction']} hit an open "
           f"transaction** (DescribeTransactions ONGOING at the fault, or the job's EOS-FAULT line)",
           "- Verdicts of every recovery: " + (", ".join(f"{v} {n}" for v, n in sorted(s["verdicts"].items()))
                                                 or "none"),
           "- At-least-once control (the same schedule and input on Spark's Kafka writer): " + (
               f"**{s['control_duplicates']} duplicates** ("
               + ", ".join(f"{p['label']} {p['checks']['output']['duplicates']}" for p in _control(results)
                           if "checks" in p) + ")" if s["control_duplicates"] is not None else "not run"),
           "", "## Faults by kind", "", "| kind | scheduled | applied | hit an open transaction |", "|---|---|---|---|"]
    out += [f"| {k} | {v['scheduled']} | {v['applied']} | {v['hit_open_transaction']} |"
            for k, v in s["by_kind"].items()]
    out += ["", "## Phases", "",
            "| phase | output records | duplicates | lost | unexpected | order violations | dead letters | job runs "
            "| recoveries | open txns left | wall |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in results["phases"]:
        c = p.get("checks") or {}
        o = c.get("output") or {}
        left = c.get("lingering")
        out.append(f"| {p['label']} | {o.get('output_records', '-'):,} | {o.get('duplicates', '-')} | "
                   f"{o.get('lost', '-')} | {o.get('unexpected', '-')} | {o.get('order_violations', '-')} | "
                   f"{_dlq(c.get('dlq') or {})} | {len(p.get('runs') or [])} | "
                   f"{len(p.get('recoveries') or [])} | "
                   f"{'-' if left is None else 'none' if left['clean'] else left['ongoing'] or 'some'} | "
                   f"{p.get('wall_s', 0) / 60:.1f} min |")
    if results.get("error"):
        out += ["", "## Error", "", "```", results["error"][-3000:], "```"]
    failures = [f"{p['label']}: {p['checks']}" for p in _eos(results) if not (p.get("checks") or {}).get("passed")]
    if failures:
        out += ["", "## Failed checks", ""] + [f"- {f}" for f in failures]
    out += ["", "## Fault log", "",
            "| # | phase | kind | at (s) | target | open transaction | evidence | note |",
            "|---|---|---|---|---|---|---|---|"]
    for p in results["phases"]:
        for f in p.get("faults") or []:
            evidence = ", ".join(f.get("ongoing") or []) or ("output growing" if f.get("output_growing") else "-")
            if f.get("ongoing") and f.get("seen_ms_before_fault") is not None:
                evidence += f" ONGOING {f['seen_ms_before_fault']} ms before"
            if f.get("still_ongoing_after_fault"):
                evidence += ", still open right after"
            if f.get("fired"):
                into = f.get("seen_ms_after_stall_began", "?")
                evidence = f"{f['fired']}; " + (f"{evidence} ONGOING {into} ms into the stall" if f.get("ongoing")
                                                else "no ONGOING transaction seen")
            hit = "n/a" if not f.get("applied", True) else "yes" if f.get("open_transaction") else "no"
            out.append(f"| {f['index']} | {p['label']} | {f['kind']} | {f.get('fault_s', '-')} | {f.get('target')} "
                       f"| {hit} | {evidence} | {f.get('note', '')} |")
    out += ["", f"Data: `{stem}.json`; timeline: `{stem}.png` (records/s written, faults as labelled marks).", ""]
    if results["schedule"]["records_per_phase"] >= FULL_RECORDS and results["schedule"]["faults"] >= FULL_FAULTS:
        out.append(_FULL_MARK)
    return "\n".join(out) + "\n"


def _brokers(meta: dict[str, Any]) -> str:
    if not meta.get("kafka"):
        return "Kafka version not recorded: a run from before `--kafka-version`"
    protocol = meta.get("kafka_protocol")
    return f"Kafka {meta['kafka']}" + (f", {protocol}" if protocol else "")


def _executor_writer(meta: dict[str, Any]) -> str:
    writer = meta.get("executor_writer")
    if writer == "jvm":
        return ("`jvm` (the executor JVM, the product's default: the executor writers' tasks, and from design note "
                "43 on the driver writer's spill; no Python worker there, so their drawn kill_python_worker faults "
                "kill an executor JVM)")
    if writer == "python":
        return "`python` (PySpark's Python workers)"
    return "not recorded (a run from before `--executor-writer`)"


def _dlq(dlq: dict[str, Any]) -> str:
    if dlq.get("exact"):
        return "exact"
    wrong = [f"{dlq[k]} {k}" for k in ("duplicates", "missing", "unexpected") if dlq.get(k)]
    return ", ".join(wrong) or "wrong"


def write(results: dict[str, Any], out: Path, stem: str) -> list[Path]:
    """Write the JSON, Markdown and PNG; LATEST.md too unless it holds a full soak and this is a smaller run."""
    from soak.chart import chart

    out.mkdir(parents=True, exist_ok=True)
    results["summary"] = summarize(results)
    results["verdict"] = "PASS" if results["summary"]["passed"] else "FAIL"
    paths = [out / f"{stem}.json", out / f"{stem}.md", out / f"{stem}.png"]
    paths[0].write_text(json.dumps(results, indent=2, default=str) + "\n")
    text = markdown(results, stem)
    paths[1].write_text(text)
    chart(results, paths[2])
    latest = out / "LATEST.md"
    full = _FULL_MARK in text
    if full or not latest.exists() or _FULL_MARK not in latest.read_text():
        latest.write_text(text)
        paths.append(latest)
    return paths
