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

import contextlib
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
    renewal_interval_s,
    self_fence_after_s,
    write_driver_lease,
)
from airflow_provider_eos.core.errors import DriverLeaseError
from airflow_provider_eos.core.lease_claim import (
    claim_name,
    create_lease_claim,
    drop_lease_claims,
    lease_base,
    newest_lease_claim,
    read_lease_text,
    withdraw_lease_claim,
)
from airflow_provider_eos.spark.driver_processes import process_running, this_host_identity

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader

__all__ = ["LeaseKeeper"]

log = logging.getLogger("airflow_provider_eos.job")

#: How many times a taker reads the lease again after another taker changed it under its claim.
CLAIM_ATTEMPTS = 5


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
        lease is no evidence either way and is written over, as its error's fix says. A free lease
        is claimed first (:mod:`~airflow_provider_eos.core.lease_claim`): of two drivers starting
        together, exactly one takes it and the other is refused as beside a held lease.

        :raises DriverLeaseHeldError: a live driver holds it, or is taking it (names it, and when its lease expires).
        :raises DriverLeaseError: the lease could not be read, or the first write failed: the driver would
            start without evidence of life.
        """
        where = eos_record_display(self.checkpoint, LEASE_RECORD[1])
        try:
            base, generation, claimed_mono = self._claim()
        except DriverLeaseError:
            raise
        except Exception as err:
            raise DriverLeaseError(
                f"the driver could not read the lease {where} (another driver may hold it): {err}",
                fix="check that the driver can read and write the spec's checkpoint_location",
            ) from err
        # The claim promised this driver's lease before the claim expires: the fence counts from it, so a
        # first write that lands too late (a successor may have taken the claim over) lapses the keeper.
        self._renewed_mono = claimed_mono
        try:
            self._renew()
            if self.lapsed() is not None:
                raise DriverLeaseError(f"the driver's lease {where} was not written in time after its claim: "
                                       f"{self._lapsed}",
                                       fix="check that the checkpoint's storage answers; start again")
        except Exception as err:
            # Not started: its live claim would refuse the next driver until it expired. Nobody took it over
            # (it is live), so withdrawing it leaves the claims as they were before it.
            with contextlib.suppress(Exception):
                withdraw_lease_claim(self.checkpoint, base, generation)
            if isinstance(err, DriverLeaseError):
                raise
            raise DriverLeaseError(
                f"the driver could not write its lease to {where}: {err}",
                fix="check that the driver can write to the spec's checkpoint_location",
            ) from err
        try:  # the lease has left the state claimed: nobody reads these claims again
            drop_lease_claims(self.checkpoint, base, generation)
        except Exception as err:
            log.warning("EOS-LEASE claims on %s could not be deleted (%s): harmless, never read again", base, err)
        self._thread = threading.Thread(target=self._run, name="eos-driver-lease", daemon=True)
        self._thread.start()
        log.info("EOS-LEASE taken by %s (ttl %.0fs, renewed every %.1fs)", self._lease.token, self.ttl_s,
                 renewal_interval_s(self.ttl_s))

    def _claim(self) -> tuple[str, int, float]:
        """Claim the free lease: the state claimed, the claim's generation and its monotonic stamp.

        :raises DriverLeaseHeldError: the lease is held, or another driver's live claim is on it.
        """
        for _ in range(CLAIM_ATTEMPTS):
            observed_at = self.now()  # before the reads: a renewal landing during them must not meet a later time
            text, held, problem = read_lease_text(self.checkpoint)
            if problem is not None:
                log.warning("EOS-LEASE %s is malformed (%s); written over", eos_record_display(
                    self.checkpoint, LEASE_RECORD[1]), problem.message)
            if held is not None and self._holds(held, observed_at, "lease"):
                raise held_lease_refusal(self.checkpoint, held, observed_at=observed_at)
            base = lease_base(text)
            newest = newest_lease_claim(self.checkpoint, base)
            generation = 0
            if newest is not None:
                generation, claimant = newest[0] + 1, newest[1]
                if claimant is not None and self._holds(claimant, observed_at, "claim"):
                    raise held_lease_refusal(self.checkpoint, claimant, observed_at=observed_at, claimed_in=(
                        eos_record_display(self.checkpoint, claim_name(base, newest[0]))))
            stamped_mono, stamped = self.clock(), self.now()
            with self._lock:
                claim = self._lease.model_copy(update={"renewed_at": stamped})
            try:
                created = create_lease_claim(self.checkpoint, base, generation, claim)
            except Exception as err:
                where = eos_record_display(self.checkpoint, claim_name(base, generation))
                raise DriverLeaseError(f"the driver could not write its lease's claim {where}: {err}",
                                       fix="check that the driver can write to the spec's checkpoint_location",
                                       ) from err
            if not created:
                continue  # another taker was first: read again, its claim or lease refuses this one
            if read_lease_text(self.checkpoint)[0] == text:
                return base, generation, stamped_mono
            # Taken since the first read: this claim is of a state gone, and the next read finds the new holder.
            withdraw_lease_claim(self.checkpoint, base, generation)
        raise DriverLeaseError(
            f"the lease {eos_record_display(self.checkpoint, LEASE_RECORD[1])} changed under this driver "
            f"{CLAIM_ATTEMPTS} times while it claimed it",
            fix="other drivers of the pipeline are starting and stopping: stop them, then start this one again",
        )

    def _holds(self, lease: DriverLease, observed_at: dt.datetime, what: str) -> bool:
        """Whether ``lease`` (a lease or a claim) still holds: within its ttl and not seen exited on this host."""
        if not lease.holds_at(observed_at):
            return False
        if _holder_exited(lease):
            log.warning("EOS-LEASE %s of %s (pid %d on %r) taken over: it was not released, but no process "
                        "runs under its pid on this host", what, lease.token, lease.pid, lease.host)
            return False
        return True

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
