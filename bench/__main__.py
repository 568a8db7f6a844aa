"""``python -m bench [--quick] [--only NAME ...] [--kafka-version X.Y.Z]``: run the benchmarks on one broker and
write the results.

Benchmarks (in this order): scale, throughput, cluster (the executor writers on one and two
workers of a standalone cluster, and on two with headers in the input), control (the executor
writers' control-record cost), memory, profile, latency, recovery. The broker (of
``--kafka-version``, the devstack's default unless given) is started in a temporary folder and
always stopped; every job subprocess is killed on the way out.
Full runs write ``bench/results/<date>.{json,md,png}`` and ``LATEST.md``; ``--quick`` and
``--only`` runs write ``<date>-quick.*`` / ``<date>-<names>.*`` and leave ``LATEST.md`` alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from airflow_provider_eos.devstack.jars import KAFKA_VERSION, KAFKA_VERSIONS, kafka_version_argument
from bench.job import kill_tracked
from bench.measure import log
from bench.run_record import (
    broker_facts,
    collect_loads,
    command_line,
    git_commit,
    machine,
    result_stem,
    versions,
    write_results,
)

BENCHES = ("scale", "throughput", "cluster", "control", "memory", "profile", "latency", "recovery")
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Config:
    records: int = 1_000_000
    batch: int = 100_000
    # 6 modes per repetition (a, and b/n/c_d/c_e/c_p on local[2]), on two inputs (with and without headers).
    repetitions: int = 3
    # Local cores of the throughput table's Spark jobs (eos run --master local[N]); the targets are on
    # local[2] and on the standalone cluster (bench/cluster.py), whose 1 -> 2 workers is the scaling.
    throughput_cores: tuple[int, ...] = (2,)
    # The throughput table, and the cluster's two-worker runs, again on an input where every k-th record
    # carries a header (0: not run): users' records do, on some rows, and the writers must not slow down on the mix.
    throughput_headers_every: int = 10
    # Only these modes of the throughput table (``--letters``, e.g. b,c_e,c_p); ``None``: every mode.
    throughput_letters: tuple[str, ...] | None = None
    # Rounds of every mode before the first throughput table's repetitions, counted in no figure: they warm
    # the fresh broker's JIT on every mode's work (bench/throughput.py says why). The later tables find it warm.
    warm_up_rounds: int = 3
    control_records: int = 400_000
    control_batches: tuple[int, ...] = (10_000, 100_000)
    # The cost is a count (markers per batch), not a timing: one repetition of each layout and batch size.
    control_repetitions: int = 1
    control_modes: tuple[str, ...] = ("c_e", "c_d")
    latency_rate: int = 2_000
    latency_duration_s: int = 60
    latency_modes: tuple[str, ...] = ("exactly-once executors", "at-least-once", "exactly-once driver")
    recovery_records: int = 40_000
    recovery_batch: int = 10_000
    recovery_kill_batch: int = 2
    recovery_repetitions: int = 3
    scale_partitions: int = 10_000
    scale_transactions: int = 10_000
    scale_topics: int = 100
    scale_repetitions: int = 5
    # ``--broker-core``: the broker alone on this core, the jobs on the others (bench/cpu_pinning.py).
    broker_core: int | None = None
    notes: list[str] = field(default_factory=list)


QUICK = Config(records=100_000, batch=25_000, repetitions=1, latency_rate=500, latency_duration_s=15,
               latency_modes=("exactly-once executors", "at-least-once"), control_records=40_000,
               control_batches=(4_000, 20_000), control_repetitions=1, control_modes=("c_e", "c_d"),
               recovery_records=8_000, recovery_batch=2_000, recovery_repetitions=1,
               scale_topics=20, scale_repetitions=2, warm_up_rounds=0)


def run_benches(selected: list[str], config: Config, work_dir: Path, results: dict[str, Any], *,
                kafka_version: str = KAFKA_VERSION) -> None:
    from airflow_provider_eos.devstack.broker import LocalKafka
    from bench import cluster, control_records, latency, memory, profile_sink, recovery, scale, throughput
    from bench.cpu_pinning import pin_broker
    from bench.process_tree import listener_pid

    kafka = LocalKafka(work_dir / "kafka")
    try:
        info = kafka.up(kafka_version=kafka_version)
        bootstrap = info.bootstrap_servers
        results["meta"].update(broker_facts(info))
        if config.broker_core is not None:
            pid = listener_pid(bootstrap)
            if pid is None:
                raise RuntimeError(f"--broker-core: no process listens on {bootstrap}")
            results["meta"]["cpu_pinning"] = pin_broker(pid, config.broker_core)
        log(f"broker Kafka {info.kafka_version} {bootstrap} ({results['meta']['kafka_protocol']}; state "
            f"{work_dir / 'kafka'})")
        data = mixed_data = None

        def guarded(name: str, call: Callable[[], dict[str, Any]], store: bool = True) -> dict[str, Any] | None:
            """Run one benchmark; a failure is recorded and the others still run."""
            started = time.monotonic()
            value = None
            try:
                value = call()
                if store:
                    results[name] = value
            except Exception:
                results.setdefault("errors", {})[name] = traceback.format_exc()
                log(f"{name} FAILED:\n{traceback.format_exc()}")
            finally:
                kill_tracked()
            log(f"{name} took {time.monotonic() - started:.0f}s")
            return value

        if "scale" in selected:
            guarded("scale", lambda: scale.run(bootstrap, work_dir, partitions=config.scale_partitions,
                                               transactions=config.scale_transactions, topics=config.scale_topics,
                                               repetitions=config.scale_repetitions))
        if "throughput" in selected:
            def do_throughput() -> dict[str, Any]:
                nonlocal data
                result, data = throughput.run(bootstrap, work_dir, records=config.records, batch=config.batch,
                                              repetitions=config.repetitions, cores=config.throughput_cores,
                                              letters=config.throughput_letters,
                                              warm_up_rounds=config.warm_up_rounds)
                return result

            guarded("throughput", do_throughput)
            if config.throughput_headers_every:
                def do_mixed_headers() -> dict[str, Any]:
                    nonlocal mixed_data
                    result, mixed_data = throughput.run(
                        bootstrap, work_dir, records=config.records, batch=config.batch,
                        repetitions=config.repetitions, cores=config.throughput_cores,
                        headers_every=config.throughput_headers_every, letters=config.throughput_letters)
                    return result

                guarded("throughput_mixed_headers", do_mixed_headers)
        if "cluster" in selected:
            def do_cluster() -> dict[str, Any]:
                nonlocal data
                data = data or throughput.prepare_input(bootstrap, config.records)
                return cluster.run(bootstrap, work_dir, data=data, batch=config.batch,
                                   repetitions=config.repetitions)

            guarded("cluster", do_cluster)
            if config.throughput_headers_every:
                def do_cluster_mixed_headers() -> dict[str, Any]:
                    nonlocal mixed_data
                    mixed_data = mixed_data or throughput.prepare_input(
                        bootstrap, config.records, headers_every=config.throughput_headers_every)
                    return cluster.run(bootstrap, work_dir, data=mixed_data, batch=config.batch,
                                       repetitions=config.repetitions, letters_on_cluster=cluster.LETTERS_WITH_HEADERS)

                guarded("cluster_mixed_headers", do_cluster_mixed_headers)
        if "control" in selected:
            guarded("control", lambda: control_records.run(
                bootstrap, work_dir, records=config.control_records, batches=config.control_batches,
                repetitions=config.control_repetitions, letters=config.control_modes))
        if "memory" in selected:
            guarded("memory", lambda: memory.run(bootstrap, work_dir, batch=config.batch))
        if "profile" in selected:
            def do_profile() -> dict[str, Any]:
                nonlocal data
                data = data or throughput.prepare_input(bootstrap, config.records)
                return profile_sink.run(bootstrap, work_dir, input_topic=data.topic, records=len(data.records),
                                        batch=config.batch)

            guarded("profile", do_profile)
        data = None  # the input records are held in memory; the rest does not need them
        if "latency" in selected:
            results["latency"] = {}
            for mode in config.latency_modes:
                value = guarded(f"latency {mode}", lambda mode=mode: latency.run(
                    bootstrap, work_dir, mode=mode, rate=config.latency_rate, duration_s=config.latency_duration_s,
                    batch=config.batch), store=False)
                if value is not None:
                    results["latency"][mode] = value
        if "recovery" in selected:
            guarded("recovery", lambda: recovery.run(bootstrap, work_dir, records=config.recovery_records,
                                                     batch=config.recovery_batch,
                                                     kill_batch=config.recovery_kill_batch,
                                                     repetitions=config.recovery_repetitions))
    finally:
        kill_tracked()
        kafka.down()


def _producer_setting(text: str) -> tuple[str, str | int | bool]:
    """``KEY=VALUE`` with the value typed as the settings are (an int, true/false, else the text)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (e.g. compression.type=none)")
    if value.lower() in ("true", "false"):
        return key, value.lower() == "true"
    return key, int(value) if value.isdigit() else value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small smoke run (minutes), results suffixed -quick")
    parser.add_argument("--only", action="append", choices=BENCHES, metavar="NAME",
                        help=f"run only this benchmark (repeatable): {', '.join(BENCHES)}")
    parser.add_argument("--out", type=Path, help="results folder (default bench/results; with --render, the JSON's)")
    parser.add_argument("--records", type=int, metavar="N",
                        help="input records of the throughput table (default 1,000,000; recorded in the results)")
    parser.add_argument("--batch", type=int, metavar="N",
                        help="max_offsets_per_trigger of the throughput table (default 100,000)")
    parser.add_argument("--repetitions", type=int, metavar="N", help="repetitions of the throughput table (default 3)")
    parser.add_argument("--letters", metavar="L,L", type=lambda v: tuple(v.split(",")),
                        help="throughput table: only these modes (a, b, n, c_d, c_e, c_p; default all; c_dp, "
                        "the driver writer spilling from Python workers, only when named)")
    parser.add_argument("--cores", metavar="N,N", type=lambda v: tuple(int(c) for c in v.split(",")),
                        help="throughput table: local cores of the Spark jobs (default 1,2)")
    parser.add_argument("--headers-every", type=int, metavar="K",
                        help="throughput table and cluster on a mixed-headers input too, a header every K records "
                             "(0: not run)")
    parser.add_argument("--producer-setting", action="append", metavar="KEY=VALUE", type=_producer_setting,
                        help="override a producer setting of every mode that writes (repeatable; e.g. "
                             "compression.type=none); recorded in the results")
    parser.add_argument("--kafka-version", type=kafka_version_argument, default=KAFKA_VERSION, metavar="X.Y.Z",
                        help=f"the broker's Apache Kafka version, from Maven Central on first use (default "
                             f"{KAFKA_VERSION}; tested: {', '.join(KAFKA_VERSIONS)}; 3.9.0 or later); recorded "
                             "in the results")
    parser.add_argument("--broker-core", type=int, metavar="N",
                        help="run the broker alone on core N and everything else on the other cores (a broker on "
                             "a machine of its own; not the targets' shape); recorded in the results")
    parser.add_argument("--warm-up-rounds", type=int, metavar="N",
                        help="rounds of every mode before the throughput table's repetitions, counted in no figure "
                             "(default 3, --quick 0): they warm the fresh broker's JIT; recorded in the results")
    parser.add_argument("--keep-work", action="store_true", help="keep the temporary folder (job logs, checkpoints)")
    parser.add_argument("--render", type=Path, metavar="JSON",
                        help="only rewrite the markdown, chart (and LATEST.md) from a results JSON; runs nothing")
    args = parser.parse_args(argv)
    if args.render:
        results = json.loads(args.render.read_text())
        meta = results["meta"]
        write_results(results, args.out or args.render.parent,
                      full=not meta["quick"] and list(meta["selected"]) == list(BENCHES))
        return 0
    selected = [b for b in BENCHES if not args.only or b in args.only]
    config = QUICK if args.quick else Config()
    for name in ("records", "batch", "repetitions"):
        if getattr(args, name):
            config = replace(config, **{name: getattr(args, name)})
    for name, field_name in (("letters", "throughput_letters"), ("cores", "throughput_cores"),
                             ("warm_up_rounds", "warm_up_rounds"),
                             ("headers_every", "throughput_headers_every"), ("broker_core", "broker_core")):
        if getattr(args, name) is not None:
            config = replace(config, **{field_name: getattr(args, name)})

    # Every writing mode reads the one dict (bench.specs.PRODUCER_SETTINGS): an override changes them all alike.
    from bench.specs import PRODUCER_SETTINGS

    PRODUCER_SETTINGS.update(dict(args.producer_setting or []))

    # A SIGTERM to the bench must still stop the broker and the jobs (the finally blocks run).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    today = dt.date.today().isoformat()
    started = dt.datetime.now()
    results: dict[str, Any] = {"meta": {
        "date": today, "quick": args.quick, "selected": selected, "command": command_line(args),
        "started": started.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine(), "versions": versions(),
        "git_commit": git_commit(), "loadavg_start": os.getloadavg(), "config": asdict(config),
        # What was asked; run_benches replaces it with what the broker ran, and adds its protocol.
        "kafka": args.kafka_version,
    }}
    work_dir = Path(tempfile.mkdtemp(prefix="eos-bench-"))
    log(f"work folder {work_dir}; running {', '.join(selected)}{' (quick)' if args.quick else ''}")
    try:
        run_benches(selected, config, work_dir, results, kafka_version=args.kafka_version)
    finally:
        if args.keep_work:
            log(f"kept {work_dir}")
        else:
            shutil.rmtree(work_dir, ignore_errors=True)
    finished = dt.datetime.now()
    loads = collect_loads({k: v for k, v in results.items() if k != "meta"}, [])
    results["meta"].update(
        finished=finished.strftime("%Y-%m-%d %H:%M:%S"), duration_min=(finished - started).total_seconds() / 60,
        loadavg_end=os.getloadavg(),
        load_summary=(f"{min(loads):.2f} to {max(loads):.2f} (median {sorted(loads)[len(loads) // 2]:.2f}) "
                      f"over {len(loads)} measurements") if loads else "not recorded",
    )
    out, full = args.out or RESULTS, not args.quick and not args.only
    stem = result_stem(results["meta"], full=full)
    if (out / f"{stem}.json").exists():
        # A second run of the day keeps the first's files: its own stem names its start time.
        results["meta"]["stem"] = f"{stem}-{started:%H%M}"
    write_results(results, out, full=full)
    return 1 if results.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
