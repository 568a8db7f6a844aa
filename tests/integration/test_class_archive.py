"""The suite's Spark driver class archive (``tests.support.class_archive``) is written and every spark-submit maps it.

Without it every Spark driver of the suite loads Spark's classes itself: about 4 CPU seconds more per
driver, unseen in any test's result (the archive's application failed in every full run from
823c8bf to 667d96c, its Python without pandas, and nothing said so).
"""

from __future__ import annotations

import os
import subprocess

from airflow_provider_eos.spark.submit_command import spark_submit_executable
from tests.support import class_archive


def test_the_driver_class_archive_is_written_and_every_spark_submit_maps_it() -> None:
    # A full run wrote it before its workers started; a run of this module alone writes it now (once per
    # JDK and PySpark installation: it is kept between runs).
    assert class_archive.write_now(), f"no class archive at {class_archive.archive_path()}"
    options = os.environ.get("SPARK_SUBMIT_OPTS", "")
    assert f"-XX:SharedArchiveFile={class_archive.archive_path()}" in options, options
    # -Xshare:on: a JVM that cannot map the archive (another class path or JDK, a broken file) does not start.
    done = subprocess.run([spark_submit_executable(), "--version"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SPARK_SUBMIT_OPTS": f"{options} -Xshare:on"}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "version" in done.stdout + done.stderr
