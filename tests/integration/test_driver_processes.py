"""Finding, stopping and confirming the end of a driver's processes on this host (real processes)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    token = driver_token("p", "eos_pipeline__p", f"manual__{time.time()}")
    other_token = driver_token("p", "eos_pipeline__p", f"another-run-{time.time()}")
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
    seen = observe(_handle(driver_token("p", "eos_pipeline__p", "never-submitted")))
    assert seen.gone and seen.processes == ()


# Runs as root, becomes `nobody`, then observes: every import happens first (the interpreter lives
# under /root, which `nobody` cannot enter).
OBSERVER = """
import json, os, sys
from airflow_provider_eos.core.driver import DriverHandle
from airflow_provider_eos.spark.driver_processes import observe
handle = DriverHandle.model_validate_json(sys.argv[1])
os.setgroups([]); os.setgid(65534); os.setuid(65534)
print(json.dumps(observe(handle).model_dump(mode="json")))
"""
# The driver's user is `nobody` too, but the process made itself non-dumpable (as a process that changed
# its user does): its /proc entry is root's, and `nobody` cannot read its environment.
UNREADABLE_DRIVER = """
import ctypes, os, time
os.setgroups([]); os.setgid(65534); os.setuid(65534)
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
print("ready", flush=True)
time.sleep(120)
"""


def _observe_as_nobody(handle: DriverHandle) -> dict:
    done = subprocess.run([sys.executable, "-c", OBSERVER, handle.model_dump_json()], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(os.geteuid() != 0, reason="starts processes as another user")
def test_a_live_driver_the_observer_cannot_read_is_unknown_and_only_its_end_is_gone() -> None:
    token = driver_token("p", "eos_pipeline__p", f"manual__{time.time()}")
    handle = DriverHandle(
        pipeline="p", token=token, host=this_host(), submitted_at=dt.datetime.now(dt.UTC),
        earliest_start=dt.datetime.now(dt.UTC), boot_id=Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
        pid_namespace=os.stat("/proc/self/ns/pid").st_ino, uid=65534,
    )
    driver = subprocess.Popen([sys.executable, "-c", UNREADABLE_DRIVER], env={**os.environ, DRIVER_TOKEN_ENV: token},
                              stdout=subprocess.PIPE, text=True)
    try:
        assert driver.stdout.readline().strip() == "ready"
        # The process table itself is readable, and root's processes (init, this test) cannot be read by
        # `nobody` either: only the driver's unreadable entry stands in the way of "gone".
        seen = _observe_as_nobody(handle)
        assert seen["liveness"] == "UNKNOWN", seen
        assert f"pid {driver.pid}" in seen["evidence"], seen["evidence"]
    finally:
        driver.kill()
        driver.wait(timeout=10)
    assert _observe_as_nobody(handle)["liveness"] == "GONE"
