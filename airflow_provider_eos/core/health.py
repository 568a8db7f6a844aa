"""Health of a running pipeline, judged from what exists without the job's cooperation (DESIGN.md section 5).

A *sample* (:class:`HealthSample`) is one look at the pipeline: per input partition the last
stable offset (LSO, ``read_committed`` end), the high watermark (HWM), the log start offset and
the sink group's committed offset with its batch marker; LSO and HWM of the output and
dead-letter partitions; the checkpoint's newest ``commits/N`` and its time; the transactions
the coordinators list under the transactional id prefix; and the verification verdict. The
Kafka and checkpoint I/O that takes a sample lives in
:mod:`airflow_provider_eos.kafka.health_probe`; everything here is pure.

Samples accumulate in a bounded sliding :class:`LagWindow` (oldest dropped first), and
:func:`evaluate` turns the window into a :class:`HealthReport`. Five signals:

**1. Lag per input partition** (rules in the spirit of LinkedIn Burrow's consumer lag
evaluation). For partition ``p`` take the window's samples that include it, oldest first:
time ``t_i``, committed offset ``o_i`` (``None``: the group has none), marker batch ``b_i`` and
``lag_i = max(0, LSO_i - o_i)`` (with no committed offset, ``LSO_i`` minus the log start
offset: everything retained is unread). Negative lags (the group committed after the LSO was
read) count as 0, as in Burrow. A *commit* between two samples is a change of ``(o, b)``: the
sink commits every input partition in every batch with that batch's marker, so a new marker
shows a commit even when the offset did not move (Kafka reports no commit timestamps, which
Burrow's window is built from; the marker is what replaces them here). Let ``n`` be the number
of samples and ``span = t_n - t_1``. The first rule that matches decides:

====== ========================================================================================
OK     R1: ``lag_i == 0`` for some ``i``: the group caught up within the window (Burrow rule 1).
REWIND R2 (``n >= 2``): ``o_i < o_(i-1)`` for some ``i``, or an offset disappeared: something
       other than the sink reset the group (Burrow rule 2).
STOP   R3 (``n >= 2``): no commit in the window and ``span >= stop_after_ms``: input waits and
       the group has not committed for at least ``stop_after_ms`` (Burrow rule 3, with the
       silence measured against a threshold derived from the trigger interval and batch
       budget instead of the window's own commit spacing, which this window cannot see).
STALL  R4 (``n >= min_samples``): at least one commit, but ``o`` never changed: batches commit
       while this partition, with data waiting, does not advance (Burrow rule 4).
WARN   R5 (``n >= min_samples``): ``o`` moved, but ``lag_i >= lag_(i-1)`` at every step: the
       job works but does not catch up (Burrow rule 5, "lag not decreasing").
OK     otherwise (including a window too short for R2-R5 to judge).
====== ========================================================================================

OK maps to HEALTHY, WARN to DEGRADED, STALL, STOP and REWIND to UNHEALTHY.

**2. Age of the newest commit** (``now`` is the newest sample's time). With no input lag in
the newest sample the pipeline is idle and any age is HEALTHY: a stateless query runs no batch
without new data. With lag: age ``>= stop_after_ms`` is UNHEALTHY, ``>= warn_after_ms``
DEGRADED. With lag and no commit at all, UNHEALTHY once the window spans ``stop_after_ms``,
DEGRADED before.

**3. Hanging transactions** on input, output and dead-letter partitions: a partition is
*pinned* when ``LSO < HWM`` (an open transaction holds the LSO; normal while a batch
produces). It is *hanging* when it was pinned in every sample of the window, its LSO never
moved, and the window spans at least ``hang_after_ms``: no transaction of the sink stays open
that long, so the LSO will not move by itself and every ``read_committed`` reader (the job
itself, for input partitions, whose lag then reads 0) is stuck. Hanging is UNHEALTHY; pinned
is HEALTHY and shown.

**4. Lingering transactions**: an ongoing transaction under the prefix older than
``lingering_after_ms`` or its own registered timeout, whichever is shorter, is UNHEALTHY (the
sink never keeps one open that long, so its producer is gone). Younger ones are the running
batch and are shown.

**5. The verification verdict** of the newest sample: ``IN_SYNC`` and ``KAFKA_AHEAD_SAFE`` are
HEALTHY, any other verdict UNHEALTHY. A verdict the probe could not settle (the group kept
committing while it read; the job is alive) is HEALTHY with a note.

The overall :class:`HealthStatus` is the worst finding: HEALTHY < DEGRADED < UNHEALTHY.
:attr:`HealthReport.is_healthy` is true unless UNHEALTHY (DEGRADED pipelines make progress).
"""

from __future__ import annotations

import enum
import itertools
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

import pendulum

from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.report_table import render_table
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import Transaction, TxnState, find_lingering, format_age

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = [
    "DEFAULT_MAX_SAMPLES",
    "Finding",
    "HealthError",
    "HealthReport",
    "HealthSample",
    "HealthStatus",
    "HealthThresholds",
    "InputPartitionSample",
    "LagStatus",
    "LagWindow",
    "OutputPartitionSample",
    "PartitionGap",
    "PartitionLag",
    "VerificationSample",
    "WatchMode",
    "WatchOutcome",
    "evaluate",
    "watch_outcome",
]

#: Samples a :class:`LagWindow` keeps by default (Burrow's default window is 10 offsets).
DEFAULT_MAX_SAMPLES = 10
_WINDOW_FORMAT = 1


class HealthError(EosError):
    """Health input (a serialized window, thresholds, a watch mode) is malformed."""


# -- statuses ----------------------------------------------------------------------------------


class HealthStatus(enum.StrEnum):
    """Overall and per-finding health; ordered by :attr:`severity`."""

    HEALTHY = "HEALTHY"
    DEGRADED = "DEGRADED"
    UNHEALTHY = "UNHEALTHY"

    @property
    def severity(self) -> int:
        """Rank used to pick the overall status; higher is worse."""
        return _STATUS_SEVERITY[self]


_STATUS_SEVERITY = {status: rank for rank, status in enumerate(HealthStatus)}


class LagStatus(enum.StrEnum):
    """The lag rule that decided one input partition (see the module docstring)."""

    OK = "OK"
    WARN = "WARN"
    STALL = "STALL"
    STOP = "STOP"
    REWIND = "REWIND"

    @property
    def health(self) -> HealthStatus:
        """The health a partition with this lag status contributes."""
        if self is LagStatus.OK:
            return HealthStatus.HEALTHY
        if self is LagStatus.WARN:
            return HealthStatus.DEGRADED
        return HealthStatus.UNHEALTHY


def _worst(statuses: Iterable[HealthStatus]) -> HealthStatus:
    return max(statuses, key=lambda status: status.severity, default=HealthStatus.HEALTHY)


def _iso(ms: int | None) -> str | None:
    return None if ms is None else pendulum.from_timestamp(ms / 1000, tz="UTC").isoformat()


# -- thresholds --------------------------------------------------------------------------------


@dataclass(frozen=True)
class HealthThresholds:
    """Limits the rules compare against, in milliseconds (see the module docstring).

    :param warn_after_ms: newest commit older than this while input waits: DEGRADED.
    :param stop_after_ms: newest commit older than this while input waits, or a partition
        without a commit for a window this long: UNHEALTHY (lag rule R3, STOP).
    :param hang_after_ms: a partition pinned (LSO < HWM) with an unmoving LSO this long is hanging.
    :param lingering_after_ms: an ongoing transaction under the prefix older than this (or than
        its own timeout, if shorter) is lingering.
    :param min_samples: samples the trend rules (R4 STALL, R5 WARN) need.
    """

    warn_after_ms: int
    stop_after_ms: int
    hang_after_ms: int
    lingering_after_ms: int
    min_samples: int = 3

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise HealthError(
                    f"health threshold {item.name} is {value!r}",
                    fix=f"set {item.name} to a positive integer"
                    + (" (milliseconds)" if item.name.endswith("_ms") else ""),
                )
        if self.min_samples < 2:
            raise HealthError(
                f"health threshold min_samples is {self.min_samples}; a trend needs at least 2 samples",
                fix="set min_samples to 2 or more",
            )

    @classmethod
    def from_spec(cls, spec: PipelineSpec) -> HealthThresholds:
        """Derive the thresholds from the pipeline's trigger interval, batch budget and timeout.

        Under load the sink commits once per *cycle*: the trigger interval, or the batch's
        duration when a batch takes longer. A batch's duration is bounded by the batch budget,
        or, without one, by the transaction timeout (a longer batch fails). Two missed cycles
        are a warning, four a stop. No sink transaction outlives its timeout, so that is the
        limit for hanging and lingering.
        """
        budget = spec.batch_budget_ms or spec.transaction_timeout_ms
        cycle = max(spec.trigger_interval_ms or 0, budget)
        return cls(
            warn_after_ms=2 * cycle,
            stop_after_ms=4 * cycle,
            hang_after_ms=spec.transaction_timeout_ms,
            lingering_after_ms=spec.transaction_timeout_ms,
        )

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> HealthThresholds:
        """A copy with some thresholds replaced.

        :raises HealthError: naming an unknown key or an invalid value.
        """
        if not overrides:
            return self
        allowed = [item.name for item in fields(self)]
        unknown = sorted(set(overrides) - set(allowed))
        if unknown:
            raise HealthError(
                f"unknown health threshold(s) {', '.join(unknown)}",
                fix=f"use only {', '.join(allowed)}",
            )
        return replace(self, **dict(overrides))

    def to_dict(self) -> dict[str, int]:
        """The thresholds as plain values; ``HealthThresholds(**d)`` inverts it."""
        return {item.name: getattr(self, item.name) for item in fields(self)}


# -- samples -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InputPartitionSample:
    """One input partition in one sample.

    :param tp: the partition.
    :param lso: last stable offset (``read_committed`` end offset).
    :param hwm: high watermark (``read_uncommitted`` end offset).
    :param log_start: the earliest retained offset (``None``: not read).
    :param committed: the sink group's committed offset (``None``: none).
    :param marker_batch: the batch its marker names (``None``: no readable marker).
    """

    tp: TopicPartition
    lso: int
    hwm: int
    log_start: int | None = None
    committed: int | None = None
    marker_batch: int | None = None

    @property
    def lag(self) -> int:
        """Records readable at ``read_committed`` that the group has not committed past."""
        base = self.committed if self.committed is not None else (self.log_start or 0)
        return max(0, self.lso - base)

    def to_dict(self) -> dict[str, Any]:
        """The sample as JSON-serializable values."""
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "lso": self.lso,
            "hwm": self.hwm,
            "log_start": self.log_start,
            "committed": self.committed,
            "marker_batch": self.marker_batch,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InputPartitionSample:
        """Inverse of :meth:`to_dict`."""
        return cls(
            tp=TopicPartition(str(data["topic"]), int(data["partition"])),
            lso=int(data["lso"]),
            hwm=int(data["hwm"]),
            log_start=_opt_int(data.get("log_start")),
            committed=_opt_int(data.get("committed")),
            marker_batch=_opt_int(data.get("marker_batch")),
        )


@dataclass(frozen=True, slots=True)
class OutputPartitionSample:
    """LSO and HWM of one output or dead-letter partition in one sample.

    :param tp: the partition.
    :param role: ``output`` or ``dlq``.
    :param lso: last stable offset.
    :param hwm: high watermark.
    """

    tp: TopicPartition
    role: str
    lso: int
    hwm: int

    def to_dict(self) -> dict[str, Any]:
        """The sample as JSON-serializable values."""
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "role": self.role,
            "lso": self.lso,
            "hwm": self.hwm,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OutputPartitionSample:
        """Inverse of :meth:`to_dict`."""
        return cls(
            tp=TopicPartition(str(data["topic"]), int(data["partition"])),
            role=str(data["role"]),
            lso=int(data["lso"]),
            hwm=int(data["hwm"]),
        )


@dataclass(frozen=True, slots=True)
class VerificationSample:
    """What verification said in one sample.

    :param verdict: the overall verdict (``None``: not settled, see ``note``).
    :param ok: whether the verdict lets the pipeline run as is (``None`` when not settled).
    :param next_step: the verification's next step.
    :param note: why there is no verdict, or other context.
    """

    verdict: str | None
    ok: bool | None
    next_step: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The verification as JSON-serializable values."""
        return {"verdict": self.verdict, "ok": self.ok, "next_step": self.next_step, "note": self.note}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VerificationSample:
        """Inverse of :meth:`to_dict`."""
        ok = data.get("ok")
        return cls(
            verdict=data.get("verdict"),
            ok=None if ok is None else bool(ok),
            next_step=data.get("next_step"),
            note=data.get("note"),
        )


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _transaction_to_dict(txn: Transaction) -> dict[str, Any]:
    return {
        "transactional_id": txn.transactional_id,
        "state": txn.state.value,
        "producer_id": txn.producer_id,
        "producer_epoch": txn.producer_epoch,
        "start_time_ms": txn.start_time_ms,
        "timeout_ms": txn.timeout_ms,
        # Pairs, not "topic-N" strings: topic names may contain '-'.
        "partitions": [[tp.topic, tp.partition] for tp in sorted(txn.partitions)],
        "coordinator_id": txn.coordinator_id,
    }


def _transaction_from_dict(data: Mapping[str, Any]) -> Transaction:
    return Transaction(
        transactional_id=str(data["transactional_id"]),
        state=TxnState.parse(data["state"]),
        producer_id=int(data["producer_id"]),
        producer_epoch=int(data["producer_epoch"]),
        start_time_ms=_opt_int(data.get("start_time_ms")),
        timeout_ms=int(data["timeout_ms"]),
        partitions=frozenset(TopicPartition(str(t), int(p)) for t, p in data.get("partitions", [])),
        coordinator_id=_opt_int(data.get("coordinator_id")),
    )


@dataclass(frozen=True)
class HealthSample:
    """One look at the pipeline; the I/O that takes it is :func:`airflow_provider_eos.kafka.health_probe.probe`.

    :param taken_at_ms: when the sample was taken (ms since the epoch, UTC).
    :param inputs: every input partition.
    :param outputs: every output and dead-letter partition.
    :param checkpoint_exists: whether the checkpoint location holds a checkpoint.
    :param query_id: the checkpoint's query id.
    :param last_committed: the newest batch with a ``commits/`` file.
    :param last_commit_time_ms: that file's modification time (ms since the epoch).
    :param verification: the verification verdict (``None``: not taken).
    :param transactions: the coordinators' descriptions of the transactional ids under the prefix.
    :param notes: anything the probe wants the report to mention.
    """

    taken_at_ms: int
    inputs: tuple[InputPartitionSample, ...] = ()
    outputs: tuple[OutputPartitionSample, ...] = ()
    checkpoint_exists: bool = True
    query_id: str | None = None
    last_committed: int | None = None
    last_commit_time_ms: int | None = None
    verification: VerificationSample | None = None
    transactions: tuple[Transaction, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def total_lag(self) -> int:
        """The sum of the input partitions' lag."""
        return sum(item.lag for item in self.inputs)

    def to_dict(self) -> dict[str, Any]:
        """The sample as JSON-serializable values; :meth:`from_dict` inverts it."""
        return {
            "taken_at_ms": self.taken_at_ms,
            "inputs": [item.to_dict() for item in self.inputs],
            "outputs": [item.to_dict() for item in self.outputs],
            "checkpoint_exists": self.checkpoint_exists,
            "query_id": self.query_id,
            "last_committed": self.last_committed,
            "last_commit_time_ms": self.last_commit_time_ms,
            "verification": None if self.verification is None else self.verification.to_dict(),
            "transactions": [_transaction_to_dict(txn) for txn in self.transactions],
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HealthSample:
        """Inverse of :meth:`to_dict`.

        :raises HealthError: if a field is missing or has the wrong type.
        """
        try:
            verification = data.get("verification")
            return cls(
                taken_at_ms=int(data["taken_at_ms"]),
                inputs=tuple(InputPartitionSample.from_dict(item) for item in data.get("inputs", [])),
                outputs=tuple(OutputPartitionSample.from_dict(item) for item in data.get("outputs", [])),
                checkpoint_exists=bool(data.get("checkpoint_exists", True)),
                query_id=data.get("query_id"),
                last_committed=_opt_int(data.get("last_committed")),
                last_commit_time_ms=_opt_int(data.get("last_commit_time_ms")),
                verification=None if verification is None else VerificationSample.from_dict(verification),
                transactions=tuple(_transaction_from_dict(item) for item in data.get("transactions", [])),
                notes=tuple(str(note) for note in data.get("notes", [])),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise HealthError(
                f"a serialized health sample is malformed ({type(err).__name__}: {err})",
                fix="pass a dict made by HealthSample.to_dict() (or LagWindow.to_dict())",
            ) from err


class LagWindow:
    """The sliding window of samples the rules are evaluated over; the oldest drops out first.

    It serializes to a plain dict (:meth:`to_dict`) so a trigger can carry it across polls
    and triggerer restarts.

    :param samples: initial samples, oldest first (only the newest ``max_samples`` are kept).
    :param max_samples: how many samples the window keeps.
    :raises HealthError: if ``max_samples`` is below 1.
    """

    def __init__(self, samples: Iterable[HealthSample] = (), *, max_samples: int = DEFAULT_MAX_SAMPLES) -> None:
        if isinstance(max_samples, bool) or not isinstance(max_samples, int) or max_samples < 1:
            raise HealthError(
                f"a health window must keep at least one sample, got max_samples={max_samples!r}",
                fix=f"use a positive max_samples (default {DEFAULT_MAX_SAMPLES})",
            )
        self.max_samples = max_samples
        self._samples: deque[HealthSample] = deque(maxlen=max_samples)
        for sample in samples:
            self.add(sample)

    def add(self, sample: HealthSample) -> None:
        """Append a sample; drops the oldest when full.

        :raises HealthError: if ``sample`` is older than the newest one already held.
        """
        if self._samples and sample.taken_at_ms < self._samples[-1].taken_at_ms:
            raise HealthError(
                f"health sample taken at {_iso(sample.taken_at_ms)} is older than the window's newest "
                f"({_iso(self._samples[-1].taken_at_ms)})",
                fix="add samples in the order they were taken",
            )
        self._samples.append(sample)

    @property
    def samples(self) -> tuple[HealthSample, ...]:
        """The samples, oldest first."""
        return tuple(self._samples)

    @property
    def latest(self) -> HealthSample | None:
        """The newest sample."""
        return self._samples[-1] if self._samples else None

    @property
    def span_ms(self) -> int:
        """Time between the oldest and the newest sample."""
        return self._samples[-1].taken_at_ms - self._samples[0].taken_at_ms if self._samples else 0

    def __len__(self) -> int:
        return len(self._samples)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LagWindow):
            return NotImplemented
        return self.max_samples == other.max_samples and self.samples == other.samples

    def __repr__(self) -> str:
        return f"LagWindow({len(self)} of {self.max_samples} samples, span {format_age(self.span_ms)})"

    def to_dict(self) -> dict[str, Any]:
        """The window as plain JSON-serializable values; :meth:`from_dict` inverts it."""
        return {
            "format": _WINDOW_FORMAT,
            "max_samples": self.max_samples,
            "samples": [sample.to_dict() for sample in self._samples],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, *, max_samples: int | None = None) -> LagWindow:
        """Rebuild a window from :meth:`to_dict`'s output; ``None`` gives an empty window.

        :param max_samples: override the stored size (keeps the newest samples).
        :raises HealthError: if ``data`` is not a serialized window of this format.
        """
        if data is None:
            return cls(max_samples=max_samples or DEFAULT_MAX_SAMPLES)
        if not isinstance(data, Mapping) or data.get("format") != _WINDOW_FORMAT:
            found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
            raise HealthError(
                f"not a serialized health window of format {_WINDOW_FORMAT} (found {found!r})",
                fix="pass the dict LagWindow.to_dict() returned, or None to start an empty window",
            )
        samples = data.get("samples")
        if not isinstance(samples, list):
            raise HealthError(
                "a serialized health window has no list of samples",
                fix="pass the dict LagWindow.to_dict() returned",
            )
        size = max_samples if max_samples is not None else data.get("max_samples", DEFAULT_MAX_SAMPLES)
        return cls((HealthSample.from_dict(item) for item in samples), max_samples=size)


# -- report ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """The lag evaluation of one input partition.

    :param tp: the partition.
    :param status: the rule that decided.
    :param committed: the group's committed offset in the newest sample.
    :param marker_batch: the batch its marker names.
    :param lso: the newest LSO.
    :param lag: the newest lag.
    :param first_lag: the lag in the oldest sample of the window.
    :param samples: samples that include this partition.
    :param commits: commits seen between those samples.
    :param detail: one sentence naming the rule and the values.
    """

    tp: TopicPartition
    status: LagStatus
    committed: int | None
    marker_batch: int | None
    lso: int
    lag: int
    first_lag: int
    samples: int
    commits: int
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-serializable values."""
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "status": self.status.value,
            "committed": self.committed,
            "marker_batch": self.marker_batch,
            "lso": self.lso,
            "lag": self.lag,
            "first_lag": self.first_lag,
            "samples": self.samples,
            "commits": self.commits,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class PartitionGap:
    """LSO versus HWM of one partition over the window.

    :param tp: the partition.
    :param role: ``input``, ``output`` or ``dlq``.
    :param lso: the newest LSO.
    :param hwm: the newest HWM.
    :param state: ``ok`` (LSO = HWM), ``pinned`` (LSO < HWM) or ``hanging`` (pinned and unmoving
        for at least ``hang_after_ms``).
    :param pinned_for_ms: how long the window saw the LSO pinned at this value (0 if not pinned).
    """

    tp: TopicPartition
    role: str
    lso: int
    hwm: int
    state: str
    pinned_for_ms: int

    @property
    def gap(self) -> int:
        """Records between the LSO and the HWM."""
        return max(0, self.hwm - self.lso)

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-serializable values."""
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "role": self.role,
            "lso": self.lso,
            "hwm": self.hwm,
            "gap": self.gap,
            "state": self.state,
            "pinned_for_ms": self.pinned_for_ms,
        }


@dataclass(frozen=True, slots=True)
class Finding:
    """One signal's verdict about one subject.

    :param signal: ``lag``, ``commit_age``, ``hanging``, ``lingering`` or ``verification``.
    :param status: its contribution to the overall status.
    :param subject: what it is about (a partition, a transactional id, the checkpoint ...).
    :param detail: one sentence with the values found.
    """

    signal: str
    status: HealthStatus
    subject: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON-serializable values."""
        return {"signal": self.signal, "status": self.status.value, "subject": self.subject, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    """An open transaction under the prefix, as the report shows it.

    :param transactional_id: the id.
    :param state: the coordinator's state.
    :param age_ms: how long it has been open (``None``: unknown).
    :param limit_ms: the age above which it counts as lingering.
    :param lingering: whether it is older than ``limit_ms``.
    :param partitions: the partitions it holds.
    """

    transactional_id: str
    state: str
    age_ms: int | None
    limit_ms: int
    lingering: bool
    partitions: tuple[TopicPartition, ...]

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-serializable values."""
        return {
            "transactional_id": self.transactional_id,
            "state": self.state,
            "age_ms": self.age_ms,
            "limit_ms": self.limit_ms,
            "lingering": self.lingering,
            "partitions": [str(tp) for tp in self.partitions],
        }


@dataclass(frozen=True)
class HealthReport:
    """The outcome of :func:`evaluate`.

    :param pipeline: the pipeline's name.
    :param status: the worst finding's status.
    :param evaluated_at_ms: the newest sample's time, the "now" of every age.
    :param samples: samples in the window.
    :param window_span_ms: time between the oldest and the newest sample.
    :param thresholds: the thresholds used.
    :param checkpoint_exists: whether the checkpoint exists.
    :param query_id: the checkpoint's query id.
    :param last_committed: the newest committed batch.
    :param last_commit_time_ms: when it was committed.
    :param partitions: the lag evaluation per input partition.
    :param gaps: LSO vs HWM per input, output and dead-letter partition.
    :param transactions: the open transactions under the prefix.
    :param verification: the newest sample's verification.
    :param findings: every finding, worst first.
    :param notes: the newest sample's notes.
    """

    pipeline: str
    status: HealthStatus
    evaluated_at_ms: int
    samples: int
    window_span_ms: int
    thresholds: HealthThresholds
    checkpoint_exists: bool
    query_id: str | None
    last_committed: int | None
    last_commit_time_ms: int | None
    partitions: tuple[PartitionLag, ...]
    gaps: tuple[PartitionGap, ...]
    transactions: tuple[OpenTransaction, ...]
    verification: VerificationSample | None
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_healthy(self) -> bool:
        """True unless UNHEALTHY: a DEGRADED pipeline still makes progress."""
        return self.status is not HealthStatus.UNHEALTHY

    @property
    def commit_age_ms(self) -> int | None:
        """Age of the newest ``commits/N`` at :attr:`evaluated_at_ms` (``None``: no commit)."""
        if self.last_commit_time_ms is None:
            return None
        return max(0, self.evaluated_at_ms - self.last_commit_time_ms)

    @property
    def total_lag(self) -> int:
        """The sum of the input partitions' newest lag."""
        return sum(row.lag for row in self.partitions)

    @property
    def problems(self) -> tuple[Finding, ...]:
        """The findings that are not HEALTHY."""
        return tuple(f for f in self.findings if f.status is not HealthStatus.HEALTHY)

    def committed_since(self, moment_ms: int) -> bool:
        """Whether the checkpoint's newest commit is newer than ``moment_ms``."""
        return self.last_commit_time_ms is not None and self.last_commit_time_ms > moment_ms

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-serializable, machine-readable values."""
        return {
            "pipeline": self.pipeline,
            "status": self.status.value,
            "is_healthy": self.is_healthy,
            "evaluated_at": _iso(self.evaluated_at_ms),
            "evaluated_at_ms": self.evaluated_at_ms,
            "samples": self.samples,
            "window_span_ms": self.window_span_ms,
            "thresholds": self.thresholds.to_dict(),
            "checkpoint_exists": self.checkpoint_exists,
            "query_id": self.query_id,
            "last_committed": self.last_committed,
            "last_commit_time": _iso(self.last_commit_time_ms),
            "last_commit_time_ms": self.last_commit_time_ms,
            "commit_age_ms": self.commit_age_ms,
            "total_lag": self.total_lag,
            "partitions": [row.to_dict() for row in self.partitions],
            "gaps": [row.to_dict() for row in self.gaps],
            "transactions": [row.to_dict() for row in self.transactions],
            "verification": None if self.verification is None else self.verification.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "notes": list(self.notes),
        }

    def render(self) -> str:
        """The report as readable text: a summary, the findings and the tables."""
        commit = (
            "no batch committed yet"
            if self.last_committed is None
            else f"last committed batch {self.last_committed} at {_iso(self.last_commit_time_ms)} "
            f"({format_age(self.commit_age_ms)} ago)"
        )
        verdict = "-" if self.verification is None else (self.verification.verdict or "not settled")
        lines = [
            f"Health of pipeline {self.pipeline!r}: {self.status.value} at {_iso(self.evaluated_at_ms)} "
            f"({self.samples} sample(s) over {format_age(self.window_span_ms)})",
            f"Checkpoint: {commit if self.checkpoint_exists else 'none yet'}; verification: {verdict}; "
            f"input lag {self.total_lag}",
        ]
        lines.extend(f"Note: {note}" for note in self.notes)
        problems = self.problems
        lines.append("")
        if problems:
            lines.append("Findings:")
            lines.extend(f"  - {f.status.value} [{f.signal}] {f.subject}: {f.detail}" for f in problems)
        else:
            lines.append("Findings: none; every signal is healthy.")
        lines.append("")
        lines.append("Input lag (rules OK/WARN/STALL/STOP/REWIND over the window):")
        lines.append(
            render_table(
                ["partition", "status", "committed", "marker", "LSO", "lag", "lag at start", "samples", "commits",
                 "detail"],
                [
                    [str(r.tp), r.status, r.committed, r.marker_batch, r.lso, r.lag, r.first_lag, r.samples,
                     r.commits, r.detail]
                    for r in self.partitions
                ],
            )
        )
        lines.append("")
        lines.append("Last stable offset vs high watermark:")
        lines.append(
            render_table(
                ["partition", "role", "LSO", "HWM", "gap", "state", "pinned for"],
                [
                    [str(g.tp), g.role, g.lso, g.hwm, g.gap, g.state, format_age(g.pinned_for_ms or None)]
                    for g in self.gaps
                ],
            )
        )
        if self.transactions:
            lines.append("")
            lines.append("Open transactions under the prefix:")
            lines.append(
                render_table(
                    ["transactional id", "state", "age", "lingering after", "lingering", "partitions"],
                    [
                        [t.transactional_id, t.state, format_age(t.age_ms), format_age(t.limit_ms), t.lingering,
                         ", ".join(str(tp) for tp in t.partitions) or None]
                        for t in self.transactions
                    ],
                )
            )
        if self.verification is not None and self.verification.next_step and self.verification.ok is False:
            lines.append("")
            lines.append(f"Verification next step: {self.verification.next_step}")
        return "\n".join(lines)


# -- evaluation --------------------------------------------------------------------------------


def _partition_lag(
    tp: TopicPartition, history: Sequence[tuple[int, InputPartitionSample]], th: HealthThresholds
) -> PartitionLag:
    """Apply rules R1-R5 to one partition's samples (oldest first, each with its time)."""
    times = [t for t, _ in history]
    points = [p for _, p in history]
    lags = [p.lag for p in points]
    n = len(points)
    span = times[-1] - times[0]
    commits = sum(
        1
        for prev, cur in itertools.pairwise(points)
        if (prev.committed, prev.marker_batch) != (cur.committed, cur.marker_batch)
    )
    moved = any(prev.committed != cur.committed for prev, cur in itertools.pairwise(points))
    newest = points[-1]

    def row(status: LagStatus, detail: str) -> PartitionLag:
        return PartitionLag(
            tp=tp,
            status=status,
            committed=newest.committed,
            marker_batch=newest.marker_batch,
            lso=newest.lso,
            lag=lags[-1],
            first_lag=lags[0],
            samples=n,
            commits=commits,
            detail=detail,
        )

    if 0 in lags:
        return row(LagStatus.OK, "caught up" if lags[-1] == 0 else "lag was 0 within the window")
    if n >= 2:
        for prev, cur in itertools.pairwise(points):
            if prev.committed is not None and (cur.committed is None or cur.committed < prev.committed):
                after = "nothing" if cur.committed is None else str(cur.committed)
                return row(
                    LagStatus.REWIND,
                    f"the group's offset went from {prev.committed} to {after}: something other than "
                    "the sink reset or deleted it",
                )
        if commits == 0 and span >= th.stop_after_ms:
            return row(
                LagStatus.STOP,
                f"no commit for {format_age(span)} (stop after {format_age(th.stop_after_ms)}) "
                f"while {lags[-1]} record(s) wait",
            )
    if n >= th.min_samples:
        if commits and not moved:
            return row(
                LagStatus.STALL,
                f"{commits} commit(s) in the window but the offset stays at {newest.committed} "
                f"while {lags[-1]} record(s) wait",
            )
        if moved and all(cur >= prev for prev, cur in itertools.pairwise(lags)):
            return row(LagStatus.WARN, f"the offset moves but the lag never decreased ({lags[0]} -> {lags[-1]})")
    if commits == 0 and n >= 2:
        return row(LagStatus.OK, f"no commit for {format_age(span)} yet (stop after {format_age(th.stop_after_ms)})")
    if n < th.min_samples:
        return row(LagStatus.OK, f"{n} of {th.min_samples} samples: trend not judged yet")
    return row(LagStatus.OK, "consuming")


def _gap(
    tp: TopicPartition, role: str, history: Sequence[tuple[int, int, int]], th: HealthThresholds
) -> PartitionGap:
    """Classify LSO vs HWM of one partition; ``history`` holds ``(time, lso, hwm)``, oldest first."""
    t_last, lso, hwm = history[-1]
    if lso >= hwm:
        return PartitionGap(tp, role, lso, hwm, "ok", 0)
    # How long the LSO has been pinned at its current value: walk back while it stays put.
    since = t_last
    for t, old_lso, old_hwm in reversed(history):
        if old_lso != lso or old_lso >= old_hwm:
            break
        since = t
    pinned_for = t_last - since
    pinned_whole_window = since == history[0][0]
    hanging = len(history) >= 2 and pinned_whole_window and pinned_for >= th.hang_after_ms
    return PartitionGap(tp, role, lso, hwm, "hanging" if hanging else "pinned", pinned_for)


def evaluate(
    window: LagWindow | Sequence[HealthSample],
    thresholds: HealthThresholds,
    *,
    pipeline: str,
    transactional_id_prefix: str,
) -> HealthReport:
    """Evaluate every signal over the window (rules: the module docstring).

    :param window: the samples, oldest first.
    :param thresholds: the limits (usually :meth:`HealthThresholds.from_spec`).
    :param pipeline: the pipeline's name, for the report.
    :param transactional_id_prefix: transactions outside it are ignored.
    :raises HealthError: if the window is empty.
    """
    samples = window.samples if isinstance(window, LagWindow) else tuple(window)
    if not samples:
        raise HealthError("cannot evaluate health without a sample", fix="take at least one sample first")
    latest = samples[-1]
    now = latest.taken_at_ms
    span = now - samples[0].taken_at_ms
    findings: list[Finding] = []

    # 1. lag, per partition present in the newest sample.
    history: dict[TopicPartition, list[tuple[int, InputPartitionSample]]] = {}
    for sample in samples:
        for item in sample.inputs:
            history.setdefault(item.tp, []).append((sample.taken_at_ms, item))
    current_inputs = {item.tp for item in latest.inputs}
    partitions = tuple(
        _partition_lag(tp, history[tp], thresholds) for tp in sorted(history) if tp in current_inputs
    )
    findings.extend(
        Finding("lag", row.status.health, str(row.tp), f"{row.status.value}: {row.detail}") for row in partitions
    )

    # 2. age of the newest commit.
    total_lag = latest.total_lag
    findings.append(_commit_age_finding(latest, now, span, total_lag, thresholds))

    # 3. LSO vs HWM.
    gap_history: dict[tuple[TopicPartition, str], list[tuple[int, int, int]]] = {}
    for sample in samples:
        for item in sample.inputs:
            gap_history.setdefault((item.tp, "input"), []).append((sample.taken_at_ms, item.lso, item.hwm))
        for out in sample.outputs:
            gap_history.setdefault((out.tp, out.role), []).append((sample.taken_at_ms, out.lso, out.hwm))
    current = {(item.tp, "input") for item in latest.inputs} | {(out.tp, out.role) for out in latest.outputs}
    gaps = tuple(
        _gap(tp, role, gap_history[(tp, role)], thresholds)
        for tp, role in sorted(gap_history, key=lambda key: (_ROLE_ORDER.get(key[1], 9), key[0]))
        if (tp, role) in current
    )
    for gap in gaps:
        if gap.state == "hanging":
            findings.append(
                Finding(
                    "hanging",
                    HealthStatus.UNHEALTHY,
                    f"{gap.tp} ({gap.role})",
                    f"LSO {gap.lso} < HWM {gap.hwm} and unmoved for {format_age(gap.pinned_for_ms)} "
                    f"(hanging after {format_age(thresholds.hang_after_ms)}): an open transaction pins it; "
                    "read_committed readers are stuck; run `eos abort`",
                )
            )

    # 4. open and lingering transactions (the newest sample's).
    transactions: list[OpenTransaction] = []
    for item in find_lingering(
        transactional_id_prefix,
        latest.transactions,
        pendulum.from_timestamp(now / 1000, tz="UTC"),
        thresholds.lingering_after_ms,
    ):
        limit = min(item.timeout_ms, thresholds.lingering_after_ms)
        lingering = item.age_ms is not None and item.age_ms > limit
        txn = item.transaction
        transactions.append(
            OpenTransaction(
                txn.transactional_id, txn.state.value, item.age_ms, limit, lingering, tuple(sorted(txn.partitions))
            )
        )
        if lingering:
            findings.append(
                Finding(
                    "lingering",
                    HealthStatus.UNHEALTHY,
                    txn.transactional_id,
                    f"ongoing for {format_age(item.age_ms)}, longer than {format_age(limit)}: its producer is "
                    "gone and it pins the LSO of "
                    + (", ".join(str(tp) for tp in sorted(txn.partitions)) or "its partitions")
                    + "; run `eos abort`",
                )
            )

    # 5. verification.
    findings.append(_verification_finding(latest))

    findings.sort(key=lambda f: -f.status.severity)
    return HealthReport(
        pipeline=pipeline,
        status=_worst(f.status for f in findings),
        evaluated_at_ms=now,
        samples=len(samples),
        window_span_ms=span,
        thresholds=thresholds,
        checkpoint_exists=latest.checkpoint_exists,
        query_id=latest.query_id,
        last_committed=latest.last_committed,
        last_commit_time_ms=latest.last_commit_time_ms,
        partitions=partitions,
        gaps=gaps,
        transactions=tuple(transactions),
        verification=latest.verification,
        findings=tuple(findings),
        notes=latest.notes,
    )


_ROLE_ORDER = {"input": 0, "output": 1, "dlq": 2}


def _commit_age_finding(
    latest: HealthSample, now: int, span: int, total_lag: int, th: HealthThresholds
) -> Finding:
    subject = "checkpoint commits/"
    if latest.last_commit_time_ms is None:
        if total_lag == 0:
            return Finding("commit_age", HealthStatus.HEALTHY, subject, "no batch committed yet, and no input waits")
        if span >= th.stop_after_ms:
            return Finding(
                "commit_age",
                HealthStatus.UNHEALTHY,
                subject,
                f"no batch committed in {format_age(span)} while {total_lag} input record(s) wait "
                f"(stop after {format_age(th.stop_after_ms)}): is the job running?",
            )
        return Finding(
            "commit_age",
            HealthStatus.DEGRADED,
            subject,
            f"no batch committed yet while {total_lag} input record(s) wait",
        )
    age = max(0, now - latest.last_commit_time_ms)
    batch = f"batch {latest.last_committed} committed {format_age(age)} ago"
    if total_lag == 0:
        return Finding("commit_age", HealthStatus.HEALTHY, subject, f"{batch}; idle: no input waits")
    if age >= th.stop_after_ms:
        return Finding(
            "commit_age",
            HealthStatus.UNHEALTHY,
            subject,
            f"{batch} (stop after {format_age(th.stop_after_ms)}) while {total_lag} input record(s) wait: "
            "the job is not making progress",
        )
    if age >= th.warn_after_ms:
        return Finding(
            "commit_age",
            HealthStatus.DEGRADED,
            subject,
            f"{batch} (warn after {format_age(th.warn_after_ms)}) while {total_lag} input record(s) wait",
        )
    return Finding("commit_age", HealthStatus.HEALTHY, subject, batch)


def _verification_finding(latest: HealthSample) -> Finding:
    result = latest.verification
    if result is None:
        return Finding("verification", HealthStatus.HEALTHY, "sink group vs checkpoint", "not checked")
    if result.verdict is None:
        return Finding(
            "verification",
            HealthStatus.HEALTHY,
            "sink group vs checkpoint",
            result.note or "not settled: the group kept committing while it was read (the job is alive)",
        )
    if result.ok:
        return Finding("verification", HealthStatus.HEALTHY, "sink group vs checkpoint", result.verdict)
    return Finding(
        "verification",
        HealthStatus.UNHEALTHY,
        "sink group vs checkpoint",
        f"{result.verdict}: " + (result.next_step or "run `eos verify` for the partition table"),
    )


# -- what a sensor makes of a report ------------------------------------------------------------


class WatchMode(enum.StrEnum):
    """What a health sensor waits for."""

    #: Succeed once the job committed a batch after the sensor started and is not UNHEALTHY.
    WAIT_HEALTHY = "wait_healthy"
    #: Fail as soon as the pipeline is UNHEALTHY; succeed when the watch period ends.
    WATCH = "watch"

    @classmethod
    def parse(cls, value: str | WatchMode) -> WatchMode:
        """The mode named by ``value``.

        :raises HealthError: naming the allowed modes.
        """
        try:
            return cls(str(getattr(value, "value", value)).strip())
        except ValueError:
            raise HealthError(
                f"watch mode {value!r} is unknown",
                fix="use 'wait_healthy' (wait for the first committed batch) or 'watch' (fail when unhealthy)",
            ) from None


class WatchOutcome(enum.StrEnum):
    """The event a sensor or trigger ends with."""

    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    TIMEOUT = "timeout"
    ERROR = "error"


def watch_outcome(report: HealthReport, mode: WatchMode, committed_after_ms: int) -> WatchOutcome | None:
    """Whether a sensor is done after this report; ``None`` keeps it waiting.

    * ``wait_healthy``: :attr:`WatchOutcome.HEALTHY` once the checkpoint has a commit newer than
      ``committed_after_ms`` and the report is not UNHEALTHY. An UNHEALTHY report does not end
      the wait: a job that is starting looks stopped until its first batch commits.
    * ``watch``: :attr:`WatchOutcome.UNHEALTHY` as soon as the report is UNHEALTHY.

    :param report: the newest report.
    :param mode: the sensor's mode.
    :param committed_after_ms: for ``wait_healthy``, the time a commit must be newer than.
    """
    if mode is WatchMode.WAIT_HEALTHY:
        return WatchOutcome.HEALTHY if report.is_healthy and report.committed_since(committed_after_ms) else None
    return None if report.is_healthy else WatchOutcome.UNHEALTHY
