"""Open transactions after a failure: which are lingering, which are hanging, and whether to act.

Two kinds of open transaction pin the last stable offset (LSO) of the pipeline's output and
stall every ``read_committed`` consumer (DESIGN.md section 3):

*Lingering*
    A transaction under the pipeline's prefix that its coordinator still lists as ongoing, e.g.
    because the driver was killed between ``begin_transaction`` and ``commit_transaction``.
    The broker aborts it after its ``transaction.timeout.ms``; recovery can abort it at once by
    *fencing*: ``init_transactions`` with the same transactional id aborts the open
    transaction and bumps the producer epoch.
*Hanging*
    A partition's leader holds an open transaction (DescribeProducers shows a current
    transaction start offset) that no coordinator will ever finish, because the coordinator
    does not list the partition in that producer's transaction. Only the admin
    AbortTransaction (a WriteTxnMarkers abort sent to the leader) clears it.
    :func:`find_hanging` is the logic of Apache Kafka's own ``kafka-transactions.sh
    find-hanging`` (``TransactionsCommand.FindHangingTransactionsCommand``).

Safety rules, enforced here so every caller (CLI, Airflow operator) gets them:

* Nothing outside the prefix is ever touched: an id is acted on only if
  :func:`~airflow_provider_eos.core.transactional_ids.belongs_to_prefix` says so. A hanging
  transaction whose producer the coordinator attributes to another transactional id is
  reported and left alone. One the coordinator attributes to no id at all is aborted: no
  coordinator will ever finish it, whoever wrote it, and it sits on the pipeline's own
  output or dead-letter partitions.
* Acting while the job looks alive is refused unless forced (:func:`check_safe_to_act`).

This module is pure: the Kafka I/O lives in :mod:`airflow_provider_eos.kafka.transactions_admin`.
Times are milliseconds since the epoch, as the Kafka admin API reports them.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_eos.core.errors import UnsafeToActError
from airflow_provider_eos.core.report_table import render_table
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactional_ids import belongs_to_prefix

__all__ = [
    "AbortReport",
    "AbortRow",
    "Action",
    "HangingTransaction",
    "LingeringTransaction",
    "OpenPartitionTransaction",
    "Outcome",
    "PartitionOffsets",
    "ProducerState",
    "SafetyCheck",
    "Transaction",
    "TransactionListing",
    "TxnState",
    "check_safe_to_act",
    "default_quiet_period_ms",
    "evaluate_safety",
    "find_hanging",
    "find_lingering",
    "format_age",
    "hanging_candidates",
    "open_under_prefix",
    "plan_abort",
    "to_epoch_ms",
]


class TxnState(enum.StrEnum):
    """A transaction's state as the coordinator reports it (the Kafka wire names)."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"
    UNKNOWN = "Unknown"

    @classmethod
    def parse(cls, value: object) -> TxnState:
        """Map a client library's state (enum or string) to a member; unknown text is ``UNKNOWN``."""
        text = str(getattr(value, "value", value))
        try:
            return cls(text)
        except ValueError:
            return cls.UNKNOWN

    @property
    def is_open(self) -> bool:
        """True while the transaction still holds partitions: ongoing or being completed."""
        return self in _OPEN_STATES

    @property
    def is_completing(self) -> bool:
        """True when the coordinator is already writing markers; it finishes without help."""
        return self in _OPEN_STATES and self is not TxnState.ONGOING


_OPEN_STATES = frozenset(
    {TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE}
)


def to_epoch_ms(moment: dt.datetime) -> int:
    """Milliseconds since the epoch of an aware datetime (naive ones are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def format_age(age_ms: int | None) -> str | None:
    """A compact, readable duration: ``850ms``, ``12s``, ``4m05s``, ``2h03m``, ``3d04h``."""
    if age_ms is None:
        return None
    if age_ms < 0:
        # Clock skew between this host and the broker; say so instead of printing nonsense.
        return f"-{format_age(-age_ms)}"
    if age_ms < 1_000:
        return f"{age_ms}ms"
    seconds = age_ms // 1_000
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def _partitions_text(partitions: Iterable[TopicPartition]) -> str | None:
    ordered = sorted(partitions)
    return ", ".join(str(tp) for tp in ordered) if ordered else None


# -- what the admin API reports ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TransactionListing:
    """One row of ListTransactions: an id, its current producer id and its state."""

    transactional_id: str
    producer_id: int
    state: TxnState


@dataclass(frozen=True, slots=True)
class Transaction:
    """A transactional id as DescribeTransactions reports it.

    :param transactional_id: the id.
    :param state: the coordinator's state for it.
    :param producer_id: the producer id currently bound to the id.
    :param producer_epoch: its epoch (fencing bumps it).
    :param start_time_ms: when the current transaction started (``None``: none running).
    :param timeout_ms: the ``transaction.timeout.ms`` the producer registered.
    :param partitions: partitions in the transaction (for completing states: those still
        waiting for markers).
    :param coordinator_id: the broker coordinating the id, when known.
    """

    transactional_id: str
    state: TxnState
    producer_id: int
    producer_epoch: int
    start_time_ms: int | None
    timeout_ms: int
    partitions: frozenset[TopicPartition] = frozenset()
    coordinator_id: int | None = None

    def age_ms(self, now_ms: int) -> int | None:
        """How long the current transaction has been open; ``None`` when none is."""
        return None if self.start_time_ms is None else now_ms - self.start_time_ms

    def to_dict(self) -> dict[str, Any]:
        """The description as JSON-serializable values."""
        return {
            "transactional_id": self.transactional_id,
            "state": self.state.value,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "start_time_ms": self.start_time_ms,
            "timeout_ms": self.timeout_ms,
            "partitions": [str(tp) for tp in sorted(self.partitions)],
            "coordinator_id": self.coordinator_id,
        }


@dataclass(frozen=True, slots=True)
class ProducerState:
    """One active producer on a partition, as DescribeProducers reports it.

    :param producer_id: the producer id.
    :param producer_epoch: its epoch.
    :param last_sequence: the last sequence number written.
    :param last_timestamp_ms: the timestamp of its last write.
    :param coordinator_epoch: the coordinator epoch of its last marker (``-1``: none yet).
    :param current_txn_start_offset: first offset of its open transaction on this partition,
        ``-1`` when it has none.
    """

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp_ms: int
    coordinator_epoch: int
    current_txn_start_offset: int

    @property
    def has_open_transaction(self) -> bool:
        """True when this producer has a transaction open on the partition."""
        return self.current_txn_start_offset >= 0

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON-serializable values."""
        return {
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "last_sequence": self.last_sequence,
            "last_timestamp_ms": self.last_timestamp_ms,
            "coordinator_epoch": self.coordinator_epoch,
            "current_txn_start_offset": self.current_txn_start_offset,
        }


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """A partition's last stable offset (``read_committed`` end) and high watermark."""

    tp: TopicPartition
    lso: int
    hwm: int

    @property
    def pinned(self) -> bool:
        """True when an open transaction holds the LSO below the high watermark."""
        return self.lso < self.hwm

    def to_dict(self) -> dict[str, Any]:
        """The offsets as JSON-serializable values."""
        return {"partition": str(self.tp), "lso": self.lso, "hwm": self.hwm, "pinned": self.pinned}


# -- lingering ---------------------------------------------------------------------------------


def open_under_prefix(prefix: str, transactions: Iterable[Transaction]) -> list[Transaction]:
    """The transactions under ``prefix`` that still hold partitions (ongoing or completing).

    Ids outside the prefix are dropped here, before anything else looks at them.
    """
    return sorted(
        (t for t in transactions if belongs_to_prefix(prefix, t.transactional_id) and t.state.is_open),
        key=lambda t: t.transactional_id,
    )


@dataclass(frozen=True, slots=True)
class LingeringTransaction:
    """An ongoing transaction under the pipeline's prefix.

    :param transaction: the coordinator's description.
    :param age_ms: how long it has been open (``None``: the coordinator reports no start).
    :param timeout_ms: its transaction timeout (the registered one, else the spec's).
    """

    transaction: Transaction
    age_ms: int | None
    timeout_ms: int

    @property
    def overdue(self) -> bool:
        """True when it outlived its timeout: the broker aborts it on its next cleanup pass."""
        return self.age_ms is not None and self.age_ms > self.timeout_ms

    @property
    def young(self) -> bool:
        """True when its producer may still be working on it (unknown age counts as young)."""
        return self.age_ms is None or self.age_ms < self.timeout_ms


def find_lingering(
    prefix: str, transactions: Iterable[Transaction], now: dt.datetime, transaction_timeout_ms: int
) -> list[LingeringTransaction]:
    """Ongoing transactions whose id belongs to ``prefix``, oldest first.

    Transactions the coordinator is already completing (``Prepare*``) are not lingering: the
    coordinator finishes them without help, and fencing would only wait for it.

    :param prefix: the pipeline's transactional id prefix.
    :param transactions: described transactions, any ids (those outside ``prefix`` are ignored).
    :param now: the current time.
    :param transaction_timeout_ms: the spec's timeout, used when the broker reports none.
    """
    now_ms = to_epoch_ms(now)
    found = [
        LingeringTransaction(
            transaction=t,
            age_ms=t.age_ms(now_ms),
            timeout_ms=t.timeout_ms if t.timeout_ms > 0 else transaction_timeout_ms,
        )
        for t in open_under_prefix(prefix, transactions)
        if t.state is TxnState.ONGOING
    ]
    return sorted(found, key=lambda item: (-(item.age_ms or 0), item.transaction.transactional_id))


# -- hanging -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpenPartitionTransaction:
    """A producer's open transaction on one partition (a hanging candidate)."""

    tp: TopicPartition
    producer: ProducerState


def hanging_candidates(
    producers: Mapping[TopicPartition, Sequence[ProducerState]], now: dt.datetime, max_transaction_timeout_ms: int
) -> list[OpenPartitionTransaction]:
    """Open transactions whose producer last wrote longer ago than the maximum transaction timeout.

    Kafka's ``find-hanging`` measures from the producer's last write (``lastTimestamp``), and
    only strictly older transactions qualify: no live producer can keep a transaction open past
    ``transaction.max.timeout.ms``, so a younger one may still complete normally.

    :param producers: DescribeProducers' active producers per partition.
    :param now: the current time.
    :param max_transaction_timeout_ms: the broker's ``transaction.max.timeout.ms``.
    """
    now_ms = to_epoch_ms(now)
    found = [
        OpenPartitionTransaction(tp, producer)
        for tp, states in producers.items()
        for producer in states
        if producer.has_open_transaction and now_ms - producer.last_timestamp_ms > max_transaction_timeout_ms
    ]
    return sorted(found, key=lambda c: (c.tp, c.producer.producer_id))


class HangingReason(enum.StrEnum):
    """Why a candidate is hanging, in the order Kafka's ``find-hanging`` tests it."""

    NO_TRANSACTIONAL_ID = "no coordinator lists this producer id"
    NOT_DESCRIBED = "the coordinator does not know the transactional id"
    PARTITION_NOT_IN_TRANSACTION = "the coordinator's transaction does not include this partition"


@dataclass(frozen=True, slots=True)
class HangingTransaction:
    """An open transaction on a partition that no coordinator will finish.

    :param tp: the partition.
    :param producer: the producer's state there.
    :param age_ms: time since the producer's last write to the partition.
    :param transactional_id: the id the coordinator binds to the producer id (``None``: none).
    :param coordinator_state: that id's state (``None``: not described).
    :param reason: why it is hanging.
    """

    tp: TopicPartition
    producer: ProducerState
    age_ms: int
    transactional_id: str | None
    coordinator_state: TxnState | None
    reason: HangingReason

    def owner(self, prefix: str) -> str:
        """``ours`` (id under ``prefix``), ``foreign`` (another id) or ``unattributed`` (no id)."""
        if self.transactional_id is None:
            return "unattributed"
        return "ours" if belongs_to_prefix(prefix, self.transactional_id) else "foreign"

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON-serializable values."""
        return {
            "partition": str(self.tp),
            "producer": self.producer.to_dict(),
            "age_ms": self.age_ms,
            "transactional_id": self.transactional_id,
            "coordinator_state": None if self.coordinator_state is None else self.coordinator_state.value,
            "reason": self.reason.value,
        }


def find_hanging(
    producers: Mapping[TopicPartition, Sequence[ProducerState]],
    listings: Iterable[TransactionListing],
    descriptions: Mapping[str, Transaction | None],
    *,
    now: dt.datetime,
    max_transaction_timeout_ms: int,
) -> list[HangingTransaction]:
    """Hanging transactions, decided exactly as Kafka's ``find-hanging`` decides them.

    1. Candidates: :func:`hanging_candidates`.
    2. The candidates' producer ids are looked up with ListTransactions (filtered by producer
       id, any state); a candidate whose producer id no listing names is hanging.
    3. The ids found are described; a candidate whose id is not found is hanging.
    4. Otherwise it is hanging unless the description's partitions include the candidate's
       partition (ongoing transactions list every partition written; completing ones those
       still waiting for markers, so the coordinator will still write them).

    :param producers: DescribeProducers' active producers per partition.
    :param listings: ListTransactions rows for the candidates' producer ids (rows for other
        producer ids are ignored, as Kafka's tool ignores them).
    :param descriptions: DescribeTransactions per id of those rows; ``None`` (or absent) for an
        id the coordinator does not know.
    :param now: the current time.
    :param max_transaction_timeout_ms: the broker's ``transaction.max.timeout.ms``.
    """
    now_ms = to_epoch_ms(now)
    candidates = hanging_candidates(producers, now, max_transaction_timeout_ms)
    wanted = {c.producer.producer_id for c in candidates}
    id_by_producer: dict[int, str] = {}
    for listing in listings:
        if listing.producer_id in wanted:
            id_by_producer[listing.producer_id] = listing.transactional_id
    hanging: list[HangingTransaction] = []
    for candidate in candidates:
        txn_id = id_by_producer.get(candidate.producer.producer_id)
        description = descriptions.get(txn_id) if txn_id is not None else None
        if txn_id is None:
            reason = HangingReason.NO_TRANSACTIONAL_ID
        elif description is None:
            reason = HangingReason.NOT_DESCRIBED
        elif candidate.tp not in description.partitions:
            reason = HangingReason.PARTITION_NOT_IN_TRANSACTION
        else:
            continue
        hanging.append(
            HangingTransaction(
                tp=candidate.tp,
                producer=candidate.producer,
                age_ms=now_ms - candidate.producer.last_timestamp_ms,
                transactional_id=txn_id,
                coordinator_state=None if description is None else description.state,
                reason=reason,
            )
        )
    return hanging


# -- safety ------------------------------------------------------------------------------------


def default_quiet_period_ms(transaction_timeout_ms: int, trigger_interval_ms: int | None) -> int:
    """How long without a checkpoint commit before the job counts as stopped.

    A producer that committed within its transaction timeout may still have a transaction
    open; a job on a processing-time trigger commits once per interval, so two missed
    intervals are needed before silence means anything.
    """
    return max(transaction_timeout_ms, 2 * (trigger_interval_ms or 0))


@dataclass(frozen=True, slots=True)
class SafetyCheck:
    """Whether recovery may act now, and why not.

    :param reasons: each sign that the job is alive, with the values found; empty when safe.
    :param forced: whether the caller chose to act despite the reasons.
    """

    reasons: tuple[str, ...]
    forced: bool = False

    @property
    def safe(self) -> bool:
        """True when no sign of life was found."""
        return not self.reasons

    @property
    def may_act(self) -> bool:
        """True when acting is allowed: safe, or forced."""
        return self.safe or self.forced

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON-serializable values."""
        return {"safe": self.safe, "forced": self.forced, "may_act": self.may_act, "reasons": list(self.reasons)}


def evaluate_safety(
    prefix: str,
    transactions: Iterable[Transaction],
    *,
    last_commit_time: dt.datetime | None,
    now: dt.datetime,
    transaction_timeout_ms: int,
    quiet_period_ms: int,
    force: bool = False,
) -> SafetyCheck:
    """Collect the signs that the pipeline is alive; never raises (see :func:`check_safe_to_act`).

    :param prefix: the pipeline's transactional id prefix.
    :param transactions: described transactions (ids outside ``prefix`` are ignored).
    :param last_commit_time: when the checkpoint's newest ``commits/N`` was written (``None``:
        no checkpoint or no commit yet).
    :param now: the current time.
    :param transaction_timeout_ms: the spec's timeout, used when the broker reports none.
    :param quiet_period_ms: a commit newer than this means the job may be running.
    :param force: record that the caller acts regardless.
    """
    reasons: list[str] = []
    now_ms = to_epoch_ms(now)
    if last_commit_time is not None:
        commit_age = now_ms - to_epoch_ms(last_commit_time)
        if commit_age < quiet_period_ms:
            reasons.append(
                f"the checkpoint's newest commit is {format_age(max(commit_age, 0))} old "
                f"({last_commit_time.isoformat()}), newer than the quiet period of {format_age(quiet_period_ms)}: "
                "the job may still be running"
            )
    for item in find_lingering(prefix, transactions, now, transaction_timeout_ms):
        if item.young:
            age = "of unknown age" if item.age_ms is None else f"{format_age(item.age_ms)} old"
            reasons.append(
                f"transaction {item.transaction.transactional_id!r} is ongoing and {age}, younger than "
                f"its timeout of {format_age(item.timeout_ms)}: its producer may still be working on it"
            )
    return SafetyCheck(reasons=tuple(reasons), forced=force and bool(reasons))


def check_safe_to_act(
    prefix: str,
    transactions: Iterable[Transaction],
    *,
    last_commit_time: dt.datetime | None,
    now: dt.datetime,
    transaction_timeout_ms: int,
    quiet_period_ms: int,
    force: bool = False,
) -> SafetyCheck:
    """Refuse to act while the pipeline looks alive, unless forced.

    Takes the arguments of :func:`evaluate_safety`.

    :return: the check (``forced`` set when signs of life were overridden).
    :raises UnsafeToActError: naming each sign of life and how to force, if any was found and
        ``force`` is false.
    """
    check = evaluate_safety(
        prefix,
        transactions,
        last_commit_time=last_commit_time,
        now=now,
        transaction_timeout_ms=transaction_timeout_ms,
        quiet_period_ms=quiet_period_ms,
        force=force,
    )
    if not check.may_act:
        raise UnsafeToActError(
            f"refusing to abort transactions under prefix {prefix!r}: the pipeline looks alive:\n"
            + "\n".join(f"  - {reason}" for reason in check.reasons),
            fix="stop the job and retry once the quiet period has passed; or, if you are sure "
            "nothing runs (e.g. the driver was killed), pass --force (force=True): fencing "
            "aborts a live job's transaction and makes its next commit fail",
        )
    return check


# -- the plan and the report -------------------------------------------------------------------


class Action(enum.StrEnum):
    """What recovery does (or would do) with one open transaction."""

    FENCE = "abort by fencing"
    ABORT_MARKER = "abort with AbortTransaction"
    LEAVE_COMPLETING = "leave: the coordinator is completing it"
    LEAVE_FOREIGN = "leave: its transactional id is outside the prefix"

    @property
    def acts(self) -> bool:
        """True for the actions that change Kafka."""
        return self in (Action.FENCE, Action.ABORT_MARKER)


class Outcome(enum.StrEnum):
    """What happened to one row."""

    ABORTED = "aborted"
    WOULD_ABORT = "would abort (dry run)"
    LEFT = "left as is"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class AbortRow:
    """One open transaction found by the scan, with the planned action and its outcome.

    :param kind: ``lingering``, ``completing`` or ``hanging``.
    :param transactional_id: the id (``None`` for an unattributed hanging transaction).
    :param state: the coordinator's state (``None`` when it knows none).
    :param producer_id: the producer id.
    :param producer_epoch: the producer epoch.
    :param age_ms: how long it has been open (hanging: since the producer's last write).
    :param partitions: the partitions it holds.
    :param action: what recovery does with it.
    :param outcome: what happened (``None`` until acted on).
    :param detail: one sentence with the why, or the error of a failed action.
    :param start_offset: a hanging transaction's first offset on its partition.
    :param coordinator_epoch: a hanging transaction's coordinator epoch (for the abort request).
    """

    kind: str
    transactional_id: str | None
    state: str | None
    producer_id: int
    producer_epoch: int
    age_ms: int | None
    partitions: tuple[TopicPartition, ...]
    action: Action
    outcome: Outcome | None = None
    detail: str = ""
    start_offset: int | None = None
    coordinator_epoch: int | None = None

    def with_outcome(self, outcome: Outcome, detail: str | None = None) -> AbortRow:
        """A copy with the outcome (and optionally a new detail) set."""
        return AbortRow(
            kind=self.kind,
            transactional_id=self.transactional_id,
            state=self.state,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            age_ms=self.age_ms,
            partitions=self.partitions,
            action=self.action,
            outcome=outcome,
            detail=self.detail if detail is None else detail,
            start_offset=self.start_offset,
            coordinator_epoch=self.coordinator_epoch,
        )

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-serializable values."""
        return {
            "kind": self.kind,
            "transactional_id": self.transactional_id,
            "state": self.state,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "age_ms": self.age_ms,
            "partitions": [str(tp) for tp in self.partitions],
            "action": self.action.value,
            "outcome": None if self.outcome is None else self.outcome.value,
            "detail": self.detail,
            "start_offset": self.start_offset,
            "coordinator_epoch": self.coordinator_epoch,
        }


def plan_abort(
    prefix: str,
    transactions: Iterable[Transaction],
    hanging: Iterable[HangingTransaction],
    *,
    now: dt.datetime,
    transaction_timeout_ms: int,
) -> tuple[AbortRow, ...]:
    """Decide what to do with every open transaction the scan found; changes nothing.

    Ongoing transactions under the prefix are fenced; completing ones are left to their
    coordinator; transactions outside the prefix never appear. Hanging transactions are
    aborted with AbortTransaction unless the coordinator attributes them to an id outside
    the prefix, in which case they are reported and left.
    """
    now_ms = to_epoch_ms(now)
    rows: list[AbortRow] = []
    for item in find_lingering(prefix, transactions, now, transaction_timeout_ms):
        t = item.transaction
        note = (
            "overdue: the broker would abort it on its next cleanup pass"
            if item.overdue
            else f"open for {format_age(item.age_ms) or 'an unknown time'} of its {format_age(item.timeout_ms)} timeout"
        )
        rows.append(
            AbortRow(
                kind="lingering",
                transactional_id=t.transactional_id,
                state=t.state.value,
                producer_id=t.producer_id,
                producer_epoch=t.producer_epoch,
                age_ms=item.age_ms,
                partitions=tuple(sorted(t.partitions)),
                action=Action.FENCE,
                detail=note,
            )
        )
    for t in open_under_prefix(prefix, transactions):
        if t.state.is_completing:
            rows.append(
                AbortRow(
                    kind="completing",
                    transactional_id=t.transactional_id,
                    state=t.state.value,
                    producer_id=t.producer_id,
                    producer_epoch=t.producer_epoch,
                    age_ms=t.age_ms(now_ms),
                    partitions=tuple(sorted(t.partitions)),
                    action=Action.LEAVE_COMPLETING,
                    detail="the coordinator is writing its markers",
                )
            )
    for h in sorted(hanging, key=lambda h: (h.tp, h.producer.producer_id)):
        owner = h.owner(prefix)
        rows.append(
            AbortRow(
                kind="hanging",
                transactional_id=h.transactional_id,
                state=None if h.coordinator_state is None else h.coordinator_state.value,
                producer_id=h.producer.producer_id,
                producer_epoch=h.producer.producer_epoch,
                age_ms=h.age_ms,
                partitions=(h.tp,),
                action=Action.LEAVE_FOREIGN if owner == "foreign" else Action.ABORT_MARKER,
                detail=f"{h.reason.value}; starts at offset {h.producer.current_txn_start_offset}"
                + (
                    "; abort it with kafka-transactions.sh abort once its owner confirms"
                    if owner == "foreign"
                    else ""
                ),
                start_offset=h.producer.current_txn_start_offset,
                coordinator_epoch=h.producer.coordinator_epoch,
            )
        )
    return tuple(rows)


_ROW_HEADERS = ["kind", "transactional id", "state", "producer", "age", "partitions", "action", "outcome", "detail"]


def _row_cells(row: AbortRow) -> list[object]:
    return [
        row.kind,
        row.transactional_id,
        row.state,
        f"{row.producer_id}/{row.producer_epoch}",
        format_age(row.age_ms),
        _partitions_text(row.partitions),
        row.action,
        row.outcome,
        row.detail,
    ]


@dataclass(frozen=True)
class AbortReport:
    """What ``eos abort`` found, did, and found again afterwards.

    :param prefix: the pipeline's transactional id prefix.
    :param scanned_at: when the first scan ran (UTC).
    :param executed: whether actions were carried out (``False``: dry run or refused).
    :param safety: the safety check of the first scan.
    :param rows: one row per open transaction the first scan found, with its outcome.
    :param offsets_before: LSO and high watermark of the scanned partitions before acting.
    :param offsets_after: the same after acting (equal to ``offsets_before`` on a dry run).
    :param remaining: rows of the rescan: what is still open afterwards (dry run: the first
        scan's rows that would be acted on).
    :param hanging_min_age_ms: the age above which an open partition transaction was a
        hanging candidate (the broker's ``transaction.max.timeout.ms`` unless overridden).
    """

    prefix: str
    scanned_at: dt.datetime
    executed: bool
    safety: SafetyCheck
    rows: tuple[AbortRow, ...]
    offsets_before: tuple[PartitionOffsets, ...] = ()
    offsets_after: tuple[PartitionOffsets, ...] = ()
    remaining: tuple[AbortRow, ...] = ()
    hanging_min_age_ms: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def failures(self) -> tuple[AbortRow, ...]:
        """Rows whose action failed."""
        return tuple(row for row in self.rows if row.outcome is Outcome.FAILED)

    @property
    def ok(self) -> bool:
        """True when nothing this pipeline may abort is left open and no action failed."""
        return not self.failures and not any(row.action.acts for row in self.remaining)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-serializable, machine-readable values."""
        return {
            "ok": self.ok,
            "prefix": self.prefix,
            "scanned_at": self.scanned_at.isoformat(),
            "executed": self.executed,
            "safety": self.safety.to_dict(),
            "hanging_min_age_ms": self.hanging_min_age_ms,
            "rows": [row.to_dict() for row in self.rows],
            "remaining": [row.to_dict() for row in self.remaining],
            "offsets_before": [o.to_dict() for o in self.offsets_before],
            "offsets_after": [o.to_dict() for o in self.offsets_after],
            "notes": list(self.notes),
        }

    def render(self) -> str:
        """The report as readable text: what was found and done, then LSO vs high watermark."""
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.kind] = counts.get(row.kind, 0) + 1
        found = ", ".join(f"{n} {kind}" for kind, n in counts.items()) or "nothing open"
        mode = "executed" if self.executed else "dry run: nothing changed"
        lines = [
            f"Open transactions under prefix {self.prefix!r} at {self.scanned_at.isoformat()}: {found} ({mode})"
        ]
        if self.safety.reasons:
            if self.safety.forced:
                head = "Forced despite signs that the job is alive:"
            elif self.executed:
                head = "The job looks alive (nothing needed aborting, so nothing was refused):"
            else:
                head = "The job looks alive (executing would be refused without --force):"
            lines.append(head)
            lines.extend(f"  - {reason}" for reason in self.safety.reasons)
        lines.extend(f"Note: {note}" for note in self.notes)
        lines.append("")
        lines.append(render_table(_ROW_HEADERS, [_row_cells(row) for row in self.rows]))
        if self.offsets_before or self.offsets_after:
            after = {o.tp: o for o in self.offsets_after}
            lines.append("")
            lines.append("Last stable offset vs high watermark (before -> after):")
            lines.append(
                render_table(
                    ["partition", "LSO before", "HWM before", "LSO after", "HWM after", "pinned after"],
                    [
                        [
                            str(o.tp),
                            o.lso,
                            o.hwm,
                            after[o.tp].lso if o.tp in after else None,
                            after[o.tp].hwm if o.tp in after else None,
                            after[o.tp].pinned if o.tp in after else None,
                        ]
                        for o in self.offsets_before
                    ],
                )
            )
        lines.append("")
        if self.executed:
            if self.remaining:
                lines.append("Still open after acting:")
                lines.append(render_table(_ROW_HEADERS, [_row_cells(row) for row in self.remaining]))
            else:
                lines.append("Rescan: nothing under the prefix is open any more.")
        elif any(row.action.acts for row in self.rows):
            lines.append("Run without --dry-run (execute=True) to abort the rows marked 'abort'.")
        return "\n".join(lines)
