"""Finding, stopping and confirming the end of a driver's processes on this host (real processes)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

from airflow_provider_eos.core.driver import DRIVER_TOKEN_ENV, DriverHandle, driver_token
from airflow_provider_eos.spark.driver_processes import observe, stop_driver, this_host

# A stand-in driver that stops cleanly on SIGTERM (as the job's driver does between batches), and
# a child that ignores SIGTERM (as a stuck worker would): the stop must end both.
DRIVER = """
import signal, subprocess, sys, time
stuck = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
child = subprocess.Popen([sys.executable, "-c", stuck])
def stop(*_):
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
time.sleep(600)
"""


def _start(tmp_path: Path, token: str, script: str = DRIVER) -> subprocess.Popen:
    entry = tmp_path / "eos_job.py"
    entry.write_text(script)
    return subprocess.Popen([sys.executable, str(entry)], env={**os.environ, DRIVER_TOKEN_ENV: token})


def _handle(token: str) -> DriverHandle:
    return DriverHandle(pipeline="p", token=token, host=this_host(), submitted_at=dt.datetime.now(dt.UTC))


def test_processes_of_the_token_are_found_stopped_and_then_positively_gone(tmp_path: Path) -> None:
    token = driver_token("p", "eos_pipeline", f"manual__{time.time()}")
    other_token = driver_token("p", "eos_pipeline", f"another-run-{time.time()}")
    (tmp_path / "other").mkdir()
    other = _start(tmp_path / "other", other_token)
    driver = _start(tmp_path, token)
    try:
        deadline = time.monotonic() + 20
        while len(observe(_handle(token)).processes) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        alive = observe(_handle(token))
        assert alive.liveness.value == "ALIVE" and len(alive.processes) == 2, alive
        assert {p.pid for p in alive.processes if p.is_python_driver} == {driver.pid}

        seen = stop_driver(_handle(token), grace_s=5, kill_wait_s=10)
        assert seen.gone, seen
        assert driver.wait(timeout=5) == 0, "the driver got SIGTERM first and stopped cleanly"
        assert other.poll() is None, "another run's driver was touched"
        assert observe(_handle(other_token)).liveness.value == "ALIVE"
    finally:
        for each in (token, other_token):  # the children too, which ignore SIGTERM
            stop_driver(_handle(each), grace_s=0, kill_wait_s=10)
        for process in (driver, other):
            process.wait(timeout=10)


def test_nothing_carries_an_unused_token() -> None:
    seen = observe(_handle(driver_token("p", "eos_pipeline", "never-submitted")))
    assert seen.gone and seen.processes == ()
