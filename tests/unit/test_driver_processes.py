"""Reading this host's process table for a driver token: what cannot be read is never "gone".

Real processes (a ``sleep`` carrying a token); the unreadable entry is made at the lowest layer,
the read of ``/proc/<pid>/environ`` (as root, the kernel lets every entry be read).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_eos.core.driver import (
    DRIVER_TOKEN_ENV,
    START_MARGIN,
    DriverHandle,
    Liveness,
    ProcessTable,
    driver_token,
)
from airflow_provider_eos.spark import driver_processes
from airflow_provider_eos.spark.driver_processes import observe, this_host

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def _identity() -> dict[str, object]:
    """This process's identity, read here the way a submission records it (independently of the code under test)."""
    return {"host": this_host(), "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
            "pid_namespace": os.stat("/proc/self/ns/pid").st_ino, "uid": os.getuid()}


def _booted_at() -> dt.datetime:
    """When this machine booted, read here independently of the code under test."""
    btime = next(line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime "))
    return dt.datetime.fromtimestamp(int(btime.split()[1]), dt.UTC)


def _handle(token: str, **overrides: object) -> DriverHandle:
    """The handle of a run that started ten minutes ago (before every process of the test), or just after
    this machine booted when it booted later (a fresh CI machine): after ``/proc/1``, as a real run is."""
    now = dt.datetime.now(dt.UTC)
    run_after = max(now - dt.timedelta(minutes=10), _booted_at() + START_MARGIN + dt.timedelta(seconds=1))
    return DriverHandle(pipeline="p", token=token, submitted_at=now, earliest_start=run_after,
                        **{**_identity(), **overrides})


@pytest.fixture
def carrier() -> Iterator[tuple[subprocess.Popen, str]]:
    """A live process carrying a fresh driver token."""
    token = driver_token("p", "eos_pipeline__p", f"manual__{time.time()}")
    process = subprocess.Popen(SLEEPER, env={**os.environ, DRIVER_TOKEN_ENV: token})
    try:
        deadline = time.monotonic() + 10
        while not observe(_handle(token)).processes and time.monotonic() < deadline:
            time.sleep(0.05)
        yield process, token
    finally:
        process.kill()
        process.wait(timeout=10)


def _deny_environ_of(monkeypatch: pytest.MonkeyPatch, pid: int, error: type[OSError] = PermissionError) -> None:
    """Reading ``/proc/<pid>/environ`` fails as it does for another user's process, or under hidepid."""
    real = Path.read_bytes
    denied = Path(f"/proc/{pid}/environ")

    def read_bytes(path: Path) -> bytes:
        if path == denied:
            raise error(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)


def test_a_live_driver_whose_entry_cannot_be_read_is_unknown_never_gone(carrier, monkeypatch) -> None:
    process, token = carrier
    assert observe(_handle(token)).liveness is Liveness.ALIVE
    _deny_environ_of(monkeypatch, process.pid)
    seen = observe(_handle(token))
    assert seen.liveness is Liveness.UNKNOWN and not seen.gone, seen
    assert f"pid {process.pid}" in seen.evidence, seen.evidence


def test_an_unreadable_entry_of_an_old_handle_is_unknown_too(carrier, monkeypatch) -> None:
    process, token = carrier
    _deny_environ_of(monkeypatch, process.pid, OSError)
    old = DriverHandle(pipeline="p", token=token, host=this_host(),
                       submitted_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=10))
    assert observe(old).liveness is Liveness.UNKNOWN


def test_a_handle_from_another_boot_or_pid_namespace_is_unknown(monkeypatch) -> None:
    gone_token = driver_token("p", "eos_pipeline__p", "never-submitted")
    # A process table where nothing carries the token and everything is readable: on a shared machine
    # another test's short-lived process (a browser's sandboxed child) may be unreadable for a moment,
    # which rightly makes the real table's answer UNKNOWN (the tests above cover that).
    monkeypatch.setattr(driver_processes, "processes_with_token",
                        lambda token, proc=None: ProcessTable(carrying=(), unreadable=()))
    for other in ({"boot_id": "0a1b2c3d-0000-4000-8000-000000000000"}, {"pid_namespace": 1}, {"uid": os.getuid() + 1}):
        # No process here carries gone_token: from the same machine that is "gone"; from another, nothing.
        assert observe(_handle(gone_token)).gone
        seen = observe(_handle(gone_token, **other))
        assert seen.liveness is Liveness.UNKNOWN, (other, seen)
        assert str(next(iter(other.values()))) in seen.evidence


def test_this_hosts_identity_is_read_from_the_kernel() -> None:
    here = driver_processes.this_host_identity()
    assert here.model_dump() == _identity()


@pytest.mark.skipif(os.geteuid() != 0, reason="starts a process as another user")
def test_another_users_unreadable_process_does_not_hide_a_gone_driver(monkeypatch) -> None:
    token = driver_token("p", "eos_pipeline__p", f"manual__{time.time()}")
    stranger = subprocess.Popen(["sleep", "60"], user=65534, env={DRIVER_TOKEN_ENV: "not-ours"})
    try:
        _deny_environ_of(monkeypatch, stranger.pid)
        assert observe(_handle(token)).gone
    finally:
        stranger.kill()
        stranger.wait(timeout=10)

