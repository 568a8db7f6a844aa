"""Aligning when the batch in flight's offsets may have expired: the person says whether it was written.

When verification finds the group holding nothing and batch ``N = C+1`` (in flight) planned at least
``offsets.retention.minutes`` ago (:attr:`~airflow_provider_eos.core.verification.VerificationReport.expired_batch`),
nothing in Kafka tells "``N`` never committed" from "``N`` committed, then its offsets expired": the output
records carry no batch id. Aligning to ``C`` is right in the first case and writes ``N`` a second time in
the other, so align does not guess (docs/design-notes.md note 61). The person reads the output topic
and answers (:class:`~airflow_provider_eos.core.in_flight_batch.InFlightBatch`); :func:`expired_batch_target`
turns the answer into the offsets and marker to commit, or refuses with what to look for and both ways on.
"""

from __future__ import annotations

from typing import NamedTuple

from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.in_flight_batch import InFlightBatch
from airflow_provider_eos.core.offsets_expiry import in_flight_choices, offsets_json
from airflow_provider_eos.core.topic_partition import OffsetMap

__all__ = ["InFlightTarget", "expired_batch_target", "unexpected_answer"]


class InFlightTarget(NamedTuple):
    """What align commits once told: every partition's offset, with the marker of ``batch_id``.

    :param batch_id: ``N`` when written, ``C`` when not.
    :param offsets: ``offsets/N`` or ``offsets/C``.
    :param warning: what the plan says it relies on.
    """

    batch_id: int
    offsets: OffsetMap
    warning: str


def unexpected_answer(answer: InFlightBatch) -> RepairError:
    """The refusal of an answer when verification names no batch in flight whose offsets may have expired.

    An answer there would commit a marker the evidence does not call for (``written`` one batch ahead of
    what Kafka holds), so it is refused rather than ignored.
    """
    return RepairError(
        f"in_flight_batch {answer.value!r} was given, but verification names no batch in flight whose offsets may "
        "have expired: there is nothing for it to decide",
        fix="leave in_flight_batch empty (no --in-flight-batch; in eos_manual_recovery, Batch in flight empty) and "
        "follow verify's next step",
    )


def expired_batch_target(
    batch: int, answer: InFlightBatch | None, *, last_offsets: OffsetMap | None, in_flight_offsets: OffsetMap,
) -> InFlightTarget:
    """Where align puts the group for the batch in flight ``N`` whose offsets may have expired.

    :param batch: ``N``, the report's ``expired_batch``.
    :param answer: what the output topic shows of ``N`` (``None``: not told).
    :param last_offsets: ``offsets/C`` (``None`` when no batch committed: ``N`` is the first).
    :param in_flight_offsets: ``offsets/N``.
    :raises RepairError: without an answer; and for ``not-written`` when aligning cannot make the replay
        write ``N`` (the first batch, or a partition new in ``N``: the sink would still find nothing for a
        batch planned that long ago), naming the rewind that does.
    """
    start = last_offsets or {}
    new_in_n = sorted(set(in_flight_offsets) - set(start))
    align_replays = last_offsets is not None and not new_in_n
    tps = sorted(in_flight_offsets)
    if last_offsets is None:
        read = f"from the query's starting offsets to {offsets_json(in_flight_offsets)}"
    else:
        read = (f"from input offsets {offsets_json({tp: start[tp] for tp in tps if tp in start})} to "
                f"{offsets_json(in_flight_offsets)}"
                + (f" ({', '.join(map(str, new_in_n))} from their earliest)" if new_in_n else ""))
    what = (
        f"batch {batch}'s offsets may have expired (planned at least offsets.retention.minutes ago, the group "
        f"holds nothing for it): batch {batch} read {', '.join(map(str, tps))} {read}"
    )
    if answer is None:
        raise RepairError(
            f"refusing to align: {what}, and nothing in Kafka tells whether an earlier attempt wrote it. Aligning to "
            f"batch {batch - 1} makes the replay write batch {batch} again if it did; aligning to batch {batch} "
            "loses it if it did not",
            fix=f"Look in the output topic (read_committed) for batch {batch}'s output of those partitions, then "
            f"say what you found. {in_flight_choices(batch, align_replays=align_replays)}",
        )
    if answer is InFlightBatch.WRITTEN:
        return InFlightTarget(batch, dict(in_flight_offsets), (
            f"told batch {batch} is in the output topic: the group gets offsets/{batch} with marker {batch}, so the "
            f"replay skips batch {batch}; if its output is not all there, that output is lost"))
    if not align_replays:
        why = "it is the first batch" if last_offsets is None else \
            f"{', '.join(map(str, new_in_n))} {'is' if len(new_in_n) == 1 else 'are'} new in it (not in offsets/" \
            f"{batch - 1})"
        raise RepairError(
            f"refusing to align for not-written: {what}; {why}, so the sink would still find nothing committed "
            f"for a batch planned that long ago and refuse it whatever align commits",
            fix=f"{in_flight_choices(batch, align_replays=False)}",
        )
    return InFlightTarget(batch - 1, dict(start), (
        f"told batch {batch} is not in the output topic: the group gets offsets/{batch - 1} with marker "
        f"{batch - 1}, so the replay writes batch {batch}; if any of its output is there, it is written twice"))
