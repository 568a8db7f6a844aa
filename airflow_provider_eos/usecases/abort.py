"""Abort: end the pipeline's lingering and hanging transactions (docs/architecture.md, recovery).

Scan, check that the job is gone, act, rescan: the decisions (what is lingering, hanging, safe)
are :mod:`airflow_provider_eos.core.transactions`, the admin calls
:mod:`airflow_provider_eos.kafka.transactions_admin`; this module orders them.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core import transactions as txn
from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.transaction_actions import abort_hanging, fence
from airflow_provider_eos.kafka.transactions_admin import (
    admin_client,
    broker_max_transaction_timeout_ms,
    describe_producers,
    may_describe_every_id,
    scan_hanging,
    scan_prefix,
    topic_partitions,
)
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.liveness import last_commit_time
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
    report = abort_open_transactions(
        spec, force=force, execute=execute, storage_options=clients.storage_options, driver_gone=driver_gone
    )
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


def _scan(
    admin: KafkaAdminClient, spec: PipelineSpec, partitions: list[TopicPartition], now: dt.datetime, min_age_ms: int
) -> tuple[list[txn.Transaction], list[txn.HangingTransaction], list[txn.PartitionOffsets]]:
    transactions = scan_prefix(admin, spec.transactional_id_prefix)
    hanging, offsets = scan_hanging(admin, partitions, now=now, max_transaction_timeout_ms=min_age_ms)
    return transactions, hanging, offsets


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


def abort_open_transactions(
    spec: PipelineSpec,
    *,
    force: bool = False,
    execute: bool = False,
    now: dt.datetime | None = None,
    hanging_min_age_ms: int | None = None,
    quiet_period_ms: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    settle_timeout_s: float = 30,
    driver_gone: str | None = None,
) -> txn.AbortReport:
    """Scan, check safety, abort what is open under the pipeline's prefix, and rescan.

    Lingering transactions (ongoing under the prefix) are fenced; hanging transactions on the
    output and dead-letter partitions are aborted with AbortTransaction, except those the
    coordinator attributes to an id outside the prefix. Transactions of other ids are never
    touched.

    :param spec: the pipeline.
    :param force: act even if the job looks alive (recent checkpoint commit, young transaction).
    :param execute: abort; without it (the default) a dry run: scan and report, change nothing, never refuse.
    :param now: the current time (default: now); ages and the safety check use it.
    :param hanging_min_age_ms: age above which an open partition transaction is a hanging
        candidate (default: the brokers' ``transaction.max.timeout.ms``, as Kafka's tool).
    :param quiet_period_ms: a checkpoint commit newer than this means the job may be alive
        (default: :func:`~airflow_provider_eos.core.transactions.default_quiet_period_ms`).
    :param storage_options: fsspec options for the checkpoint location.
    :param settle_timeout_s: how long the rescan waits for aborted transactions to disappear.
    :param driver_gone: positive evidence that the driver is gone (see :func:`abort`).
    :raises UnsafeToActError: if there is something to abort, the job looks alive, ``execute`` is
        set and ``force`` is not.
    :raises TransactionsAdminError: if the cluster cannot be read.
    """
    started = time.monotonic()
    scanned_at = now or dt.datetime.now(dt.UTC)

    def current_time() -> dt.datetime:
        return scanned_at + dt.timedelta(seconds=time.monotonic() - started)

    prefix = spec.transactional_id_prefix
    quiet = (
        quiet_period_ms
        if quiet_period_ms is not None
        else txn.default_quiet_period_ms(spec.transaction_timeout_ms, spec.trigger_interval_ms)
    )
    last_commit = last_commit_time(spec, storage_options)
    topics = [spec.output_topic] + ([spec.dlq_topic] if spec.dlq_topic else [])
    notes: list[str] = []
    with admin_client(spec) as admin:
        partitions, missing = topic_partitions(admin, topics)
        if missing:
            notes.append(f"topic(s) {', '.join(missing)} do not exist; no hanging transactions there")
        min_age = hanging_min_age_ms if hanging_min_age_ms is not None else broker_max_transaction_timeout_ms(admin)
        transactions, hanging, offsets_before = _scan(admin, spec, partitions, scanned_at, min_age)
        safety_args = {
            "last_commit_time": last_commit,
            "now": scanned_at,
            "transaction_timeout_ms": spec.transaction_timeout_ms,
            "quiet_period_ms": quiet,
            "force": force,
            "driver_gone": driver_gone,
        }
        # Only asked when it matters: whether an unattributed hanging transaction may be someone else's.
        visible = all(h.owner(prefix) != "unattributed" for h in hanging) or may_describe_every_id(admin)
        planned = txn.plan_abort(
            prefix, transactions, hanging, now=scanned_at, transaction_timeout_ms=spec.transaction_timeout_ms,
            every_id_visible=visible,
        )
        # Refuse only when there is something to do: a scan that finds nothing harms no one.
        if execute and any(row.action.acts for row in planned):
            safety = txn.check_safe_to_act(prefix, transactions, **safety_args)
        else:
            safety = txn.evaluate_safety(prefix, transactions, **safety_args)
        if not execute:
            rows = tuple(
                row.with_outcome(txn.Outcome.WOULD_ABORT if row.action.acts else txn.Outcome.LEFT) for row in planned
            )
            return txn.AbortReport(
                prefix=prefix,
                scanned_at=scanned_at,
                executed=False,
                safety=safety,
                rows=rows,
                offsets_before=tuple(offsets_before),
                offsets_after=tuple(offsets_before),
                remaining=tuple(row for row in rows if row.action.acts),
                hanging_min_age_ms=min_age,
                notes=tuple(notes),
            )

        done: list[txn.AbortRow] = []
        for row in planned:
            if not row.action.acts:
                done.append(row.with_outcome(txn.Outcome.LEFT))
                continue
            try:
                if row.action is txn.Action.FENCE and row.transactional_id is not None:
                    log.info("fencing transactional id %s (producer %s)", row.transactional_id, row.producer_id)
                    fence(spec, row.transactional_id)
                    done.append(row.with_outcome(txn.Outcome.ABORTED))
                elif abort_hanging(admin, row):
                    log.info("aborted hanging transaction of producer %s on %s", row.producer_id, row.partitions[0])
                    done.append(row.with_outcome(txn.Outcome.ABORTED))
                else:
                    gone = "no longer open when the abort was about to be sent"
                    done.append(row.with_outcome(txn.Outcome.LEFT, gone))
            except EosError as exc:
                log.warning("could not abort %s: %s", row.transactional_id or row.partitions, exc.message)
                done.append(row.with_outcome(txn.Outcome.FAILED, exc.message))

        # Markers are written asynchronously after the fence returns; wait until the rescan
        # shows nothing left to abort (or the wait runs out, and the report says what is left).
        def rescan() -> tuple[list[txn.AbortRow], list[txn.PartitionOffsets]]:
            moment = current_time()
            transactions2, hanging2, offsets = _scan(admin, spec, partitions, moment, min_age)
            left = txn.plan_abort(
                prefix, transactions2, hanging2, now=moment, transaction_timeout_ms=spec.transaction_timeout_ms,
                every_id_visible=visible,
            )
            return left, offsets

        def settled(scan: tuple[list[txn.AbortRow], list[txn.PartitionOffsets]]) -> bool:
            return not any(row.action.acts for row in scan[0]) and not _aborted_still_open(admin, done, partitions)

        settle = ABORTED_TRANSACTIONS_CLOSE.bounded(timeout_s=settle_timeout_s)
        remaining, offsets_after = settle.poll(rescan, until=settled, what=f"rescan of prefix {prefix!r}").value
    return txn.AbortReport(
        prefix=prefix,
        scanned_at=scanned_at,
        executed=True,
        safety=safety,
        rows=tuple(done),
        offsets_before=tuple(offsets_before),
        offsets_after=tuple(offsets_after),
        remaining=tuple(remaining),
        hanging_min_age_ms=min_age,
        notes=tuple(notes),
    )
