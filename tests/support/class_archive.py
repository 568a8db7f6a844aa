"""A class-data-sharing archive of the Spark driver JVM, for the suite's many short jobs.

A test's job runs seconds; its driver JVM spends a third of its CPU loading and verifying Spark's
classes (measured: 11.3 -> 7.2 s of CPU per run of the 1,500-record json_enrich job with the archive,
wall 15.5 -> 12 s). HotSpot maps an archive of those classes instead (JDK 13+ dynamic archives:
``-XX:ArchiveClassesAtExit`` writes one when a JVM exits, ``-XX:SharedArchiveFile`` maps it).

A full run (``make test``: test workers) writes it before the workers start, with a small
application of its own (:mod:`tests.support.class_archive_job`, :func:`write_now`); a run without
workers uses the one there is. Every spark-submit the session starts (the harness's jobs, operators
under ``dag.test``, the deployment's tasks) maps it through ``SPARK_SUBMIT_OPTS`` in the session's
environment (:func:`use_in_this_process`), which the launcher adds to the client-mode driver's (the
spark-submit JVM's) command line. An archive HotSpot cannot
use (another JDK build, another class path) is ignored by the JVM (``-Xshare:auto``): the job runs
as without it. Only the tests use it; the product's jobs start as users start them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

from airflow_provider_eos.devstack.jars import eos_home

#: Where archives are kept between test runs (keyed by JDK and PySpark, see :func:`archive_path`).
CACHE_DIR = eos_home() / "class-archives"
#: HotSpot's own notes on the archive (e.g. "shared class paths mismatch") stay out of the job's log.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
_SPARK_LOG_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (INFO|WARN) ")


class ClassArchiveError(RuntimeError):
    """The application that writes the archive failed: every Spark driver of the run would start without it."""


def archive_path() -> Path:
    """The archive of this JDK and this PySpark installation: HotSpot maps an archive only for the class
    path it was written with (Spark's jars folder, so the venv's path counts) and the JDK build."""
    import pyspark

    java_home = os.environ.get("JAVA_HOME")
    java = Path(java_home) / "bin" / "java" if java_home else Path(shutil.which("java") or "java")
    java = java.resolve()
    spark_home = Path(pyspark.__file__).resolve().parent
    stamp = f"{java}:{java.stat().st_mtime_ns if java.exists() else 0}:{spark_home}:{pyspark.__version__}"
    return CACHE_DIR / f"spark-driver-{pyspark.__version__}-{hashlib.sha256(stamp.encode()).hexdigest()[:12]}.jsa"


def submit_options() -> str:
    """``SPARK_SUBMIT_OPTS`` that map the archive, or ``""`` while there is none."""
    archive = archive_path()
    return f"-XX:SharedArchiveFile={archive} {_QUIET}" if archive.exists() else ""


def use_in_this_process() -> None:
    """Every spark-submit this process starts from now on (operators under ``dag.test``, deployments
    started by the tests) maps the archive, if there is one."""
    options = submit_options()
    current = os.environ.get("SPARK_SUBMIT_OPTS", "")
    if options and "SharedArchiveFile" not in current:
        os.environ["SPARK_SUBMIT_OPTS"] = f"{current} {options}".strip()


@contextlib.contextmanager
def writing_archive() -> Iterator[dict[str, str] | None]:
    """Around the run that writes the archive: the environment that makes its driver write it, or
    ``None`` when there is one already or another process is writing it. The archive appears
    (atomically) only if the run exited 0 (``promote``)."""
    archive = archive_path()
    if archive.exists():
        yield None
        return
    archive.parent.mkdir(parents=True, exist_ok=True)
    with (archive.parent / f"{archive.name}.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        partial = archive.with_name(f"{archive.name}.{uuid.uuid4().hex[:8]}.partial")
        try:
            yield {"SPARK_SUBMIT_OPTS": f"-XX:ArchiveClassesAtExit={partial} {_QUIET}"}
        finally:
            partial.unlink(missing_ok=True)


def write_now(timeout_s: float = 300) -> bool:
    """Write the archive with :mod:`tests.support.class_archive_job` (local[2], the tests' Spark conf) unless
    there is one or another process is writing it; True when there is one afterwards.

    :raises ClassArchiveError: the application failed or ran past ``timeout_s`` (what it printed last).
    """
    import subprocess

    from airflow_provider_eos.spark.submit_command import spark_submit_executable
    from tests.support.pipeline import TEST_SPARK_CONF

    with writing_archive() as env:
        if env is None:
            return archive_path().exists()
        conf = [arg for key, value in {**TEST_SPARK_CONF, "spark.ui.enabled": "false"}.items()
                for arg in ("--conf", f"{key}={value}")]
        command = [spark_submit_executable(), "--master", "local[2]", *conf,
                   str(Path(__file__).with_name("class_archive_job.py"))]
        # The application's foreachBatch and mapInArrow run Python (with pyarrow and pandas): this interpreter's,
        # as the harness's jobs do (a bare spark-submit would take python3 from PATH).
        python = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        try:
            done = subprocess.run(command, env={**os.environ, **python, **env}, capture_output=True, text=True,
                                  errors="replace", timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as timed_out:
            raise ClassArchiveError(f"the class archive's application ran past {timeout_s:.0f} s") from timed_out
        if done.returncode != 0:
            # Spark's INFO lines of its shutdown come after the error.
            errors = [line for line in done.stderr.splitlines() if not _SPARK_LOG_LINE.match(line)]
            tail = "\n".join(errors[-15:])
            raise ClassArchiveError(f"the class archive's application exited {done.returncode}:\n{tail}")
        promote(env)
    return archive_path().exists()


def promote(env: dict[str, str] | None) -> None:
    """The run under ``writing_archive`` exited 0: its archive becomes the one every later run maps."""
    if not env:
        return
    partial = Path(env["SPARK_SUBMIT_OPTS"].split("=", 1)[1].split()[0])
    if partial.exists() and partial.stat().st_size > 0:
        os.replace(partial, archive_path())
        use_in_this_process()
