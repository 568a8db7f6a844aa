"""The driver's lease in the checkpoint: evidence of life that any observer can read, and its self-fencing.

The driver (the Spark job's Python driver) writes ``eos/driver-lease.json`` under the checkpoint
root when it starts, renews it every ``ttl / 3`` from a daemon thread (:mod:`airflow_provider_eos.spark.driver_lease`)
and marks it released once its query has stopped. The checkpoint is the one place every
deployment shares between the driver (wherever the cluster runs it) and every Airflow worker, so
the lease answers "is the driver gone?" from any worker, for local, standalone and YARN alike.

A lease is evidence of death only because the driver fences itself: it commits nothing (no batch
starts, no transaction of the driver commits) once its last successful renewal is older than
:func:`self_fence_after` (``ttl`` minus a fifth of it), and never resumes after that, even if a late
renewal lands. The observer says GONE only when the lease is older than ``ttl`` plus
:data:`CLOCK_SKEW_MARGIN` by its own clock: by then a driver that could not renew has stopped
committing for at least the margin, as long as the two clocks differ by less than the margin
(docs/design-notes.md, note 35, has the whole argument, including the executors' tasks).

What is pure here: the record, its parser and the observer's judgement (:func:`judge_lease`).
Reading and writing go through the one checkpoint reader (:class:`CheckpointReader`), as
``eos/writers.json`` does.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from pydantic import ValidationError

from airflow_provider_eos.core.checkpoint.eos_records import eos_record_display, read_eos_record, write_eos_record
from airflow_provider_eos.core.checkpoint.location import EOS_FOLDER
from airflow_provider_eos.core.driver import (
    START_MARGIN,
    DriverHandle,
    Evidence,
    EvidenceSource,
    HostIdentity,
    Liveness,
)
from airflow_provider_eos.core.errors import CheckpointError, DriverLeaseHeldError
from airflow_provider_eos.core.frozen_model import FrozenModel

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader

__all__ = [
    "CLOCK_SKEW_MARGIN",
    "LEASE_RECORD",
    "LEASE_WAIT_MARGIN",
    "PID_REUSE_MARGIN",
    "DriverLease",
    "held_lease_refusal",
    "holder_exited_here",
    "judge_lease",
    "lease_expiry_wait_s",
    "lease_holder",
    "lease_sign_of_life",
    "parse_driver_lease",
    "read_driver_lease",
    "renewal_interval_s",
    "self_fence_after_s",
    "write_driver_lease",
]

#: Where the lease lives, relative to the checkpoint root (Spark ignores the folder, as ``eos/writers.json``).
LEASE_RECORD = (EOS_FOLDER, "driver-lease.json")

#: How far the observer's clock may be from the driver's: a lease is expired only ``ttl`` plus this
#: after its renewal, by the observer's clock. NTP keeps hosts within well under a second; ten
#: seconds also covers a host that lost its time source for a while.
CLOCK_SKEW_MARGIN = dt.timedelta(seconds=10)


#: Beyond a lease's ttl and :data:`CLOCK_SKEW_MARGIN`, what a wait for it to expire also needs: the
#: polls of the wait (every 2 s) and a read of the lease on a slow store.
LEASE_WAIT_MARGIN = dt.timedelta(seconds=15)


def lease_expiry_wait_s(ttl_s: float, given_s: float) -> float:
    """How long a wait for a driver's end must last: ``given_s``, or longer when its lease could outlive it.

    A crashed (SIGKILLed) driver's unreleased lease says ALIVE until ``ttl + CLOCK_SKEW_MARGIN``
    after its last renewal; a wait shorter than that refuses a recovery that only had to wait.
    The spec allows any ``driver_lease_ttl_s``, so the wait follows it instead of a fixed number.

    :param ttl_s: the spec's ``driver_lease_ttl_s``.
    :param given_s: the wait the operator was given; kept when it is the longer one.
    """
    return max(given_s, ttl_s + CLOCK_SKEW_MARGIN.total_seconds() + LEASE_WAIT_MARGIN.total_seconds())


def renewal_interval_s(ttl_s: float) -> float:
    """How often the driver renews: three tries within a ``ttl``."""
    return ttl_s / 3


def self_fence_after_s(ttl_s: float) -> float:
    """How old the driver's last successful renewal may be while it still commits: ``ttl`` minus a fifth.

    Two missed renewals (at ``ttl/3`` and ``2 ttl/3``) are tolerated; the fifth left is the margin
    by which the driver has stopped before its lease can expire.
    """
    return ttl_s * 4 / 5


class DriverLease(FrozenModel):
    """``eos/driver-lease.json``: which driver holds the checkpoint, and since when it has said so.

    :param token: the driver token of the submission (:data:`~.driver.DRIVER_TOKEN_ENV`).
    :param query_id: the streaming query id (``None`` before the query started).
    :param run_id: the query's run id (``None`` before the query started).
    :param app_id: the Spark application id.
    :param host: the host the driver runs on.
    :param boot_id: :attr:`~.driver.HostIdentity.boot_id` of that host; ``None`` in leases written before it was.
    :param pid_namespace: :attr:`~.driver.HostIdentity.pid_namespace` of the driver, or ``None`` (same).
    :param uid: the user the driver runs as, or ``None`` (same).
    :param pid: the driver's process id there.
    :param started_at: when this driver took the lease (its clock).
    :param renewed_at: when it last renewed it (its clock, taken before the write).
    :param ttl_s: how long the lease holds after ``renewed_at``.
    :param sequence: renewals so far (0 for the first write), to tell two readings apart.
    :param released: the driver stopped its query and commits nothing more.
    """

    token: str
    query_id: str | None = None
    run_id: str | None = None
    app_id: str | None = None
    host: str
    boot_id: str | None = None
    pid_namespace: int | None = None
    uid: int | None = None
    pid: int
    started_at: dt.datetime
    renewed_at: dt.datetime
    ttl_s: float
    sequence: int = 0
    released: bool = False

    def to_json(self) -> str:
        return self.model_dump_json(indent=1) + "\n"

    def holds_at(self, observed_at: dt.datetime, skew: dt.timedelta = CLOCK_SKEW_MARGIN) -> bool:
        """Whether the lease still says its driver may run: not released, and ``observed_at`` within ``ttl + skew``
        of its last renewal (a driver that could not renew has fenced itself by then: the module's docstring)."""
        return not self.released and observed_at <= self.renewed_at + dt.timedelta(seconds=self.ttl_s) + skew

    @property
    def identity(self) -> HostIdentity:
        """Where the driver runs, as far as the lease recorded it."""
        return HostIdentity(host=self.host, boot_id=self.boot_id, pid_namespace=self.pid_namespace, uid=self.uid)


def lease_holder(handle: DriverHandle, lease: DriverLease | None) -> DriverHandle:
    """The driver of ``handle`` where its lease says it runs.

    A retried or cleared submit knows the earlier driver by the run's token only: its own handle
    names the host the retry runs on, which after a lost worker is another one (a new host of the
    same name, in another pid namespace, after a reboot). The lease is written by the driver
    itself, so it names the host and process table that can see it. A lease of another token, or
    none, leaves the handle as it is.
    """
    if lease is None or lease.token != handle.token:
        return handle
    return handle.model_copy(update=lease.identity.model_dump())


def parse_driver_lease(where: str, text: str) -> DriverLease:
    """Read ``eos/driver-lease.json``.

    :raises CheckpointError: naming the file when it is not a driver lease.
    """
    try:
        return DriverLease.model_validate_json(text)
    except ValidationError as err:
        raise CheckpointError(
            f"{where} is not this package's driver lease: {err.errors()[0]['msg']}",
            fix="delete the file: the next driver writes it again when it starts (until then, the lease is "
            "no evidence either way)",
        ) from err


def read_driver_lease(checkpoint: CheckpointReader) -> DriverLease | None:
    """The lease in the checkpoint, ``None`` when there is none.

    :raises CheckpointError: if it is there but malformed.
    """
    text = read_eos_record(checkpoint, LEASE_RECORD[1], "the driver lease")
    if text is None:
        return None
    return parse_driver_lease(eos_record_display(checkpoint, LEASE_RECORD[1]), text)


def write_driver_lease(checkpoint: CheckpointReader, lease: DriverLease) -> None:
    """Write the lease, replacing the one there.

    How is :func:`write_eos_record`'s: on a local filesystem a driver killed mid-write leaves the
    previous lease whole, so its expiry still proves it gone (written in place, a SIGKILL between the
    truncation and the write left an empty record: no evidence until someone deleted it). Elsewhere
    it is rewritten in place; a reader that meets half a record finds it malformed, which is no
    evidence, never "gone".
    """
    write_eos_record(checkpoint, LEASE_RECORD[1], lease.to_json(), writer=lease.token)


def judge_lease(
    handle: DriverHandle, lease: DriverLease | None, *, observed_at: dt.datetime, problem: str | None = None,
    skew: dt.timedelta = CLOCK_SKEW_MARGIN,
) -> Evidence:
    """What the checkpoint's lease says about the driver of ``handle``.

    :param lease: the lease read, or ``None`` when there is none (or it could not be read: ``problem``).
    :param observed_at: when it was read, by the observer's clock, taken *before* the read: a
        renewal landing during the read must not meet a later observation time.
    :param problem: why it could not be read, if it could not.
    :param skew: :data:`CLOCK_SKEW_MARGIN`.

    GONE: the lease is this handle's driver's (its token, taken after the run could have started one)
    and released, or expired by ``ttl + skew``. ALIVE: a lease not expired, this driver's or another
    one's (then another driver uses the pipeline's checkpoint and transactional ids: acting would hit it).
    Otherwise no evidence: no lease, an unreadable one, or another driver's expired one.
    """
    def said(says: Liveness, detail: str) -> Evidence:
        return Evidence(source=EvidenceSource.LEASE, says=says, detail=detail)

    if problem is not None:
        return said(Liveness.UNKNOWN, f"the lease could not be read ({problem})")
    if lease is None:
        return said(Liveness.UNKNOWN, "the checkpoint holds no driver lease")
    age = (observed_at - lease.renewed_at).total_seconds()
    what = (f"lease #{lease.sequence} of {lease.token} (host {lease.host!r}, pid {lease.pid}) renewed "
            f"{lease.renewed_at.isoformat(timespec='seconds')}, {age:.0f}s before "
            f"{observed_at.isoformat(timespec='seconds')}")
    ours = lease.token == handle.token
    if lease.holds_at(observed_at, skew):
        whose = "" if ours else "; another driver holds the pipeline's checkpoint"
        return said(Liveness.ALIVE, f"{what}, within its ttl {lease.ttl_s:.0f}s + {skew.total_seconds():.0f}s{whose}")
    state = "released" if lease.released else f"expired (ttl {lease.ttl_s:.0f}s + skew {skew.total_seconds():.0f}s)"
    if not ours:
        return said(Liveness.UNKNOWN, f"{what}, {state}: another driver's, which says nothing of this one")
    earliest = handle.earliest_start or handle.submitted_at
    if lease.started_at < earliest - START_MARGIN:
        return said(Liveness.UNKNOWN, f"{what}, {state}, but taken {lease.started_at.isoformat(timespec='seconds')}, "
                    "before this run could have started a driver")
    return said(Liveness.GONE, f"{what}, {state}")


def lease_sign_of_life(
    lease: DriverLease | None, *, observed_at: dt.datetime, skew: dt.timedelta = CLOCK_SKEW_MARGIN
) -> str | None:
    """The sign of life a lease gives to a recovery action's liveness gate, ``None`` if it gives none.

    Unlike :func:`judge_lease` this asks about no particular driver: any driver that holds the
    pipeline's checkpoint (a manual recovery knows no run's token) makes acting unsafe. A lease
    not released and within ``ttl + skew`` of its renewal is one: the driver renews it while its
    query runs, even when the query is idle and commits nothing, which the other signs (a recent
    commit, a young transaction) cannot see. A released or expired lease, or none, says nothing.

    :param lease: the checkpoint's lease, or ``None`` when there is none (or it could not be read:
        an unreadable lease is no evidence either way, as for :func:`judge_lease`).
    :param observed_at: when it was read, by the observer's clock, taken *before* the read.
    :param skew: :data:`CLOCK_SKEW_MARGIN`.
    """
    if lease is None or not lease.holds_at(observed_at, skew):
        return None
    age = max((observed_at - lease.renewed_at).total_seconds(), 0.0)
    app = lease.app_id or "unknown application"
    return (
        f"the driver lease of {lease.token} (host {lease.host!r}, pid {lease.pid}, application {app}) was renewed "
        f"{lease.renewed_at.isoformat(timespec='seconds')}, {age:.0f}s ago, within its ttl {lease.ttl_s:.0f}s + "
        f"{skew.total_seconds():.0f}s and not released: the driver may still run its query, even if idle"
    )


#: How much later than a lease's last renewal a process must have started to be another one under the
#: holder's pid: process start times are read from boot time (whole seconds) and clock ticks.
PID_REUSE_MARGIN = dt.timedelta(seconds=2)


def holder_exited_here(lease: DriverLease, *, here: HostIdentity, running: bool,
                       running_since: dt.datetime | None) -> bool:
    """Whether this host's process table shows that the lease's driver process has exited.

    Only the driver's own host can tell (the same host, boot, pid namespace and user: another
    user's processes may be hidden, ``hidepid``), and only by the lease's own pid, which is the
    driver's Python process in either deploy mode: no process there, or one that started after
    the lease's last renewal (the pid was reused). A lease of an older version, without boot id or
    pid namespace, is never judged: its driver may have run in another container of the same name.
    So a driver killed on this host does not hold the next one back for ttl + 10 s; elsewhere its
    lease has to expire.

    :param here: the identity of the observer.
    :param running: whether a process (not a zombie) with the lease's pid runs here.
    :param running_since: when that process started, ``None`` if unknown (then it counts as the holder).
    """
    if None in (lease.boot_id, lease.pid_namespace, lease.uid) or lease.identity != here:
        return False
    if not running:
        return True
    return running_since is not None and running_since > lease.renewed_at + PID_REUSE_MARGIN


def held_lease_refusal(
    checkpoint: CheckpointReader, lease: DriverLease, *, observed_at: dt.datetime,
    skew: dt.timedelta = CLOCK_SKEW_MARGIN, claimed_in: str | None = None,
) -> DriverLeaseHeldError:
    """Why a starting driver does not take the lease ``lease`` holds, naming the holder and the fix.

    For a lease that :meth:`DriverLease.holds_at` ``observed_at`` and whose holder was not seen to
    exit (:func:`holder_exited_here`): a second driver would fence the first's transactions (the
    same transactional ids) and run a second query on its checkpoint.

    :param claimed_in: where the holder's claim is, when ``lease`` is the claim of a driver that is
        taking the lease and has not written it yet (:mod:`~airflow_provider_eos.core.lease_claim`).
    """
    expires = lease.renewed_at + dt.timedelta(seconds=lease.ttl_s) + skew
    app = lease.app_id or "unknown application"
    query = f", query {lease.query_id}" if lease.query_id else ""
    claimed = f" (claimed in {claimed_in}, being taken)" if claimed_in else ""
    return DriverLeaseHeldError(
        f"another driver holds the pipeline's lease {eos_record_display(checkpoint, LEASE_RECORD[1])}{claimed}: "
        f"{lease.token} (host {lease.host!r}, pid {lease.pid}, application {app}{query}), renewed "
        f"{lease.renewed_at.isoformat(timespec='seconds')}, "
        f"{max((observed_at - lease.renewed_at).total_seconds(), 0.0):.0f}s ago, not released; this driver does "
        "not start beside it (two drivers fence each other's transactions and share one checkpoint)",
        fix=f"stop that driver first: SIGTERM to pid {lease.pid} on {lease.host!r} (or its `eos run`) ends it "
        "after its running batch, a DAG run's driver is stopped by its stop_stream task or by killing its "
        f"application; then start this one again. If it crashed, its lease expires at "
        f"{expires.isoformat(timespec='seconds')} (ttl {lease.ttl_s:.0f}s + {skew.total_seconds():.0f}s after its "
        "last renewal): start again after that",
    )
