"""``python -m soak [--seed S] [--records N] [--faults F] [--writers driver,executors] [--executor-writer jvm]
[--no-control] [--kafka-version X.Y.Z]``.

Starts its own devstack (three brokers of ``--kafka-version``, a two-worker Spark standalone cluster) in a
temporary folder, always stopped, runs the seeded schedule (:mod:`soak.schedule`) through each writer (the
tasks on ``--executor-writer``, ``jvm`` by default as in the product) and, unless
``--no-control``, replays it on the at-least-once writer; writes ``<out>/<stamp>-seed<S>.{json,md,png}``
and ``LATEST.md``. The same arguments with the same seed replay the same schedule. Exit 0 when
exactly-once held (0 duplicates, 0 lost, per-key order, every verdict fine, nothing left open).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from airflow_provider_eos.devstack.jars import KAFKA_VERSION, KAFKA_VERSIONS, kafka_version_argument
from soak.job import log
from soak.schedule import DEFAULT_EXECUTOR_WRITER, EXECUTOR_WRITERS, WRITERS, build

RESULTS = Path(__file__).resolve().parent / "results"


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, help="schedule seed (default: a random one, printed and reported)")
    parser.add_argument("--records", type=int, default=1_000_000, help="input records per phase (default 1,000,000)")
    parser.add_argument("--faults", type=int, default=100,
                        help="faults in total, dealt over the writers; from 45 up each kind drawn at least 5 times "
                             "(default 100)")
    parser.add_argument("--writers", default=",".join(WRITERS), help="phases, in order (default driver,executors)")
    parser.add_argument("--executor-writer", choices=EXECUTOR_WRITERS, default=DEFAULT_EXECUTOR_WRITER,
                        help="what runs the phases' tasks (the executor writers', the driver writer's spill): the "
                             "executor JVM (jvm, the product's default) or PySpark's Python workers (python); on jvm "
                             "the soak kills executor JVMs where the schedule drew Python workers (default jvm)")
    parser.add_argument("--control", action=argparse.BooleanOptionalAction, default=True,
                        help="replay the schedule on the at-least-once writer and count its duplicates (default on)")
    parser.add_argument("--kafka-version", type=kafka_version_argument, default=KAFKA_VERSION, metavar="X.Y.Z",
                        help=f"the brokers' Apache Kafka version, from Maven Central on first use (default "
                             f"{KAFKA_VERSION}; tested: {', '.join(KAFKA_VERSIONS)}; 3.9.0 or later)")
    parser.add_argument("--batch", type=int, help="max records per batch (default: a quarter of a slice, 500..5000)")
    parser.add_argument("--transaction-timeout-ms", type=int, default=15_000,
                        help="the spec's transaction.timeout.ms (short: slow_transaction waits it out)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder (default soak/results)")
    parser.add_argument("--keep-work", action="store_true", help="keep the temporary folder (job logs, checkpoints)")
    parser.add_argument("--render", type=Path, metavar="JSON",
                        help="only rewrite the Markdown and PNG (and LATEST.md) from a results JSON; runs nothing")
    return parser.parse_args(argv)


def reproduce_command(args: argparse.Namespace, seed: int, writers: tuple[str, ...]) -> str:
    """The command line that replays this run's schedule (the report prints it).

    :param args: the parsed arguments.
    :param seed: the seed in use (drawn when ``--seed`` was not given).
    :param writers: the phases, parsed from ``--writers``.
    """
    # The executor writer always spelled out, the default too: the schedule depends on it (a JVM
    # writer's phases kill executor JVMs where a Python writer's kill Python workers), and
    # the line must replay this schedule whatever the default becomes. The Kafka version too: the same
    # schedule on another broker is another run.
    return (f"python -m soak --seed {seed} --records {args.records} --faults {args.faults} --writers "
            f"{','.join(writers)} --executor-writer {args.executor_writer} "
            f"--{'' if args.control else 'no-'}control --kafka-version {args.kafka_version}"
            + (f" --batch {args.batch}" if args.batch else "")
            + (f" --transaction-timeout-ms {args.transaction_timeout_ms}"
               if args.transaction_timeout_ms != 15_000 else ""))


def _git_commit() -> str:
    try:
        here = Path(__file__).parent
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                                cwd=here).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, check=True,
                               cwd=here).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def _machine() -> str:
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores, {mem:.0f} GiB RAM, {platform.system()}, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    from soak.report import write

    if args.render:
        results = json.loads(args.render.read_text())
        write(results, args.render.parent, args.render.stem)
        return 0 if results["verdict"] == "PASS" else 1
    from soak.run import INPUT_NOTE, TRIGGER, Settings, run_schedule

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    writers = tuple(w.strip() for w in args.writers.split(",") if w.strip())
    schedule = build(seed, records=args.records, faults=args.faults, writers=writers,
                     executor_writer=args.executor_writer)
    slice_size = min(min(p.slices) for p in schedule.phases)
    batch = args.batch or max(500, min(5000, slice_size // 4))
    settings = Settings(batch=batch, transaction_timeout_ms=args.transaction_timeout_ms, control=args.control,
                        executor_writer=args.executor_writer, kafka_version=args.kafka_version)
    command = reproduce_command(args, seed, writers)
    log(f"seed {seed}, executor writer {args.executor_writer}, Kafka {args.kafka_version}: {schedule.counts()}")
    # A SIGTERM must still stop the devstack and the jobs (the finally blocks run).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = dt.datetime.now()
    results: dict[str, Any] = {
        "seed": seed, "schedule": schedule.to_dict(), "phases": [],
        "meta": {"command": command, "started": started.strftime("%Y-%m-%d %H:%M:%S"), "git_commit": _git_commit(),
                 "machine": _machine(), "batch": batch, "transaction_timeout_ms": args.transaction_timeout_ms,
                 "executor_writer": args.executor_writer,
                 # What was asked; run_schedule replaces it with what the brokers ran, and adds their protocol.
                 "kafka": args.kafka_version,
                 "trigger": TRIGGER, "input_note": INPUT_NOTE, "loadavg_start": os.getloadavg()},
    }
    work_dir = Path(tempfile.mkdtemp(prefix="eos-soak-"))
    log(f"work folder {work_dir}")
    clock = time.monotonic()
    try:
        run_schedule(schedule, settings, work_dir, results)
    except BaseException as exc:  # Ctrl-C too: the report says how far it got
        results["error"] = traceback.format_exc()
        log(f"soak FAILED: {type(exc).__name__}: {exc}")
        if not isinstance(exc, Exception):
            _finish(results, args, clock, seed, started, work_dir, write)
            raise
    _finish(results, args, clock, seed, started, work_dir, write)
    return 0 if results["verdict"] == "PASS" else 1


def _finish(results: dict[str, Any], args: argparse.Namespace, clock: float, seed: int, started: dt.datetime,
            work_dir: Path, write: Any) -> None:
    results["wall_s"] = round(time.monotonic() - clock, 1)
    results["meta"]["loadavg_end"] = os.getloadavg()
    paths = write(results, args.out, f"{started.strftime('%Y%m%d-%H%M%S')}-seed{seed}")
    if args.keep_work:
        log(f"kept {work_dir}")
    else:
        shutil.rmtree(work_dir, ignore_errors=True)
    s = results["summary"]
    log(f"{results['verdict']}: {s['faults']} faults ({s['hit_open_transaction']} on an open transaction), "
        f"exactly-once duplicates {s['exactly_once_duplicates']}, lost {s['exactly_once_lost']}, "
        f"control duplicates {s['control_duplicates']}; wall {results['wall_s'] / 60:.1f} min")
    log("report: " + ", ".join(str(p) for p in paths))


if __name__ == "__main__":
    sys.exit(main())
