"""Abort: end the pipeline's lingering and hanging transactions (docs/architecture.md, recovery).

Scan, check that the job is gone, act, rescan: the decisions (what is lingering, hanging, safe)
are :mod:`airflow_provider_eos.core.transactions`, the admin calls
:mod:`airflow_provider_eos.kafka.transactions_admin`; this module orders them, one function per
step of :func:`abort_open_transactions`:

1. :meth:`_Scope.survey`: which partitions may hold hanging transactions, and from what age;
2. :meth:`_Scope.scan`: the transactions under the prefix and the hanging ones, planned;
3. :func:`_safety`: the liveness gate, which refuses only an execution with something to do;
4. :func:`_act`: fence a lingering transaction or abort a hanging one, row by row;
5. :func:`_settle`: rescan until what was aborted has closed.

Like every use case it reads Kafka and the checkpoint through one :class:`PipelineClients`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from airflow_provider_eos.core import transactions as txn
from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.transaction_actions import abort_hanging, fence
from airflow_provider_eos.kafka.transactions_admin import (
    broker_max_transaction_timeout_ms,
    describe_producers,
    may_describe_every_id,
    scan_hanging,
    scan_prefix,
    topic_partitions,
)
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.liveness import last_commit_time, lease_signs_of_life
from airflow_provider_eos.usecases.result import Outcome, UseCaseResult
from airflow_provider_eos.usecases.roles import runs_as

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["AbortOutcome", "abort", "abort_open_transactions"]

log = logging.getLogger(__name__)

# The rescan after acting; :func:`abort_open_transactions` bounds it with its ``settle_timeout_s``.
ABORTED_TRANSACTIONS_CLOSE = RetryPolicy(
    waiting_for="the aborted transactions to close", timeout_s=30, first_delay_s=0.5, max_delay_s=0.5
)


class AbortOutcome(UseCaseResult[txn.AbortReport]):
    """What was open under the prefix, what was done, and what is still open; a finding if anything is."""


@runs_as("recovery")
def abort(
    clients: PipelineClients, *, force: bool = False, execute: bool = False, driver_gone: str | None = None
) -> AbortOutcome:
    """Report what is open under the pipeline's prefix and, only with ``execute``, abort it.

    A dry run by default, as every state-changing use case (rewind, align). The liveness check
    reads the checkpoint's newest commit with the clients' storage options. Anything left open
    (after acting, or found by a dry run) is a finding.

    :param force: act even if the job looks alive; fencing then breaks a live job's next commit.
    :param execute: abort; without it (the default) a dry run: scan and report, change nothing, never refuse.
    :param driver_gone: positive evidence that the job's driver is gone (an observation, see
        :mod:`airflow_provider_eos.core.driver`); young transactions are then the dead driver's.
    :raises UnsafeToActError: if there is something to abort, the job looks alive and not ``force``.
    :raises KafkaUnreachableError: if no broker answers within the clients' ``connect_timeout_s``.
    :raises TransactionsAdminError: if the cluster cannot be read.
    """
    spec = clients.spec
    clients.require_kafka()
    report = abort_open_transactions(clients, force=force, execute=execute, driver_gone=driver_gone)
    prefix = spec.transactional_id_prefix
    open_rows = [row for row in (report.remaining if report.executed else report.rows) if row.action.acts]
    if report.ok:
        summary = f"nothing under prefix {prefix!r} is open" + (" any more" if report.rows else "")
        next_step = "Nothing to do: nothing of the pipeline is left open."
    elif not report.executed:
        summary = f"{len(open_rows)} open transaction(s) under prefix {prefix!r} would be aborted"
        next_step = (
            "Make sure the job is gone, then abort them (eos abort --spec FILE --execute; in Airflow "
            "AbortOpenTransactionsOperator with dry_run=False)."
        )
    else:
        summary = f"transactions under prefix {prefix!r} are still open after aborting"
        next_step = "Run the abort again; if they stay open, read each row's note and check the broker's logs."
    return AbortOutcome(
        use_case="abort",
        pipeline=spec.name,
        outcome=Outcome.OK if report.ok else Outcome.FINDING,
        summary=summary,
        next_step=next_step,
        report=report,
    )


@dataclasses.dataclass(frozen=True)
class _Clock:
    """The abort's one reading of the wall clock, advanced by the monotonic clock.

    Every age in the report (first scan, rescans) is measured from the same start, so a wall
    clock step during the abort cannot make a transaction look younger than it was.
    """

    scanned_at: dt.datetime
    started: float

    @classmethod
    def start(cls) -> _Clock:
        """The clock of an abort starting now."""
        return cls(dt.datetime.now(dt.UTC), time.monotonic())

    def now(self) -> dt.datetime:
        """The current time, as :attr:`scanned_at` plus the time elapsed since."""
        return self.scanned_at + dt.timedelta(seconds=time.monotonic() - self.started)


@dataclasses.dataclass(frozen=True)
class _Scan:
    """One scan: the transactions under the prefix, the hanging ones, the partitions' offsets, and the plan."""

    transactions: list[txn.Transaction]
    hanging: list[txn.HangingTransaction]
    offsets: list[txn.PartitionOffsets]
    rows: list[txn.AbortRow] = dataclasses.field(default_factory=list)

    @property
    def open_rows(self) -> bool:
        """Whether the plan has anything to abort."""
        return any(row.action.acts for row in self.rows)


@dataclasses.dataclass(frozen=True)
class _Scope:
    """What one abort scans, settled once before its first scan.

    :param admin: the kafka-python admin client (:meth:`PipelineClients.transactions_admin`).
    :param spec: the pipeline.
    :param partitions: the output and dead-letter partitions, where hanging transactions are sought.
    :param hanging_min_age_ms: age above which an open partition transaction is a hanging candidate.
    :param notes: what the report says about the scope (a missing topic).
    :param every_id_visible: whether an unattributed hanging transaction cannot be someone else's
        (see :func:`~airflow_provider_eos.core.transactions.plan_abort`); settled by the first scan.
    """

    admin: KafkaAdminClient
    spec: PipelineSpec
    partitions: list[TopicPartition]
    hanging_min_age_ms: int
    notes: tuple[str, ...]
    every_id_visible: bool = True

    @classmethod
    def survey(cls, admin: KafkaAdminClient, spec: PipelineSpec, hanging_min_age_ms: int | None) -> _Scope:
        """Step 1: the partitions to scan and the hanging age (default: the brokers' ``transaction.max.timeout.ms``)."""
        topics = [spec.output_topic] + ([spec.dlq_topic] if spec.dlq_topic else [])
        partitions, missing = topic_partitions(admin, topics)
        notes = (f"topic(s) {', '.join(missing)} do not exist; no hanging transactions there",) if missing else ()
        min_age = hanging_min_age_ms if hanging_min_age_ms is not None else broker_max_transaction_timeout_ms(admin)
        return cls(admin, spec, partitions, min_age, notes)

    @property
    def prefix(self) -> str:
        """The pipeline's transactional id prefix: nothing outside it is ever fenced."""
        return self.spec.transactional_id_prefix

    def first_scan(self, now: dt.datetime) -> tuple[_Scope, _Scan]:
        """Step 2 the first time: scan, settle :attr:`every_id_visible`, and plan.

        Whether every id is visible is asked only when it matters: when a hanging transaction
        cannot be attributed, it may be someone else's unless this login may describe every id.
        """
        found = self._read(now)
        visible = all(h.owner(self.prefix) != "unattributed" for h in found.hanging) or may_describe_every_id(
            self.admin
        )
        scope = dataclasses.replace(self, every_id_visible=visible)
        return scope, scope._plan(found, now)

    def scan(self, now: dt.datetime) -> _Scan:
        """Step 2 again (the rescans): scan and plan, with the first scan's visibility."""
        return self._plan(self._read(now), now)

    def _read(self, now: dt.datetime) -> _Scan:
        transactions = scan_prefix(self.admin, self.prefix)
        hanging, offsets = scan_hanging(
            self.admin, self.partitions, now=now, max_transaction_timeout_ms=self.hanging_min_age_ms
        )
        return _Scan(transactions, hanging, offsets)

    def _plan(self, found: _Scan, now: dt.datetime) -> _Scan:
        rows = txn.plan_abort(
            self.prefix, found.transactions, found.hanging, now=now,
            transaction_timeout_ms=self.spec.transaction_timeout_ms, every_id_visible=self.every_id_visible,
        )
        return dataclasses.replace(found, rows=rows)


def _safety(scope: _Scope, first: _Scan, signs: txn.LivenessSigns, *, execute: bool, force: bool) -> txn.SafetyCheck:
    """Step 3: the liveness gate; it refuses only an execution with something to do.

    A scan that finds nothing harms no one, and a dry run changes nothing: both only report the signs.

    :raises UnsafeToActError: if the job looks alive, ``execute`` is set, there is something to do and
        ``force`` is not.
    """
    if execute and first.open_rows:
        return txn.check_safe_to_act(scope.prefix, first.transactions, signs, force=force)
    return txn.evaluate_safety(scope.prefix, first.transactions, signs, force=force)


def _act(scope: _Scope, row: txn.AbortRow) -> txn.AbortRow:
    """Step 4, one row: fence a lingering transaction, abort a hanging one, leave the rest; the row's outcome.

    A failure is the row's outcome, not the abort's end: the other rows are still worth ending.
    """
    if not row.action.acts:
        return row.with_outcome(txn.Outcome.LEFT)
    try:
        if row.action is txn.Action.FENCE and row.transactional_id is not None:
            log.info("fencing transactional id %s (producer %s)", row.transactional_id, row.producer_id)
            fence(scope.spec, row.transactional_id)
            return row.with_outcome(txn.Outcome.ABORTED)
        if abort_hanging(scope.admin, row):
            log.info("aborted hanging transaction of producer %s on %s", row.producer_id, row.partitions[0])
            return row.with_outcome(txn.Outcome.ABORTED)
        return row.with_outcome(txn.Outcome.LEFT, "no longer open when the abort was about to be sent")
    except EosError as exc:
        log.warning("could not abort %s: %s", row.transactional_id or row.partitions, exc.message)
        return row.with_outcome(txn.Outcome.FAILED, exc.message)


def _aborted_still_open(
    admin: KafkaAdminClient, done: Iterable[txn.AbortRow], scanned: Iterable[TopicPartition]
) -> bool:
    """Whether a producer just aborted still shows an open transaction on a scanned partition.

    Checked per producer, not by LSO < high watermark: another application's transaction on
    the same partition may keep the LSO pinned, and that one is not ours to wait for.
    """
    aborted = [row for row in done if row.outcome is txn.Outcome.ABORTED]
    producers = {row.producer_id for row in aborted}
    watch = {tp for row in aborted for tp in row.partitions} & set(scanned)
    if not watch:
        return False
    found = describe_producers(admin, watch)
    return any(p.producer_id in producers and p.has_open_transaction for states in found.values() for p in states)


def _settle(scope: _Scope, done: list[txn.AbortRow], clock: _Clock, timeout_s: float) -> _Scan:
    """Step 5: rescan until nothing is left to abort and no aborted producer is still open, or ``timeout_s`` ends.

    Markers are written asynchronously after the fence returns, so the first rescan may still
    show what was just ended; when the wait runs out, the last rescan says what is left.
    """

    def settled(rescan: _Scan) -> bool:
        return not rescan.open_rows and not _aborted_still_open(scope.admin, done, scope.partitions)

    settle = ABORTED_TRANSACTIONS_CLOSE.bounded(timeout_s=timeout_s)
    return settle.poll(
        lambda: scope.scan(clock.now()), until=settled, what=f"rescan of prefix {scope.prefix!r}"
    ).value


def _dry_run_report(scope: _Scope, first: _Scan, safety: txn.SafetyCheck, scanned_at: dt.datetime) -> txn.AbortReport:
    """What an execution would do: every row that acts would be aborted, nothing changed."""
    rows = tuple(
        row.with_outcome(txn.Outcome.WOULD_ABORT if row.action.acts else txn.Outcome.LEFT) for row in first.rows
    )
    return txn.AbortReport(
        prefix=scope.prefix,
        scanned_at=scanned_at,
        executed=False,
        safety=safety,
        rows=rows,
        offsets_before=tuple(first.offsets),
        offsets_after=tuple(first.offsets),
        remaining=tuple(row for row in rows if row.action.acts),
        hanging_min_age_ms=scope.hanging_min_age_ms,
        notes=scope.notes,
    )


def abort_open_transactions(
    clients: PipelineClients,
    *,
    force: bool = False,
    execute: bool = False,
    hanging_min_age_ms: int | None = None,
    settle_timeout_s: float = 30,
    driver_gone: str | None = None,
) -> txn.AbortReport:
    """Scan, check safety, abort what is open under the pipeline's prefix, and rescan.

    Lingering transactions (ongoing under the prefix) are fenced; hanging transactions on the
    output and dead-letter partitions are aborted with AbortTransaction, except those the
    coordinator attributes to an id outside the prefix. Transactions of other ids are never
    touched. The steps are the module's (its docstring lists them).

    :param clients: the pipeline's clients: the checkpoint (its newest commit is a sign of life)
        and the Kafka admin the scans and aborts go through.
    :param force: act even if the job looks alive (recent checkpoint commit, young transaction, live driver lease).
    :param execute: abort; without it (the default) a dry run: scan and report, change nothing, never refuse.
    :param hanging_min_age_ms: age above which an open partition transaction is a hanging
        candidate (default: the brokers' ``transaction.max.timeout.ms``, as Kafka's tool).
    :param settle_timeout_s: how long the rescan waits for aborted transactions to disappear.
    :param driver_gone: positive evidence that the driver is gone (see :func:`abort`).
    :raises UnsafeToActError: if there is something to abort, the job looks alive, ``execute`` is
        set and ``force`` is not.
    :raises TransactionsAdminError: if the cluster cannot be read.
    """
    spec = clients.spec
    clock = _Clock.start()
    # Read before Kafka is asked anything: the quiet period counts from the checkpoint's newest commit.
    signs = txn.LivenessSigns(
        last_commit_time=last_commit_time(clients.checkpoint),
        now=clock.scanned_at,
        transaction_timeout_ms=spec.transaction_timeout_ms,
        quiet_period_ms=txn.default_quiet_period_ms(spec.transaction_timeout_ms, spec.trigger_interval_ms),
        # An idle stream commits nothing and opens no transaction: its renewed lease is its sign of life.
        signs_of_life=lease_signs_of_life(clients.checkpoint),
        driver_gone=driver_gone,
    )
    with clients.transactions_admin() as admin:
        scope, first = _Scope.survey(admin, spec, hanging_min_age_ms).first_scan(clock.scanned_at)
        safety = _safety(scope, first, signs, execute=execute, force=force)
        if not execute:
            return _dry_run_report(scope, first, safety, clock.scanned_at)
        done = [_act(scope, row) for row in first.rows]
        last = _settle(scope, done, clock, settle_timeout_s)
    return txn.AbortReport(
        prefix=scope.prefix,
        scanned_at=clock.scanned_at,
        executed=True,
        safety=safety,
        rows=tuple(done),
        offsets_before=tuple(first.offsets),
        offsets_after=tuple(last.offsets),
        remaining=tuple(last.rows),
        hanging_min_age_ms=scope.hanging_min_age_ms,
        notes=scope.notes,
    )
