"""The health signals besides lag and commit age (:mod:`.commit_age`): hanging partitions, lingering
transactions, verification.

**Hanging transactions** on input, output and dead-letter partitions: a partition is *pinned*
when ``LSO < HWM`` (an open transaction holds the LSO; normal while a batch produces). It is
*hanging* when it was pinned in every sample of the window, its LSO never moved, and the window
spans at least the partition's hang threshold, after which no legitimate transaction is still
open, so the LSO will not move by itself and every ``read_committed`` reader is stuck. For output
and dead-letter partitions that is ``hang_after_ms``, the sink's own transaction timeout (signal
``hanging``, advice ``eos abort``). Input partitions are written by other producers, whose
transactions may last up to the brokers' ``transaction.max.timeout.ms`` (``input_hang_after_ms``):
a hanging input partition (signal ``input_hanging``; the job's lag on it reads 0) is an upstream
producer's, which neither ``eos abort`` (it scans the output and dead-letter topics) nor a restart of
the job can clear: it is in :data:`UPSTREAM_SIGNALS`, which a watch does not stop the driver for,
and its advice is Kafka's ``kafka-transactions.sh find-hanging`` and ``abort``. Hanging is
UNHEALTHY; pinned is HEALTHY and shown.

**Lingering transactions**: an ongoing transaction under the prefix older than
``lingering_after_ms`` or its own registered timeout, whichever is shorter, is UNHEALTHY (the
sink never keeps one open that long, so its producer is gone). Younger ones are the running
batch and are shown.

**The verification verdict** of the newest sample: ``IN_SYNC`` and ``KAFKA_AHEAD_SAFE`` are
HEALTHY, any other verdict UNHEALTHY. A verdict the probe could not settle (the group kept
committing while it read; the job is alive) is HEALTHY with a note.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import pendulum
from pydantic import computed_field

from airflow_provider_eos.core.acls.denials import apply_command
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.health.samples import HealthSample
from airflow_provider_eos.core.health.statuses import HealthStatus
from airflow_provider_eos.core.health.thresholds import HealthThresholds
from airflow_provider_eos.core.kafka_defaults import KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from airflow_provider_eos.core.topic_partition import PartitionRow, TopicPartition
from airflow_provider_eos.core.transactions import find_lingering, format_age
from airflow_provider_eos.core.transactions.admin_reports import PartitionName

__all__ = [
    "PROGRESS_SIGNALS",
    "UPSTREAM_SIGNALS",
    "Finding",
    "OpenTransaction",
    "PartitionGap",
    "Signal",
    "hang_after_ms",
    "hanging_findings",
    "input_hang_source",
    "open_transactions",
    "partition_gaps",
    "unread_max_timeout_note",
    "verification_finding",
]

#: The signals a finding can come from.
Signal = Literal["lag", "commit_age", "hanging", "input_hanging", "lingering", "verification"]

#: The signals that judge whether the job makes progress: a job that has just (re)started fails them
#: until its first commit (the last commit and the lag are the previous run's).
PROGRESS_SIGNALS: frozenset[Signal] = frozenset({"lag", "commit_age"})

#: The signals about what other applications do to the pipeline's input: stopping or restarting the job
#: cannot change them, so a watch does not stop the driver for them (the scheduled check still alerts).
UPSTREAM_SIGNALS: frozenset[Signal] = frozenset({"input_hanging"})


class Finding(FrozenModel):
    """One signal's verdict about one subject.

    :param signal: ``lag``, ``commit_age``, ``hanging``, ``input_hanging``, ``lingering`` or ``verification``.
    :param status: its contribution to the overall status.
    :param subject: what it is about (a partition, a transactional id, the checkpoint ...).
    :param detail: one sentence with the values found.
    """

    signal: Signal
    status: HealthStatus
    subject: str
    detail: str


# -- hanging: LSO < HWM that does not move -----------------------------------------------------

GapState = Literal["ok", "pinned", "hanging"]


class PartitionGap(PartitionRow):
    """LSO versus HWM of one partition over the window.

    :param tp: the partition.
    :param role: ``input``, ``output`` or ``dlq``.
    :param lso: the newest LSO.
    :param hwm: the newest HWM.
    :param state: ``ok`` (LSO = HWM), ``pinned`` (LSO < HWM) or ``hanging`` (pinned and unmoving
        for at least the role's hang threshold: :func:`hang_after_ms`).
    :param pinned_for_ms: how long the window saw the LSO pinned at this value (0 if not pinned).
    """

    role: str
    lso: int
    hwm: int
    state: GapState
    pinned_for_ms: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gap(self) -> int:
        """Records between the LSO and the HWM."""
        return max(0, self.hwm - self.lso)


_ROLE_ORDER = {"input": 0, "output": 1, "dlq": 2}


def hang_after_ms(role: str, th: HealthThresholds) -> int:
    """How long a partition of ``role`` may stay pinned before it counts as hanging.

    The input's producers are not the sink: their transactions may last up to the brokers' maximum.
    """
    return th.input_hang_after_ms if role == "input" else th.hang_after_ms


def _classify_gap(
    tp: TopicPartition, role: str, history: Sequence[tuple[int, int, int]], th: HealthThresholds
) -> PartitionGap:
    """Classify LSO vs HWM of one partition; ``history`` holds ``(time, lso, hwm)``, oldest first."""
    t_last, lso, hwm = history[-1]
    if lso >= hwm:
        return PartitionGap(tp=tp, role=role, lso=lso, hwm=hwm, state="ok", pinned_for_ms=0)
    # How long the LSO has been pinned at its current value: walk back while it stays put.
    since = t_last
    for t, old_lso, old_hwm in reversed(history):
        if old_lso != lso or old_lso >= old_hwm:
            break
        since = t
    pinned_for = t_last - since
    pinned_whole_window = since == history[0][0]
    hanging = len(history) >= 2 and pinned_whole_window and pinned_for >= hang_after_ms(role, th)
    return PartitionGap(
        tp=tp, role=role, lso=lso, hwm=hwm, state="hanging" if hanging else "pinned", pinned_for_ms=pinned_for
    )


def partition_gaps(samples: Sequence[HealthSample], th: HealthThresholds) -> tuple[PartitionGap, ...]:
    """LSO vs HWM of every partition of the newest sample: inputs, then outputs, then dead letters.

    :param samples: the window, oldest first (not empty).
    """
    history: dict[tuple[TopicPartition, str], list[tuple[int, int, int]]] = {}
    for sample in samples:
        for item in sample.inputs:
            history.setdefault((item.tp, "input"), []).append((sample.taken_at_ms, item.lso, item.hwm))
        for out in sample.outputs:
            history.setdefault((out.tp, out.role), []).append((sample.taken_at_ms, out.lso, out.hwm))
    latest = samples[-1]
    current = {(item.tp, "input") for item in latest.inputs} | {(out.tp, out.role) for out in latest.outputs}
    return tuple(
        _classify_gap(tp, role, history[(tp, role)], th)
        for tp, role in sorted(history, key=lambda key: (_ROLE_ORDER.get(key[1], 9), key[0]))
        if (tp, role) in current
    )


def input_hang_source(th: HealthThresholds, transaction_max_timeout_ms: int | None) -> str:
    """Where the input partitions' hang threshold came from, as a finding and a note name it.

    :param transaction_max_timeout_ms: the brokers' ``transaction.max.timeout.ms`` the newest sample read
        (``None``: not read).
    """
    limit = th.input_hang_after_ms
    if transaction_max_timeout_ms == limit:
        return "the brokers' transaction.max.timeout.ms"
    if transaction_max_timeout_ms is None and limit == KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS:
        return "Kafka's default transaction.max.timeout.ms; the brokers' own setting was not read"
    return "input_hang_after_ms"


def unread_max_timeout_note(
    gaps: Iterable[PartitionGap], th: HealthThresholds, latest: HealthSample, *, pipeline: str | None = None,
) -> str | None:
    """What a pinned input partition is judged against when the brokers' maximum could not be read, and the fix.

    Only while an input partition is pinned (else no threshold of the input is in play) and the threshold is
    Kafka's default (an ``input_hang_after_ms`` the user set is theirs). Kafka's default is too short where the
    brokers allow longer transactions (a legitimate upstream transaction reported hanging) and too long where
    they allow less (a hanging one reported late). Its first sentence fits a card's note. The grant is the
    health role's set with its opt-in, as ``eos acls`` applies it (design note 71).

    :param pipeline: the pipeline's name, so the grant's command names its spec.
    """
    reason = latest.transaction_max_timeout_unread
    pinned = any(gap.role == "input" and gap.state != "ok" for gap in gaps)
    if reason is None or not pinned or latest.transaction_max_timeout_ms is not None:
        return None
    if th.input_hang_after_ms != KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS:
        return None
    default = format_age(KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS)
    grant = apply_command("User:NAME", "health", options=("--broker-configs",))
    return (
        f"input_hang_after_ms is Kafka's default ({default}): the brokers' transaction.max.timeout.ms could not be "
        "read; grant the health principal DESCRIBE_CONFIGS on the cluster, or set input_hang_after_ms to it. "
        f"Refused: {reason.rstrip('.')}. Grant, as an administrator: `{grant}`, FILE being the spec of "
        f"{'the pipeline' if pipeline is None else repr(pipeline)} (docs/security.md); the threshold: the spec's "
        "health_thresholds, the health sensor's thresholds, or `eos health --threshold input_hang_after_ms=MS`"
    )


def hanging_findings(
    gaps: Iterable[PartitionGap], th: HealthThresholds, *, transaction_max_timeout_ms: int | None = None
) -> list[Finding]:
    """An UNHEALTHY finding per hanging partition: ``input_hanging`` for an input partition, else ``hanging``.

    :param transaction_max_timeout_ms: the brokers' ``transaction.max.timeout.ms`` as the newest sample
        read it (``None``: not read); the input's finding says where its threshold came from.
    """
    findings = []
    for gap in gaps:
        if gap.state != "hanging":
            continue
        limit = hang_after_ms(gap.role, th)
        pinned = f"LSO {gap.lso} < HWM {gap.hwm} and unmoved for {format_age(gap.pinned_for_ms)}"
        if gap.role == "input":
            source = input_hang_source(th, transaction_max_timeout_ms)
            findings.append(Finding(
                signal="input_hanging", status=HealthStatus.UNHEALTHY, subject=f"{gap.tp} (input)",
                detail=f"{pinned} (hanging after {format_age(limit)}: {source}): an upstream producer's "
                "transaction pins it and the job cannot read past it; restarting the job cannot help. Find it "
                f"with `kafka-transactions.sh --bootstrap-server HOST:PORT find-hanging --topic {gap.tp.topic} "
                f"--partition {gap.tp.partition}` and abort it with `kafka-transactions.sh abort` (or have its "
                "producer's owner end it)",
            ))
            continue
        findings.append(Finding(
            signal="hanging", status=HealthStatus.UNHEALTHY, subject=f"{gap.tp} ({gap.role})",
            detail=f"{pinned} (hanging after {format_age(limit)}): an open transaction pins it; "
            "read_committed readers are stuck; run `eos abort --execute`",
        ))
    return findings


# -- lingering: ongoing transactions under the prefix ---------------------------------------------


class OpenTransaction(FrozenModel):
    """An open transaction under the prefix, as the report shows it.

    :param transactional_id: the id.
    :param state: the coordinator's state.
    :param age_ms: how long it has been open (``None``: unknown).
    :param limit_ms: the age above which it counts as lingering.
    :param lingering: whether it is older than ``limit_ms``.
    :param partitions: the partitions it holds (in JSON ``"topic-N"`` text, as people read them).
    """

    transactional_id: str
    state: str
    age_ms: int | None
    limit_ms: int
    lingering: bool
    partitions: tuple[PartitionName, ...]


def open_transactions(
    latest: HealthSample, prefix: str, th: HealthThresholds
) -> tuple[tuple[OpenTransaction, ...], list[Finding]]:
    """The ongoing transactions under ``prefix`` in the newest sample, and a finding per lingering one."""
    rows: list[OpenTransaction] = []
    findings: list[Finding] = []
    now = pendulum.from_timestamp(latest.taken_at_ms / 1000, tz="UTC")
    for item in find_lingering(prefix, latest.transactions, now, th.lingering_after_ms):
        limit = min(item.timeout_ms, th.lingering_after_ms)
        lingering = item.age_ms is not None and item.age_ms > limit
        txn = item.transaction
        partitions = tuple(sorted(txn.partitions))
        rows.append(
            OpenTransaction(
                transactional_id=txn.transactional_id,
                state=txn.state.value,
                age_ms=item.age_ms,
                limit_ms=limit,
                lingering=lingering,
                partitions=partitions,
            )
        )
        if lingering:
            findings.append(
                Finding(
                    signal="lingering",
                    status=HealthStatus.UNHEALTHY,
                    subject=txn.transactional_id,
                    detail=f"ongoing for {format_age(item.age_ms)}, longer than {format_age(limit)}: its producer is "
                    "gone and it pins the LSO of "
                    + (", ".join(str(tp) for tp in partitions) or "its partitions")
                    + "; run `eos abort --execute`",
                )
            )
    return tuple(rows), findings


# -- verification ------------------------------------------------------------------------------

_VERIFICATION = "sink group vs checkpoint"


def verification_finding(latest: HealthSample) -> Finding:
    """Judge the newest sample's verification verdict."""
    result = latest.verification
    if result is None:
        return Finding(signal="verification", status=HealthStatus.HEALTHY, subject=_VERIFICATION, detail="not checked")
    if result.verdict is None:
        return Finding(
            signal="verification",
            status=HealthStatus.HEALTHY,
            subject=_VERIFICATION,
            detail=result.note or "not settled: the group kept committing while it was read (the job is alive)",
        )
    if result.ok:
        return Finding(signal="verification", status=HealthStatus.HEALTHY, subject=_VERIFICATION, detail=result.verdict)
    return Finding(
        signal="verification",
        status=HealthStatus.UNHEALTHY,
        subject=_VERIFICATION,
        detail=f"{result.verdict}: " + (result.next_step or "run `eos verify` for the partition table"),
    )
