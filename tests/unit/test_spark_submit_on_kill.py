"""A killed submit task escalates: SIGTERM to the driver now, SIGKILL of its process group after a grace period.

Real processes: a stand-in driver (``eos_job.py``) in a session of its own, as the operator starts
spark-submit, that ignores SIGTERM as a driver stuck in a batch does, with a worker that does not
even carry the driver token. The task has only seconds after Airflow's SIGTERM, so ``on_kill``
returns at once and the escalation outlives it.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from airflow_provider_eos.core.driver import DRIVER_TOKEN_ENV, DriverHandle, driver_token
from airflow_provider_eos.spark.driver_processes import this_host_identity

pytestmark = pytest.mark.airflow

STUCK_DRIVER = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # stuck in a batch: SIGTERM changes nothing
stuck = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
worker = subprocess.Popen([sys.executable, "-c", stuck], env={})  # no token: only the group kill reaches it
print(worker.pid, flush=True)
time.sleep(600)
"""


def _start(folder: Path, token: str) -> subprocess.Popen:
    folder.mkdir(parents=True, exist_ok=True)
    entry = folder / "eos_job.py"
    entry.write_text(STUCK_DRIVER)
    return subprocess.Popen([sys.executable, str(entry)], env={**os.environ, DRIVER_TOKEN_ENV: token},
                            start_new_session=True, stdout=subprocess.PIPE, text=True)


def _exited(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_on_kill_sigkills_the_process_group_of_a_driver_that_ignores_sigterm_after_the_grace(tmp_path) -> None:
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    token = driver_token("p", "eos_pipeline__p", f"manual__{time.time()}")
    now = dt.datetime.now(dt.UTC)
    handle = DriverHandle(pipeline="p", token=token, submitted_at=now, earliest_start=now - dt.timedelta(minutes=1),
                          **this_host_identity().model_dump())
    driver = _start(tmp_path / "attempt-1", token)
    # The same run's next attempt (same token, another session): not this task's to kill.
    retry = _start(tmp_path / "attempt-2", token)
    try:
        worker = int(driver.stdout.readline())
        retry.stdout.readline()
        operator = EosSparkSubmitOperator(task_id="submit", spec_path="/x.yaml", kill_grace_period_s=1)
        operator._driver = handle
        operator._hook = SimpleNamespace(_submit_sp=driver)  # what the provider's hook keeps of spark-submit

        started = time.monotonic()
        operator.on_kill()
        assert time.monotonic() - started < 3, "on_kill must return within the seconds Airflow gives it"

        assert driver.wait(timeout=45) == -9, "the driver ignoring SIGTERM was not SIGKILLed"
        deadline = time.monotonic() + 15
        while not _exited(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _exited(worker), "the worker in the driver's process group outlived it"
        assert retry.poll() is None, "another attempt's driver was killed"
    finally:
        for process in (driver, retry):
            if process.poll() is None:
                os.killpg(process.pid, 9)
            process.wait(timeout=10)


def test_the_recovery_branchs_stop_kills_the_group_a_token_carrier_leads(tmp_path) -> None:
    """StopPipelineDriverOperator's stop (unscoped): the same SIGKILL of the driver's process group."""
    from airflow_provider_eos.spark.driver_processes import stop_driver

    token = driver_token("p", "eos_pipeline__p", f"manual__{time.time()}")
    now = dt.datetime.now(dt.UTC)
    handle = DriverHandle(pipeline="p", token=token, submitted_at=now, earliest_start=now - dt.timedelta(minutes=1),
                          **this_host_identity().model_dump())
    driver = _start(tmp_path, token)
    try:
        worker = int(driver.stdout.readline())
        seen = stop_driver(handle, grace_s=0.5, kill_wait_s=10)
        assert seen.gone, seen
        assert driver.wait(timeout=10) == -9
        deadline = time.monotonic() + 15
        while not _exited(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _exited(worker), "the token-less worker of the driver's group outlived the stop"
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, 9)
        driver.wait(timeout=10)
