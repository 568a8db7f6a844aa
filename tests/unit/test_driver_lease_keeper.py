"""The driver's side of the lease: what it writes, when it fences itself, and that it never resumes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver_lease import read_driver_lease
from airflow_provider_eos.core.errors import DriverLeaseError
from airflow_provider_eos.spark.driver_lease import LeaseKeeper
from airflow_provider_eos.spark.driver_processes import this_host_identity

TTL = 300.0  # long: the keeper's own thread never renews within a test


class Clocks:
    def __init__(self) -> None:
        self.mono = 1000.0
        self.wall = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)

    def advance(self, seconds: float) -> None:
        self.mono += seconds
        self.wall += dt.timedelta(seconds=seconds)


def _keeper(tmp_path: Path, clocks: Clocks) -> tuple[LeaseKeeper, CheckpointReader]:
    checkpoint = CheckpointReader(str(tmp_path / "checkpoint"))
    keeper = LeaseKeeper(checkpoint, "eos-orders-0123456789abcdef0123", TTL, app_id="local-1",
                         clock=lambda: clocks.mono, now=lambda: clocks.wall)
    return keeper, checkpoint


def test_the_lease_is_taken_renewed_and_released_once_the_query_stopped(tmp_path: Path) -> None:
    clocks = Clocks()
    keeper, checkpoint = _keeper(tmp_path, clocks)
    keeper.acquire()
    first = read_driver_lease(checkpoint)
    assert first is not None and first.sequence == 0 and not first.released and first.ttl_s == TTL
    # Where it runs, whole: a retry on another host of the same name judges its process table by this.
    assert first.identity == this_host_identity() and first.pid_namespace is not None and first.boot_id
    keeper.started_query("q-1", "r-1")
    clocks.advance(TTL / 3)
    keeper._renew()
    renewed = read_driver_lease(checkpoint)
    assert renewed.sequence == 1 and renewed.query_id == "q-1" and renewed.renewed_at == clocks.wall
    keeper.guard()  # may commit

    keeper.release(query_stopped=True)
    released = read_driver_lease(checkpoint)
    assert released.released and released.sequence == 2 and released.query_id == "q-1"


def test_a_driver_that_could_not_renew_fences_itself_and_a_late_renewal_does_not_revive_it(tmp_path: Path) -> None:
    clocks = Clocks()
    keeper, checkpoint = _keeper(tmp_path, clocks)
    keeper.acquire()
    clocks.advance(TTL * 4 / 5 - 1)
    keeper.guard()
    clocks.advance(2)  # the renewals in between failed
    with pytest.raises(DriverLeaseError, match="EOS-LEASE lapsed"):
        keeper.guard()
    keeper._renew()  # would land now: an observer may have read the expired record, and a successor taken it
    assert read_driver_lease(checkpoint).sequence == 0, "a lapsed driver wrote its lease again"
    with pytest.raises(DriverLeaseError):
        keeper.guard()
    keeper.release(query_stopped=False)  # the query may still run: the lease is left to expire
    assert not read_driver_lease(checkpoint).released


def test_a_renewal_that_lands_too_late_lapses_the_lease_even_unasked(tmp_path: Path) -> None:
    clocks = Clocks()
    keeper, checkpoint = _keeper(tmp_path, clocks)
    keeper.acquire()
    real_write = checkpoint.fs.open

    def slow_open(*args, **kwargs):  # the write hangs past the fence
        clocks.advance(TTL)
        return real_write(*args, **kwargs)

    checkpoint.fs.open = slow_open
    try:
        keeper._renew()
    finally:
        checkpoint.fs.open = real_write
    assert keeper.lapsed() is not None and "landed" in keeper.lapsed()
    keeper.release(query_stopped=True)


def test_a_driver_that_cannot_write_its_first_lease_does_not_start(tmp_path: Path) -> None:
    blocker = tmp_path / "checkpoint"
    blocker.write_text("a file where the checkpoint folder should be")
    keeper = LeaseKeeper(CheckpointReader(str(blocker)), "eos-orders-0123456789abcdef0123", TTL)
    with pytest.raises(DriverLeaseError, match="could not write its lease"):
        keeper.acquire()


def test_a_driver_killed_while_renewing_leaves_the_previous_lease_whole(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    clocks = Clocks()
    keeper, checkpoint = _keeper(tmp_path, clocks)
    keeper.acquire()
    before = read_driver_lease(checkpoint)

    def killed(*_: object, **__: object) -> None:  # the renewal wrote its staged copy; the kill lands before the move
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint.fs, "mv", killed)
    clocks.advance(10)
    with pytest.raises(KeyboardInterrupt):
        keeper._renew()
    # The record a reader finds is the last whole one: its expiry will prove the driver gone.
    assert read_driver_lease(checkpoint) == before
    monkeypatch.undo()
    clocks.advance(10)
    keeper._renew()
    renewed = read_driver_lease(checkpoint)
    assert renewed is not None and renewed.renewed_at > before.renewed_at
    assert sorted(p.name for p in (tmp_path / "checkpoint" / "eos").iterdir()) == ["driver-lease.json"]


def test_a_lapsed_driver_writes_nothing_more_not_even_its_release(tmp_path: Path) -> None:
    """A paused driver wakes lapsed: a successor may hold the lease by now, and its record must stay."""
    clocks = Clocks()
    keeper, checkpoint = _keeper(tmp_path, clocks)
    keeper.acquire()
    clocks.advance(TTL + 11)  # frozen past its fence and its lease's expiry; meanwhile a successor took it
    successor = LeaseKeeper(checkpoint, "eos-orders-fedcba9876543210fedc", TTL, app_id="local-2",
                            clock=lambda: clocks.mono, now=lambda: clocks.wall)
    successor.acquire()
    taken = read_driver_lease(checkpoint)
    keeper._renew()
    keeper.release(query_stopped=True)
    assert read_driver_lease(checkpoint) == taken
    successor.release(query_stopped=True)
