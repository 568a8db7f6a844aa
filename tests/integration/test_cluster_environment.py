"""The job's environment travels with it (issue 11): ``eos package`` and the pipeline on a standalone cluster.

``eos package`` builds the packed environment for real (venv + pip + venv-pack; reused while its
inputs are unchanged, so the session fixture prints whether it built and how long it took). The
pipeline then runs through ``eos run --environment`` on the session's 2-worker standalone cluster
with executor writers, its output exact, and every task reports the interpreter it ran: the
archive's, unpacked in its executor's work folder, never the test (Airflow worker's) venv, even
though the submitting process points ``PYSPARK_PYTHON`` at that venv. The archive has no PySpark:
the workers' Python gets it from Spark itself.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.pipeline import JobResult, PipelineHarness, assert_exactly_once, json_events, kill_group

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SITE_PACKAGES = "lib/python3.11/site-packages/"


@pytest.fixture(scope="session")
def job_environment() -> Path:
    """``eos package`` into the EOS home: built once, reused by later sessions while nothing changed."""
    from airflow_provider_eos.devstack.jars import eos_home

    out = eos_home() / "job-environments" / "eos-job-env.tar.gz"
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "airflow_provider_eos.cli", "package", "--out", str(out)],
                            capture_output=True, text=True, timeout=1200, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == f"environment={out}", lines
    print(f"\neos package: {lines[0]} (wall {time.monotonic() - started:.0f} s)")
    return out


@dataclass
class PackedEnvironmentHarness(PipelineHarness):
    """The pipeline submitted with ``eos run --environment ARCHIVE``."""

    environment: Path | None = None

    def _command(self, mode: str) -> list[str]:
        return [*super()._command(mode), "--environment", str(self.environment)]


@pytest.mark.long  # CI: the packed environment runs the pipeline below
def test_eos_package_builds_the_job_runtime_without_airflow_or_pyspark(job_environment):
    with tarfile.open(job_environment) as archive:
        names = set(archive.getnames())
        python = archive.getmember("bin/python")
    top_level = {name[len(SITE_PACKAGES):].split("/", 1)[0] for name in names if name.startswith(SITE_PACKAGES)}
    assert {"confluent_kafka", "pyarrow", "pandas", "pydantic", "yaml", "airflow_provider_eos"} <= top_level
    assert "spark_jobs/transforms/json_enrich.py" in {n.removeprefix(SITE_PACKAGES) for n in names}
    assert not {name for name in top_level if name in ("airflow", "pyspark", "py4j")}, top_level
    assert python.issym() and "pyvenv.cfg" in names
    record = job_environment.with_name(job_environment.name + ".eos.json")
    assert record.is_file(), "the recipe's fingerprint is recorded beside the archive"


def test_pipeline_on_the_standalone_cluster_runs_the_packed_environment_exactly_once(
    bootstrap, tmp_path, spark_standalone, job_environment
):
    # The Python executor writer: its tasks run in the executors' Python, which must be the packed one
    # (the JVM writer's tasks run no Python for json_enrich).
    harness = PackedEnvironmentHarness(bootstrap, tmp_path, partitions=2, writers="executors", executor_writer="python",
                                       max_offsets_per_trigger=1000, master=spark_standalone.master_url,
                                       environment=job_environment)
    records, valid_ids, malformed = json_events(3000, malformed_every=41)
    harness.produce_input(records, aborted_every=3)

    started = time.monotonic()
    # The submitting process's own interpreter is what a leaked PYSPARK_PYTHON would make the executors run.
    process, log_path = harness.start(env_extra={"PYSPARK_PYTHON": sys.executable})
    try:
        returncode = process.wait(600)
    finally:
        kill_group(process)
    seconds = time.monotonic() - started
    log = log_path.read_text(errors="replace")
    print(f"\nspark-submit on {spark_standalone.master_url} with the packed environment: {seconds:.0f} s")
    assert returncode == 0, log[-4000:]
    assert_exactly_once(harness, valid_ids, malformed)

    assert f"--archives {job_environment}#environment" in log
    tasks = JobResult(returncode, log).batch_lines("EOS-TASK")
    assert sum(t["rows_out"] + t["rows_dlq"] for t in tasks) == len(records)
    interpreters = {t["python"] for t in tasks}
    venv = str(Path(sys.executable).parent)
    for python in interpreters:
        assert python.endswith("/environment/bin/python"), interpreters
        assert not python.startswith(venv) and python != sys.executable, interpreters
    # One executor per worker, each with the archive unpacked in its own work folder.
    assert len(interpreters) == 2, interpreters

