"""spark-submit entry point: ``eos_job.py --spec FILE [--mode exactly-once|at-least-once]``."""

from __future__ import annotations

import argparse
import logging
import os
import sys


def main(argv: list[str] | None = None) -> int:
    """Load the spec, start Spark and run the pipeline; returns the process exit code."""
    from airflow_provider_eos.core.spec import Mode

    parser = argparse.ArgumentParser(description="Run one exactly-once pipeline")
    parser.add_argument("--spec", required=True)
    parser.add_argument("--mode", default=None, choices=[mode.value for mode in Mode])
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("EOS_LOG_LEVEL", "INFO"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)

    from pyspark.sql import SparkSession

    from airflow_provider_eos.core.errors import EosError
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.spark.job import run_pipeline

    try:
        spec = PipelineSpec.load(args.spec)
    except EosError as exc:
        logging.getLogger("airflow_provider_eos.job").error("EOS-ERROR %s", exc)
        return 2
    if pid_file := os.environ.get("EOS_DRIVER_PID_FILE"):
        # `eos run` forwards SIGTERM here, to the driver that can stop between batches.
        with open(pid_file, "w") as out:
            out.write(str(os.getpid()))
    spark = SparkSession.builder.appName(f"eos-{spec.name}").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        return run_pipeline(spark, spec, Mode(args.mode or spec.mode))
    except EosError as exc:
        logging.getLogger("airflow_provider_eos.job").error("EOS-ERROR %s", exc)
        return 2
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
