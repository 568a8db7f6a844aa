"""A starting driver takes no lease another driver holds (the lease keeper's :meth:`acquire`).

Two drivers of one pipeline fence each other's transactions (the same transactional ids) and run two
queries on one checkpoint. A held lease refuses the newcomer, naming its holder and the fix; a
released or expired one, a malformed one and one whose driver this host shows exited do not.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver_lease import (
    CLOCK_SKEW_MARGIN,
    DriverLease,
    holder_exited_here,
    read_driver_lease,
    write_driver_lease,
)
from airflow_provider_eos.core.errors import DriverLeaseError, DriverLeaseHeldError
from airflow_provider_eos.spark.driver_lease import LeaseKeeper
from airflow_provider_eos.spark.driver_processes import this_host_identity
from tests.support.observers import another_worker

TTL = 300.0  # long: the keeper's own thread never renews within a test
HOLDER = "eos-orders-aaaaaaaaaaaaaaaaaaaa"
NEWCOMER = "eos-orders-bbbbbbbbbbbbbbbbbbbb"


def _checkpoint(tmp_path: Path) -> CheckpointReader:
    return CheckpointReader(str(tmp_path / "checkpoint"))


def _held(checkpoint: CheckpointReader, *, renewed_s_ago: float = 5, here: bool = False, pid: int = 4242,
          token: str = HOLDER, released: bool = False) -> DriverLease:
    """Write a lease of another driver: on another worker, or on this host (its identity) under ``pid``."""
    now = dt.datetime.now(dt.UTC)
    identity = this_host_identity() if here else another_worker().model_copy(update={"host": "worker-7"})
    lease = DriverLease(token=token, app_id="local-1700000000000", query_id="q-1", pid=pid,
                        **identity.model_dump(), started_at=now - dt.timedelta(minutes=5),
                        renewed_at=now - dt.timedelta(seconds=renewed_s_ago), ttl_s=30, sequence=9,
                        released=released)
    write_driver_lease(checkpoint, lease)
    return lease


def _newcomer(checkpoint: CheckpointReader, token: str = NEWCOMER) -> LeaseKeeper:
    return LeaseKeeper(checkpoint, token, TTL, app_id="local-2")


def test_a_lease_held_by_a_live_driver_elsewhere_refuses_the_newcomer_naming_the_holder(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path)
    held = _held(checkpoint)
    with pytest.raises(DriverLeaseHeldError) as refused:
        _newcomer(checkpoint).acquire()
    message = str(refused.value)
    assert isinstance(refused.value, DriverLeaseError)
    for named in (HOLDER, "'worker-7'", "pid 4242", "local-1700000000000", "query q-1", "driver-lease.json"):
        assert named in message, (named, message)
    expires = held.renewed_at + dt.timedelta(seconds=held.ttl_s) + CLOCK_SKEW_MARGIN
    assert "SIGTERM to pid 4242" in refused.value.fix and expires.isoformat(timespec="seconds") in refused.value.fix
    assert read_driver_lease(checkpoint) == held, "the refused driver wrote over the holder's lease"


def test_the_same_token_held_by_a_live_driver_elsewhere_is_refused_too(tmp_path: Path) -> None:
    """A run's attempts share one token: an earlier attempt still renewing is a second driver all the same."""
    checkpoint = _checkpoint(tmp_path)
    _held(checkpoint, token=NEWCOMER)
    with pytest.raises(DriverLeaseHeldError):
        _newcomer(checkpoint).acquire()


@pytest.mark.parametrize("left", ["released", "expired", "malformed"])
def test_a_released_expired_or_malformed_lease_is_taken(tmp_path: Path, left: str) -> None:
    checkpoint = _checkpoint(tmp_path)
    if left == "malformed":
        (tmp_path / "checkpoint" / "eos").mkdir(parents=True)
        (tmp_path / "checkpoint" / "eos" / "driver-lease.json").write_text("{")
    else:
        # Expired: older than ttl (30 s) + the clock margin (10 s) by the newcomer's clock.
        _held(checkpoint, released=left == "released", renewed_s_ago=41 if left == "expired" else 5)
    keeper = _newcomer(checkpoint)
    keeper.acquire()
    try:
        taken = read_driver_lease(checkpoint)
        assert taken is not None and taken.token == NEWCOMER and not taken.released
    finally:
        keeper.release(query_stopped=True)


def test_a_lease_whose_driver_exited_on_this_host_is_taken_at_once(tmp_path: Path) -> None:
    """A driver killed here (SIGKILL: no release) does not hold the next one back until its lease expires."""
    checkpoint = _checkpoint(tmp_path)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    _held(checkpoint, here=True, pid=int(gone.stdout))
    keeper = _newcomer(checkpoint)
    keeper.acquire()
    try:
        assert read_driver_lease(checkpoint).token == NEWCOMER
    finally:
        keeper.release(query_stopped=True)


def test_a_lease_whose_driver_still_runs_on_this_host_refuses(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path)
    import os

    _held(checkpoint, here=True, pid=os.getpid())  # this test's process: running since before the lease
    with pytest.raises(DriverLeaseHeldError, match=f"pid {os.getpid()}"):
        _newcomer(checkpoint).acquire()


def test_a_process_that_reused_the_holders_pid_is_not_the_holder(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path)
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        # The lease was last renewed 20 s ago, before this process started: it is not the driver that renewed it.
        _held(checkpoint, here=True, pid=later.pid, renewed_s_ago=20)
        keeper = _newcomer(checkpoint)
        keeper.acquire()
        keeper.release(query_stopped=True)
    finally:
        later.kill()
        later.wait()


def test_only_the_holders_own_host_judges_its_process() -> None:
    now = dt.datetime.now(dt.UTC)
    here = this_host_identity()
    lease = DriverLease(token=HOLDER, pid=4242, **here.model_dump(), started_at=now, renewed_at=now, ttl_s=30)
    assert holder_exited_here(lease, here=here, running=False, running_since=None)
    assert not holder_exited_here(lease, here=another_worker(), running=False, running_since=None)
    assert not holder_exited_here(lease.model_copy(update={"boot_id": None}), here=here.model_copy(
        update={"boot_id": None}), running=False, running_since=None), "a lease of an older version is not judged"
    assert not holder_exited_here(lease, here=here, running=True, running_since=None)
    assert not holder_exited_here(lease, here=here, running=True, running_since=now)
    assert holder_exited_here(lease, here=here, running=True, running_since=now + dt.timedelta(seconds=5))
