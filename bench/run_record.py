"""What a bench run records about itself, and where its results go.

The machine, the versions, the commit, the command line that reruns it and the load it ran under
go in the results' ``meta``; :func:`write_results` writes the JSON, the markdown, the chart and,
for a full run, ``LATEST.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from bench.measure import log


def command_line(args: argparse.Namespace) -> str:
    """The command that reruns this bench: every option given, and the broker's version always spelled out."""
    return ("python -m bench" + (" --quick" if args.quick else "")
            + "".join(f" --only {name}" for name in args.only or [])
            + "".join(f" --{name} {getattr(args, name)}" for name in ("records", "batch", "repetitions")
                      if getattr(args, name))
            + (f" --letters {','.join(args.letters)}" if args.letters else "")
            + (f" --cores {','.join(map(str, args.cores))}" if args.cores else "")
            + (f" --headers-every {args.headers_every}" if args.headers_every is not None else "")
            + (f" --warm-up-rounds {args.warm_up_rounds}" if args.warm_up_rounds is not None else "")
            + "".join(f" --producer-setting {key}={value}" for key, value in args.producer_setting or [])
            + (f" --broker-core {args.broker_core}" if args.broker_core is not None else "")
            # Always spelled out: the line must rerun on the same broker whatever the default becomes.
            + f" --kafka-version {args.kafka_version}")


def machine() -> str:
    """Cores, CPU model, memory and OS: what the absolute figures were measured on."""
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kb = int(next(x for x in Path("/proc/meminfo").read_text().splitlines()
                          if x.startswith("MemTotal")).split()[1])
    except (OSError, StopIteration, ValueError):
        mem_kb = 0
    return f"{os.cpu_count()} cores ({model}), {mem_kb / 1024 / 1024:.0f} GiB RAM, {platform.system()}"


def versions() -> str:
    """The versions of what the jobs run on (Python, PySpark, confluent-kafka and librdkafka, pyarrow)."""
    import confluent_kafka
    import pyarrow
    import pyspark

    return (f"Python {platform.python_version()}, PySpark {pyspark.__version__}, confluent-kafka "
            f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]}), "
            f"pyarrow {pyarrow.__version__}")


def git_commit() -> str:
    """The commit measured, ``+dirty`` if files outside bench/ differ from it."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                                cwd=Path(__file__).parent).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", ":!bench"], capture_output=True, text=True,
                               check=True, cwd=Path(__file__).parent).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def collect_loads(node: Any, found: list[float]) -> list[float]:
    """Every 1-minute load average recorded before a measurement anywhere in ``node``, into ``found``."""
    if isinstance(node, dict):
        if "loadavg_before" in node and isinstance(node["loadavg_before"], dict):
            found.append(node["loadavg_before"]["1m"])
        for value in node.values():
            collect_loads(value, found)
    elif isinstance(node, list):
        for value in node:
            collect_loads(value, found)
    return found


def broker_facts(info: Any) -> dict[str, str]:
    """The broker the bench ran on, for its results: the version started (``kafka``) and the transaction
    protocol it announces (``kafka_protocol``); a protocol that cannot be read is said, not fatal."""
    from airflow_provider_eos.kafka.broker_protocol import describe_protocol

    try:
        protocol = describe_protocol(info.client_settings())
    except Exception as exc:  # the results say so; no benchmark depends on it
        protocol = f"not read ({type(exc).__name__}: {exc})"
    return {"kafka": info.kafka_version, "kafka_protocol": protocol}




def result_stem(meta: dict[str, Any], *, full: bool) -> str:
    """The results' file name without suffix: ``<date>``, ``<date>-quick`` or ``<date>-<benches>``, unless the run
    recorded its own (``meta["stem"]``: a later run of the same day)."""
    if meta.get("stem"):
        return meta["stem"]
    if meta["quick"]:
        return f"{meta['date']}-quick"
    return meta["date"] if full else "-".join([meta["date"], *meta["selected"]])


def write_results(results: dict[str, Any], out: Path, *, full: bool) -> None:
    from bench.report import analyze, chart, evaluate_targets, markdown

    results["targets"] = evaluate_targets(results)
    results["analysis"] = analyze(results)
    stem = result_stem(results["meta"], full=full)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    table = markdown(results)
    (out / f"{stem}.md").write_text(table)
    chart(results, out / f"{stem}.png")
    if full:
        (out / "LATEST.md").write_text(table.replace("the JSON next to this file; chart: the PNG next to it",
                                                     f"`{stem}.json`; chart: `{stem}.png`"))
    log(f"results: {out / stem}.{{json,md,png}}" + (" and LATEST.md" if full else ""))
    for target in results["targets"]:
        log(f"  {'PASS' if target['pass'] else 'MISS'} {target['target']}: {target['measured']}")
