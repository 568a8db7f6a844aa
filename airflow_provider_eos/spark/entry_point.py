"""The job's driver program: ``eos_job.py --spec FILE [--mode exactly-once|at-least-once]``.

Another ``--mode`` is accepted only when a sink plug-in is acknowledged (:mod:`.sink_points`; the
bench's ``noop``), which then supplies its sink.

spark-submit runs ``spark_jobs/eos_job.py`` (:data:`~airflow_provider_eos.core.driver.ENTRY_SCRIPT`),
a thin shell that calls :func:`main`; what the driver does lives here, in the product package.

``--spec`` is a path where the driver runs, or the base name of a spec shipped with ``--files``:
in cluster deploy mode the cluster puts it in the driver's working folder (YARN) or Spark's
files folder (:class:`pyspark.SparkFiles`, once the session is up).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path


def local_spec_file(given: str) -> Path | None:
    """Where the driver finds the spec before Spark starts; ``None``: a shipped one, ask SparkFiles.

    An absolute path is the file (loading names it if it is missing); a bare name is looked up in
    the working folder, where YARN puts ``--files`` of a cluster-mode driver.
    """
    path = Path(given)
    if path.is_absolute():
        return path
    for candidate in (path, Path.cwd() / path.name):
        if candidate.is_file():
            return candidate
    return None


def application_name(pipeline: str) -> str:
    """The Spark application's name: the driver token when there is one, so the standalone master's
    record of the application can be found by it from any worker (``core/cluster_records.py``);
    ``eos-<pipeline>`` otherwise. The token is ``eos-<pipeline>-<digest>``: it still reads as the pipeline.

    A client-mode driver names its application itself (spark-submit's ``--name`` is only a default).
    """
    from airflow_provider_eos.core.driver import DRIVER_TOKEN_ENV

    return os.environ.get(DRIVER_TOKEN_ENV) or f"eos-{pipeline}"


def main(argv: list[str] | None = None) -> int:
    """Load the spec, start Spark and run the pipeline; returns the process exit code.

    The SIGTERM handler comes first: a stop requested while Spark, the lease or the query starts ends
    the driver cleanly at the next step (exit 0, its lease released), not by Python's default action.
    """
    from airflow_provider_eos.spark.stop_request import stop_on_sigterm, stopped_while_starting

    # First: from here on a SIGTERM (stop_stream, on_kill, `eos run`) asks for a stop instead of killing.
    stop = stop_on_sigterm()
    from airflow_provider_eos.core.spec import Mode

    parser = argparse.ArgumentParser(description="Run one exactly-once pipeline")
    parser.add_argument("--spec", required=True)
    from airflow_provider_eos.spark.sink_points import run_mode

    parser.add_argument("--mode", default=None, type=run_mode, help=f"one of {', '.join(m.value for m in Mode)}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("EOS_LOG_LEVEL", "INFO"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)

    from pyspark.sql import SparkSession

    from airflow_provider_eos.core.errors import EosError
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.spark.job import run_pipeline

    if pid_file := os.environ.get("EOS_DRIVER_PID_FILE"):
        # `eos run` forwards SIGTERM here, to the driver that can stop between batches (its handler is installed).
        with open(pid_file, "w") as out:
            out.write(str(os.getpid()))
    found = local_spec_file(args.spec)
    try:
        spec = PipelineSpec.load(found) if found else None
    except EosError as exc:
        logging.getLogger("airflow_provider_eos.job").error("EOS-ERROR %s", exc)
        return 2
    if stopped_while_starting(stop, "Spark started"):
        return 0
    builder = SparkSession.builder
    spark = (builder.appName(application_name(spec.name)) if spec else builder).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        if spec is None:
            from pyspark import SparkFiles

            spec = PipelineSpec.load(SparkFiles.get(Path(args.spec).name))
        mode = args.mode or spec.mode
        return run_pipeline(spark, spec, Mode(mode) if mode in {m.value for m in Mode} else mode, stop=stop)
    except EosError as exc:
        logging.getLogger("airflow_provider_eos.job").error("EOS-ERROR %s", exc)
        return 2
    finally:
        spark.stop()

