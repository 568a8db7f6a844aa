"""Where a batch's time goes: cProfile of the exactly-once driver path, Spark's own phases, and the JVM.

``python -m bench.profile_sink --spec FILE --mode MODE --out FILE.json`` runs the real job
(:func:`airflow_provider_eos.spark.job.run_pipeline`) in this Python process with local Spark
and the connector jars, and records:

* Spark's per-batch phases (``StreamingQueryProgress.durationMs``: ``latestOffset``,
  ``queryPlanning``, ``walCommit``, ``addBatch`` (the sink), ``commitOffsets``...) through an
  extra query listener;
* for exactly-once, a cProfile of the sink: :class:`ExactlyOnceKafkaSink` is replaced by a
  subclass whose ``__call__`` enables one :class:`cProfile.Profile` around each batch.
  ``foreachBatch`` calls the sink from a Py4J callback thread and cProfile profiles only the
  thread that enables it, hence the switch inside the call. Time inside the JVM (``toArrow``)
  shows as time reading the Arrow stream from the JVM's socket;
* a Java Flight Recording of the JVM (see :mod:`bench.jvm_profile`), when the spec's Spark conf
  asks for one.

:func:`run` (used by ``python -m bench``) runs this module as a subprocess for both modes on
the throughput input and collects the results.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import logging
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# Function-name fragments of the sink path, in the order the sink calls them.
KEY_FUNCTIONS = {
    "sink batch (ExactlyOnceKafkaSink.__call__)": "sink.py:__call__",
    "the batch's plan (executed plan, input partitions)": "sink.py:_plan",
    "executor writers (driver side)": "executor_writers.py:write",
    "  of which: the write job (mapInArrow tasks; the driver waits in collect)": "dataframe.py:collect",
    "  of which: driver commits of partitions without a task": "executor_writers.py:_commit_partitions_without_task",
    "driver writer (spill, then produce)": "driver_writer.py:write",
    "read_committed_offsets (sink group)": "group_offsets.py:read_committed_offsets",
    "checkpoint reads (query id, offsets/N)": "reader.py:_offset_log_entry",
    "waiting on the JVM's socket (a Spark job's result, Arrow)": "'recv_into' of",
    "Producer.produce calls (driver)": "'produce' of",
    "send_offsets_to_transaction (driver)": "'send_offsets_to_transaction' of",
    "commit_transaction (driver)": "'commit_transaction' of",
}
SINK_TOTAL = "sink batch (ExactlyOnceKafkaSink.__call__)"
READ_ONLY = "spark-read-only"
MODES = ("exactly-once", "at-least-once", READ_ONLY)
PHASES = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets", "getBatch", "triggerExecution")


def _name(key: tuple[str, int, str]) -> str:
    filename, line, function = key
    if filename == "~":
        return function
    return f"{Path(filename).name}:{function}" + (f"@{line}" if line else "")


def summarize_profile(profile: cProfile.Profile) -> dict[str, Any]:
    stats = pstats.Stats(profile)
    entries = [(_name(key), cc, nc, tt, ct) for key, (cc, nc, tt, ct, _) in stats.stats.items()]  # type: ignore[attr-defined]
    # A module's function is matched from the start of the name: profile_sink.py's own __call__ is not the sink's.
    def matches(name: str, fragment: str) -> bool:
        return name.startswith(fragment) if ".py:" in fragment else fragment in name

    total = max((ct for name, _, _, _, ct in entries if matches(name, KEY_FUNCTIONS[SINK_TOTAL])), default=0.0)
    key_rows = {}
    for label, fragment in KEY_FUNCTIONS.items():
        matched = [e for e in entries if matches(e[0], fragment)]
        if matched:
            key_rows[label] = {"calls": sum(e[2] for e in matched),
                               "cumulative_s": round(max(e[4] for e in matched), 3),
                               "own_s": round(sum(e[3] for e in matched), 3)}
    top_own = sorted(entries, key=lambda e: -e[3])[:15]
    return {
        "sink_total_s": round(total, 3),
        "key_functions": key_rows,
        "top_own_time": [{"function": n, "calls": nc, "own_s": round(tt, 3), "cumulative_s": round(ct, 3)}
                         for n, _, nc, tt, ct in top_own],
    }


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--mode", default="exactly-once", choices=MODES)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level="INFO", stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)

    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQueryListener

    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.devstack.jars import executor_writer_jar, spark_connector_jars
    from airflow_provider_eos.spark import job as job_module
    from airflow_provider_eos.spark.sink import ExactlyOnceKafkaSink
    from airflow_provider_eos.spark.submit_command import DEFAULT_CONF

    profile = cProfile.Profile()
    calls: list[float] = []
    phases: list[dict[str, Any]] = []

    class ProfiledSink(ExactlyOnceKafkaSink):
        def __call__(self, batch, batch_id: int) -> None:
            started = time.perf_counter()
            profile.enable()
            try:
                super().__call__(batch, batch_id)
            finally:
                profile.disable()
                calls.append(time.perf_counter() - started)

    class PhaseListener(StreamingQueryListener):
        def onQueryStarted(self, event) -> None:
            pass

        def onQueryProgress(self, event) -> None:
            progress = event.progress
            phases.append({"batch_id": progress.batchId, "rows_in": progress.numInputRows,
                           **{k: v for k, v in (progress.durationMs or {}).items() if k in PHASES}})

        def onQueryIdle(self, event) -> None:
            pass

        def onQueryTerminated(self, event) -> None:
            pass

    job_module.ExactlyOnceKafkaSink = ProfiledSink  # type: ignore[misc]
    spec = PipelineSpec.load(args.spec)
    builder = SparkSession.builder.master("local[2]").appName("eos-bench-profile")
    # The connector's jars and, for the default executor writer, its own (as `eos run` adds them).
    jars = [*spark_connector_jars(), executor_writer_jar(build=False)]
    builder = builder.config("spark.jars", ",".join(str(j) for j in jars))
    for key, value in {**DEFAULT_CONF, **spec.spark_conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark.streams.addListener(PhaseListener())
    try:
        if args.mode == READ_ONLY:
            code = _read_only(spark, spec, job_module)
        else:
            code = job_module.run_pipeline(spark, spec, args.mode)
    finally:
        spark.stop()
    summary: dict[str, Any] = {"mode": args.mode, "spark_phases": phases}
    if args.mode == "exactly-once":
        summary.update(summarize_profile(profile), sink_calls_wall_s=[round(c, 3) for c in calls])
        pstats.Stats(profile).sort_stats("cumulative").dump_stats(str(Path(args.out).with_suffix(".prof")))
    Path(args.out).write_text(json.dumps(summary, indent=2))
    return code


def _read_only(spark, spec, job_module) -> int:
    """The job's source and transform with Spark's ``noop`` sink: what Spark alone costs per batch."""

    def noop(batch, batch_id: int) -> None:
        batch.write.format("noop").mode("overwrite").save()

    frame = job_module.load_transform(spec.transform)(job_module.read_source(spark, spec))
    query = (frame.writeStream.foreachBatch(noop).option("checkpointLocation", spec.checkpoint_location)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return 0 if query.exception() is None else 1


def _phase_totals(phases: list[dict[str, Any]]) -> dict[str, Any]:
    """Seconds per Spark phase over all batches, and each phase's share of triggerExecution."""
    totals = {k: sum(p.get(k) or 0 for p in phases) / 1000 for k in PHASES}
    trigger = totals["triggerExecution"] or 1
    known = sum(v for k, v in totals.items() if k != "triggerExecution")
    return {"seconds": {k: round(v, 2) for k, v in totals.items()},
            "share": {k: round(v / trigger, 3) for k, v in totals.items() if k != "triggerExecution"}
            | {"other": round((trigger - known) / trigger, 3)}}


def run(bootstrap: str, work_dir: Path, *, input_topic: str, records: int, batch: int) -> dict[str, Any]:
    """Each mode on the same input with a flight recording; exactly-once also with cProfile."""
    from bench import jvm_profile
    from bench.job import track
    from bench.kafka_io import create_topics, delete_topics, unique
    from bench.measure import loadavg, log
    from bench.specs import write_spec

    repo = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}
    result: dict[str, Any] = {
        "records": records, "max_offsets_per_trigger": batch,
        "note": "cProfile adds overhead to every Python call (the produce loop most); compare shares, not "
                "absolute times, with the unprofiled throughput runs",
        "modes": {},
    }
    for mode in MODES:
        name = unique(f"prof-{mode[:4]}")
        output = create_topics(bootstrap, [f"{name}-out"], 4)[0]
        recording = work_dir / name / "job.jfr"
        _, spec_file = write_spec(work_dir, bootstrap, name=name, input_topics=[input_topic], output_topic=output,
                                  max_offsets_per_trigger=batch, spark_conf={
                                      "spark.driver.extraJavaOptions": jvm_profile.JFR_OPTION.format(path=recording)})
        out = work_dir / name / "profile.json"
        log_path = work_dir / name / "job.log"
        load = loadavg()
        with log_path.open("w") as stream:
            process = track(subprocess.Popen(
                [sys.executable, "-m", "bench.profile_sink", "--spec", str(spec_file), "--mode", mode,
                 "--out", str(out)], stdout=stream, stderr=subprocess.STDOUT, env=env, cwd=work_dir / name,
                start_new_session=True))
        try:
            code = process.wait(900 + records / 1000)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(30)
            raise
        delete_topics(bootstrap, [output])
        if code != 0 or not out.exists():
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
            raise RuntimeError(f"profile run ({mode}) failed (exit {code}); log {log_path}\n{tail}")
        data = json.loads(out.read_text())
        phases = data.pop("spark_phases")
        data["phases"] = _phase_totals(phases)
        rows = sum(p.get("rows_in") or 0 for p in phases)
        data["batches"] = len(phases)
        data["records_per_s"] = round(rows / data["phases"]["seconds"]["triggerExecution"], 1)
        jvm_profile.wait_for_recording(recording)
        data["jvm"] = jvm_profile.analyze(recording)
        data["loadavg_before"] = load
        result["modes"][mode] = data
        log(f"profile ({mode}): Spark phases {data['phases']['share']}, JVM CPU {data['jvm'].get('cpu')}")
    return result


if __name__ == "__main__":
    sys.exit(_main())
