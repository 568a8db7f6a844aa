"""The driver's side of the lease: take it, renew it from a daemon thread, fence itself when it cannot, release it.

The record, its rules and the observer's judgement are the core's
(:mod:`airflow_provider_eos.core.driver_lease`). Here: :class:`LeaseKeeper` writes the record through
the driver's own checkpoint reader (:func:`~.sink_clients.driver_checkpoint`, so ``hdfs://``
finds WebHDFS as the sink does), and answers, at every point where the driver would start a
batch or commit, whether it still may (:meth:`LeaseKeeper.guard`). It takes no lease that another
driver holds (:meth:`LeaseKeeper.acquire`): never two drivers on one checkpoint and one set of
transactional ids.

A driver may commit while its last *successful* renewal, timed from before the write, is younger
than :func:`~airflow_provider_eos.core.driver_lease.self_fence_after_s`. Once it is older, the
keeper is lapsed for good: a renewal that lands later does not revive it, because an observer may
already have read the expired record and declared the driver gone.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from airflow_provider_eos.core.checkpoint.eos_records import eos_record_display
from airflow_provider_eos.core.driver_lease import (
    LEASE_RECORD,
    DriverLease,
    held_lease_refusal,
    holder_exited_here,
    read_driver_lease,
    renewal_interval_s,
    self_fence_after_s,
    write_driver_lease,
)
from airflow_provider_eos.core.errors import CheckpointError, DriverLeaseError
from airflow_provider_eos.spark.driver_processes import process_running, this_host_identity

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader

__all__ = ["LeaseKeeper"]

log = logging.getLogger("airflow_provider_eos.job")


class LeaseKeeper:
    """Holds the driver's lease in the checkpoint.

    :param checkpoint: the driver's checkpoint reader (its filesystem writes the record).
    :param token: the driver token of the submission.
    :param ttl_s: the spec's ``driver_lease_ttl_s``.
    :param app_id: the Spark application id.
    :param clock: a monotonic clock (seconds); :param now: the wall clock (tests pass their own).
    """

    def __init__(self, checkpoint: CheckpointReader, token: str, ttl_s: float, *, app_id: str | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self.checkpoint, self.ttl_s, self.clock, self.now = checkpoint, ttl_s, clock, now
        started = now()
        # The whole identity, not the name alone: a retry on a new host of the same name must not judge this
        # driver by a process table that cannot see it (core/driver_lease.py, lease_holder).
        self._lease = DriverLease(token=token, app_id=app_id, **this_host_identity().model_dump(), pid=os.getpid(),
                                  started_at=started, renewed_at=started, ttl_s=ttl_s, sequence=-1)
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # one write at a time: a renewal and the release never interleave
        self._renewed_mono: float | None = None  # when the last successful renewal was stamped
        self._lapsed: str | None = None  # why the driver may no longer commit, once it may not
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- life cycle -----------------------------------------------------------------------------

    def acquire(self) -> None:
        """Take the lease unless another driver holds it; then renew it from a daemon thread every ``ttl / 3``.

        A lease held (not released, within ``ttl`` + the clock margin of its renewal) is another
        driver's, of any token, while it runs: only this host's process table can show sooner that
        it exited (:func:`~airflow_provider_eos.core.driver_lease.holder_exited_here`). A malformed
        lease is no evidence either way and is written over, as its error's fix says.

        :raises DriverLeaseHeldError: a live driver holds it (names it, and when its lease expires).
        :raises DriverLeaseError: the lease could not be read, or the first write failed: the driver would
            start without evidence of life.
        """
        self._refuse_a_held_lease()
        try:
            self._renew()
        except Exception as err:
            raise DriverLeaseError(
                f"the driver could not write its lease to {eos_record_display(self.checkpoint, LEASE_RECORD[1])}: "
                f"{err}", fix="check that the driver can write to the spec's checkpoint_location",
            ) from err
        self._thread = threading.Thread(target=self._run, name="eos-driver-lease", daemon=True)
        self._thread.start()
        log.info("EOS-LEASE taken by %s (ttl %.0fs, renewed every %.1fs)", self._lease.token, self.ttl_s,
                 renewal_interval_s(self.ttl_s))

    def _refuse_a_held_lease(self) -> None:
        observed_at = self.now()  # before the read: a renewal landing during it must not meet a later time
        where = eos_record_display(self.checkpoint, LEASE_RECORD[1])
        try:
            held = read_driver_lease(self.checkpoint)
        except CheckpointError as err:
            log.warning("EOS-LEASE %s is malformed (%s); written over", where, err.message)
            return
        except Exception as err:
            raise DriverLeaseError(
                f"the driver could not read the lease {where} (another driver may hold it): {err}",
                fix="check that the driver can read and write the spec's checkpoint_location",
            ) from err
        if held is None or not held.holds_at(observed_at):
            return
        if _holder_exited(held):
            log.warning("EOS-LEASE of %s (pid %d on %r) taken over: its lease was not released, but no process "
                        "runs under its pid on this host", held.token, held.pid, held.host)
            return
        raise held_lease_refusal(self.checkpoint, held, observed_at=observed_at)

    def started_query(self, query_id: str, run_id: str) -> None:
        """Name the query in the next renewals."""
        with self._lock:
            self._lease = self._lease.model_copy(update={"query_id": query_id, "run_id": run_id})

    def release(self, *, query_stopped: bool) -> None:
        """Stop renewing; mark the lease released only when the query has stopped (nothing commits any more).

        :param query_stopped: whether the query has stopped. If it may still run (the driver leaves
            through an error), the lease is left to expire: the driver has stopped renewing, so it
            fences itself, and the observer says gone only after ``ttl`` plus the clock margin. A
            lapsed lease is left to expire too: another driver may have taken it since.
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=renewal_interval_s(self.ttl_s) + 5)
        if not query_stopped:
            return
        if self.lapsed() is not None:
            # As for a renewal: a successor may hold the lease by now, and "released" over its record would hide it.
            log.info("EOS-LEASE not released: it lapsed (%s); it expires %.0fs after its last renewal", self._lapsed,
                     self.ttl_s)
            return
        try:
            with self._write_lock:
                with self._lock:
                    self._lease = self._lease.model_copy(update={"released": True, "renewed_at": self.now(),
                                                                 "sequence": self._lease.sequence + 1})
                    lease = self._lease
                write_driver_lease(self.checkpoint, lease)
            log.info("EOS-LEASE released by %s", lease.token)
        except Exception as err:  # the lease expires by itself: evidence comes later, never wrong
            log.warning("EOS-LEASE could not be released (%s); it expires %.0fs after its last renewal", err,
                        self.ttl_s)

    # -- the fence ------------------------------------------------------------------------------

    def lapsed(self) -> str | None:
        """Why the driver may no longer commit, or ``None`` while it may."""
        with self._lock:
            if self._lapsed is None and self._renewed_mono is not None:
                age = self.clock() - self._renewed_mono
                if age > self_fence_after_s(self.ttl_s):
                    self._lapsed = (f"its last successful renewal is {age:.1f}s old, more than "
                                    f"{self_fence_after_s(self.ttl_s):.1f}s (ttl {self.ttl_s:.0f}s)")
            return self._lapsed

    def guard(self) -> None:
        """Raise when the driver may no longer start a batch or commit.

        :raises DriverLeaseError: naming why; the batch fails and the query stops with it.
        """
        reason = self.lapsed()
        if reason is not None:
            raise DriverLeaseError(
                f"EOS-LEASE lapsed: the driver commits nothing more, {reason}; an observer may already count "
                "it as gone",
                fix="check that the driver can write to the checkpoint; after recovery, start the pipeline again",
            )

    # -- renewing -------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.wait(renewal_interval_s(self.ttl_s)):
            try:
                self._renew()
            except Exception as err:  # a failed renewal is what the fence counts; the next may succeed
                log.warning("EOS-LEASE renewal failed: %s", err)
            if self.lapsed() is not None:
                log.error("EOS-LEASE lapsed: %s; the driver stops committing", self._lapsed)
                return

    def _renew(self) -> None:
        if self.lapsed() is not None:
            # Lapsed for good (a paused driver wakes here): an observer may have found the lease expired and a
            # successor taken it since, so a write now would cover the successor's lease with a dead one's.
            return
        stamped_mono, stamped = self.clock(), self.now()
        with self._lock:
            lease = self._lease.model_copy(update={"renewed_at": stamped, "sequence": self._lease.sequence + 1})
        with self._write_lock:
            if self._stop.is_set():
                return  # released meanwhile: a late renewal must not overwrite the release
            write_driver_lease(self.checkpoint, lease)
        done = self.clock()
        with self._lock:
            # Only what this write changed: the query's ids may have been named meanwhile.
            self._lease = self._lease.model_copy(update={"renewed_at": stamped, "sequence": lease.sequence})
            previous = self._renewed_mono
            if previous is not None and done - previous > self_fence_after_s(self.ttl_s) and self._lapsed is None:
                # Landed too late: the record was expired before it; never resume after that.
                self._lapsed = (f"a renewal landed {done - previous:.1f}s after the last successful one was "
                                f"stamped, more than {self_fence_after_s(self.ttl_s):.1f}s")
            if self._lapsed is None:
                self._renewed_mono = stamped_mono


def _holder_exited(lease: DriverLease) -> bool:
    """Whether this host's process table shows the driver of ``lease`` exited (never for another host's)."""
    running, since = process_running(lease.pid)
    return holder_exited_here(lease, here=this_host_identity(), running=running, running_since=since)
