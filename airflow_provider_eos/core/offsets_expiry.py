"""Whether "nothing committed" can be told from "committed, then expired" for a batch (docs/design-notes.md note 55).

The sink group never has members, so the broker deletes each of its committed offsets (and the
batch marker in its metadata) ``offsets.retention.minutes`` after that offset's commit. The sink
reads "the group holds nothing for this partition" as the state before batch ``N`` on the query's
first batch and for a partition new in ``N``; an earlier attempt of ``N`` that committed and died
before Spark recorded the batch leaves the same nothing once its offsets expired, and producing
then writes the batch twice. An earlier attempt committed after ``N`` was planned (``offsets/N``'s
``batchTimestampMs``, which a replay keeps), so its offsets can have expired only if the batch was
planned at least the retention ago. Closer to its planning than that, the absence is proof; beyond
it, the sink refuses (:class:`~airflow_provider_eos.core.errors.ExpiredOffsetsError`).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_eos.core.driver_lease import CLOCK_SKEW_MARGIN
from airflow_provider_eos.core.errors import ExpiredOffsetsError
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition

__all__ = [
    "KAFKA_MIN_RETENTION_MINUTES",
    "OffsetsExpiry",
    "RetentionReading",
    "expired_offsets_error",
    "in_flight_choices",
    "offsets_json",
]

_MINUTE_MS = 60_000
#: The lowest ``offsets.retention.minutes`` a broker accepts (Kafka defines it ``atLeast(1)``): what a
#: retention that could not be read is at least, so a batch planned less than this ago (the first run's
#: first batch) is still told apart without it.
KAFKA_MIN_RETENTION_MINUTES = 1


def _age(delta: dt.timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} hours"


@dataclass(frozen=True)
class OffsetsExpiry:
    """What decides whether batch ``N``'s offsets may have expired: its planning time, now, and the retention.

    :param batch_id: the batch ``N``.
    :param planned_at: when Spark planned it (``offsets/N``'s ``batchTimestampMs``; kept by every replay).
    :param observed_at: now, by the deciding driver's clock.
    :param retention_minutes: the lowest ``offsets.retention.minutes`` over the brokers (any may coordinate
        the group); ``None`` when it could not be read.
    :param unread_reason: why it could not be read.
    """

    batch_id: int
    planned_at: dt.datetime
    observed_at: dt.datetime
    retention_minutes: int | None
    unread_reason: str | None = None

    @property
    def may_have_expired(self) -> bool:
        """Whether an offset an attempt of the batch committed can be gone by now.

        The broker's clock and the two drivers' (the one that planned, this one) may differ by
        :data:`~airflow_provider_eos.core.driver_lease.CLOCK_SKEW_MARGIN`; an unknown retention may be as
        short as Kafka allows (:data:`KAFKA_MIN_RETENTION_MINUTES`).
        """
        minutes = KAFKA_MIN_RETENTION_MINUTES if self.retention_minutes is None else self.retention_minutes
        retention = dt.timedelta(milliseconds=minutes * _MINUTE_MS)
        return self.observed_at - self.planned_at + CLOCK_SKEW_MARGIN >= retention

    def describe(self) -> str:
        """Why the absence proves nothing, with the values, for the error and the verdict."""
        planned = f"batch {self.batch_id} was planned {_age(self.observed_at - self.planned_at)} ago " \
                  f"({self.planned_at.isoformat(timespec='seconds')})"
        if self.retention_minutes is None:
            return (f"{planned} and the brokers' offsets.retention.minutes could not be read "
                    f"({self.unread_reason or 'unknown reason'}), so its offsets may have expired (a broker may "
                    f"keep them for as little as {KAFKA_MIN_RETENTION_MINUTES} minute)")
        return (f"{planned}, not less than the brokers' offsets.retention.minutes {self.retention_minutes} "
                f"({_age(dt.timedelta(minutes=self.retention_minutes))}): offsets an earlier attempt committed "
                "may have expired")


@dataclass(frozen=True)
class RetentionReading:
    """The brokers' ``offsets.retention.minutes`` as read at ``observed_at``, to date any batch's expiry with.

    :param minutes: the lowest over the brokers; ``None`` when it could not be read.
    :param observed_at: when it was read (the deciding clock's now).
    :param unread_reason: why it could not be read.
    """

    minutes: int | None
    observed_at: dt.datetime
    unread_reason: str | None = None

    def expiry_of(self, batch_id: int, batch_metadata: Mapping[str, Any]) -> OffsetsExpiry:
        """Batch ``N``'s :class:`OffsetsExpiry` from ``offsets/N``'s metadata line (``batchTimestampMs``).

        A line without a readable ``batchTimestampMs`` dates the batch at the epoch: its age is unknown,
        so its offsets may have expired.
        """
        stamp = batch_metadata.get("batchTimestampMs")
        millis = stamp if isinstance(stamp, int) and not isinstance(stamp, bool) and stamp > 0 else 0
        planned_at = dt.datetime.fromtimestamp(millis / 1000, dt.UTC)
        return OffsetsExpiry(batch_id, planned_at, self.observed_at, self.minutes, self.unread_reason)


def offsets_json(offsets: OffsetMap) -> str:
    """Offsets as Spark's ``offsets/N`` spells them (``{"topic":{"0":12}}``), for the messages."""
    by_topic: dict[str, dict[str, int]] = {}
    for tp, offset in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, {})[str(tp.partition)] = offset
    return json.dumps(by_topic, separators=(",", ":"))


def in_flight_choices(batch: int, *, align_replays: bool, spec: str = "FILE") -> str:
    """The ways on once only the output topic can say whether batch ``N`` (in flight) was written (note 61).

    The one text the sink's :class:`~airflow_provider_eos.core.errors.ExpiredOffsetsError`, verify's next
    step and align's refusal give, so the three never advise differently.

    :param batch: the batch in flight ``N``.
    :param align_replays: whether aligning the group to ``N-1`` makes the replay write ``N``: ``N > 0`` and
        every partition of ``offsets/N`` in ``offsets/N-1``. Otherwise (the first batch, a partition new in
        ``N``) the sink would still find an empty group for a batch planned that long ago, so only a rewind,
        after which Spark plans ``N`` anew, lets it write.
    :param spec: how the spec file is named in the commands.
    """
    previous = batch - 1
    if align_replays:
        not_written = (f"`eos repair align --spec {spec} --in-flight-batch not-written` (a dry run; then --execute): "
                       f"the group gets offsets/{previous} with marker {previous} and the replay writes batch {batch} "
                       "once")
    else:
        not_written = (f"`eos repair rewind --spec {spec} --to-batch {previous}` (a dry run; then --execute): Spark "
                       f"plans batch {batch} again, from the same start, and the sink writes it once"
                       + ("" if batch == 0 else f" (then `eos verify`: if it says NO_MARKER, `eos repair align --spec "
                          f"{spec}` commits offsets/{previous})"))
    return (
        f"None of it there: {not_written}. All of it there: `eos repair align --spec {spec} --in-flight-batch "
        f"written` (a dry run; then --execute): the group gets offsets/{batch} with marker {batch} and the replay "
        f"skips batch {batch}. Only part of it (executor writers stopped mid-batch): neither; move the checkpoint "
        "aside and start a new one whose starting_offsets are the batch's end offsets for the partitions written "
        "and its start offsets for the others. In eos_manual_recovery: action align with Batch in flight set to "
        "the answer (written, not-written)"
    )


def expired_offsets_error(expiry: OffsetsExpiry, partitions: Iterable[TopicPartition], *, query_id: str,
                          group_id: str, start: OffsetMap, end: OffsetMap) -> ExpiredOffsetsError:
    """The refusal of batch ``N`` when ``partitions`` have nothing committed and that may be an expiry.

    Raised only for the first batch or a partition new in ``N`` (a partition of ``offsets/N-1`` holding
    nothing is inconsistent anyway), so aligning to ``N-1`` cannot make the replay write ``N``.

    :param start: the batch's start offsets (absent for a partition new in it: its earliest).
    :param end: the batch's end offsets.
    """
    tps = sorted(partitions)
    batch = expiry.batch_id
    listed = ", ".join(str(tp) for tp in tps)
    return ExpiredOffsetsError(
        f"sink group {group_id!r} holds nothing for {listed} in batch {batch} of query {query_id}, and "
        f"{expiry.describe()}: nothing committed cannot be told from committed, then expired, so the sink "
        f"refuses to write batch {batch} (it may already be in the output topic)",
        fix=(
            f"Nothing was produced. Look in the output topic (read_committed) for batch {batch}'s output of "
            f"{listed} (input offsets start..end: {offsets_json({tp: start[tp] for tp in tps if tp in start})} .. "
            f"{offsets_json({tp: end[tp] for tp in tps})}). "
            f"{in_flight_choices(batch, align_replays=False, spec='<spec file>')}. Raise offsets.retention.minutes "
            "above the longest pause (pre-flight EOS108)"
        ),
    )
