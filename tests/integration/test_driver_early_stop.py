"""A SIGTERM while the real driver starts stops it cleanly (``spark/stop_request.py``).

``stop_stream``, a killed driver task and ``eos run`` send SIGTERM to the Python driver. Its handler
was installed only once the Spark session, the lease and the query had started: a SIGTERM before that
took Python's default action and killed the driver, with its lease held when it had taken it (recovery
then waited ttl + 25 s for the lease to expire). The handler now comes first.
"""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

import psutil
import pytest

from airflow_provider_eos.core.driver import DRIVER_TOKEN_ENV
from airflow_provider_eos.core.driver_lease import read_driver_lease
from airflow_provider_eos.spark.stop_request import STOPPED_WHILE_STARTING
from tests.support.pipeline import PipelineHarness, json_events, kill_group, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _pid_file(job: psutil.Process) -> Path | None:
    """The pid file ``eos run`` gave the driver (``$EOS_DRIVER_PID_FILE`` of spark-submit, which passes it on)."""
    for child in job.children(recursive=True):
        try:
            if found := child.environ().get("EOS_DRIVER_PID_FILE"):
                return Path(found)
        except psutil.Error:
            continue
    return None


def _start(bootstrap: str, tmp_path: Path) -> tuple[PipelineHarness, object, Path, Path]:
    """Start the real job with a driver token (the driver takes its lease); returns its pid file's path."""
    harness = PipelineHarness(bootstrap, tmp_path, trigger="2 seconds")
    harness.produce_input(json_events(50)[0])
    job, log_path = harness.start(env_extra={DRIVER_TOKEN_ENV: f"eos-early-stop-{uuid.uuid4().hex[:8]}"})
    found: dict[str, Path] = {}

    def submitted() -> bool:
        pid_file = _pid_file(psutil.Process(job.pid))
        if pid_file is not None:
            found["pid_file"] = pid_file
        return pid_file is not None

    assert wait_for(submitted, 120, 0.02), log_path.read_text()[-4000:]
    return harness, job, log_path, found["pid_file"]


def _driver_pid(pid_file: Path) -> int | None:
    """The Python driver's pid once it wrote it (past its first lines); spark-submit's JVM is not the driver."""
    try:
        text = pid_file.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def test_a_sigterm_before_spark_started_stops_the_driver_cleanly(bootstrap: str, tmp_path: Path) -> None:
    harness, job, log_path, pid_file = _start(bootstrap, tmp_path)
    try:
        assert wait_for(lambda: _driver_pid(pid_file) is not None, 120, 0.02), log_path.read_text()[-4000:]
        os.kill(_driver_pid(pid_file), signal.SIGTERM)  # as stop_stream does: to the Python driver only
        returncode = job.wait(120)
    finally:
        kill_group(job)
    log = log_path.read_text(errors="replace")
    assert returncode == 0, f"the driver died of the SIGTERM (exit {returncode}):\n{log[-4000:]}"
    assert STOPPED_WHILE_STARTING in log, log[-4000:]
    assert harness.checkpoint().latest_committed_batch() is None, "no batch may run after the stop"


def test_a_sigterm_once_the_lease_is_taken_releases_it(bootstrap: str, tmp_path: Path) -> None:
    harness, job, log_path, pid_file = _start(bootstrap, tmp_path)
    checkpoint = harness.checkpoint()
    try:
        # The lease is written right before the query starts: the SIGTERM lands while it starts (or just after).
        assert wait_for(lambda: read_driver_lease(checkpoint) is not None, 240, 0.02), log_path.read_text()[-4000:]
        os.kill(_driver_pid(pid_file), signal.SIGTERM)
        returncode = job.wait(120)
    finally:
        kill_group(job)
    log = log_path.read_text(errors="replace")
    assert returncode == 0, f"the driver died of the SIGTERM (exit {returncode}):\n{log[-4000:]}"
    lease = read_driver_lease(checkpoint)
    assert lease is not None and lease.released, f"the lease was left to expire: {lease}\n{log[-4000:]}"
