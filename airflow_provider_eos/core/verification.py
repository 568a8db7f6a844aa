"""Verification: does the sink group's committed state agree with the Spark checkpoint?

Per input partition, the checkpoint (last committed batch ``C``, last planned batch, the
write-ahead log ``offsets/N``, query id ``Q``) is compared with the sink group's committed
offset and its batch marker (DESIGN.md section 3):

================  =====================================================================
verdict           condition
================  =====================================================================
IN_SYNC           marker = ``C`` of ``Q`` and offset = ``offsets/C``
KAFKA_AHEAD_SAFE  marker = ``C+1`` of ``Q``, offset = ``offsets/C+1``, ``commits/C+1``
                  missing: Spark replays ``C+1`` and the sink skips it
KAFKA_BEHIND      marker = ``M < C`` of ``Q`` and offset = ``offsets/M``: the output of
                  batches ``M+1..C`` is missing; rewind the checkpoint to ``M``
NO_MARKER         the checkpoint has commits but the group has no offset, or an offset
                  without marker metadata
DIVERGED          offset differs from ``offsets/M``, marker > ``C+1``, a foreign query
                  id, unreadable metadata, or a marker for a batch the checkpoint has not
                  planned / a partition the checkpoint's ``offsets/M`` does not list
================  =====================================================================

Two decisions beyond that table:

* **Nothing to verify.** A partition for which the checkpoint has committed nothing and the
  group holds nothing (a pipeline that has not finished its first batch, or a partition the
  query has not discovered yet) is ``IN_SYNC`` with a detail saying so. It is healthy, needs
  no action, and a separate verdict would force every consumer to treat it like ``IN_SYNC``.
* **Markers must agree.** The sink commits every input partition in one transaction with one
  marker, so partitions of ``Q`` carrying markers of different batches cannot come from the
  sink. The overall verdict is then ``DIVERGED`` even when each row alone looks repairable,
  because a rewind can satisfy at most one of the markers.

The overall verdict is the worst row by :attr:`Verdict.severity`:
``IN_SYNC < KAFKA_AHEAD_SAFE < KAFKA_BEHIND < NO_MARKER < DIVERGED``. ``KAFKA_AHEAD_SAFE``
heals itself; ``KAFKA_BEHIND`` has a known cause and a mechanical fix (rewind);
``NO_MARKER`` means the group tells nothing about what was produced (wrong group, or the
sink never ran), so a human must decide before any repair; ``DIVERGED`` is evidence that
something other than this pipeline's sink wrote, and only manual work is safe. Ranking the
worse states higher means a report never suggests a mechanical fix while a partition needs
a human.

Everything here is pure dictionary work, O(partitions); the WAL is read lazily, at most
once per distinct batch, so the shell can hand over a :class:`CheckpointReader` without
reading every ``offsets/N``.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, computed_field

from airflow_provider_eos.core.errors import CheckpointError, MarkerError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.report_table import render_table
from airflow_provider_eos.core.topic_partition import OffsetMap, PartitionRow, TopicPartition

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader

__all__ = [
    "OffsetsSource",
    "PartitionVerdict",
    "Verdict",
    "VerificationReport",
    "verify",
    "verify_checkpoint",
]

OffsetsSource = Mapping[int, OffsetMap] | Callable[[int], OffsetMap | None]
"""Where :func:`verify` reads ``offsets/N``: a mapping of the batches at hand, or a callable
returning ``None`` for a batch the checkpoint no longer (or never) had."""


class Verdict(enum.StrEnum):
    """Per-partition and overall verification verdicts (DESIGN.md section 3)."""

    IN_SYNC = "IN_SYNC"
    KAFKA_AHEAD_SAFE = "KAFKA_AHEAD_SAFE"
    KAFKA_BEHIND = "KAFKA_BEHIND"
    NO_MARKER = "NO_MARKER"
    DIVERGED = "DIVERGED"

    @property
    def severity(self) -> int:
        """Rank used to pick the overall verdict; higher is worse (see the module docstring)."""
        return _SEVERITY[self]

    @property
    def ok(self) -> bool:
        """True when the pipeline may resume without any action."""
        return self in (Verdict.IN_SYNC, Verdict.KAFKA_AHEAD_SAFE)


_SEVERITY: dict[Verdict, int] = {verdict: rank for rank, verdict in enumerate(Verdict)}


class PartitionVerdict(PartitionRow):
    """The comparison for one input partition.

    :param tp: the input partition.
    :param verdict: the verdict for this partition.
    :param checkpoint_batch: the last committed batch ``C`` (``None``: nothing committed).
    :param checkpoint_offset: ``offsets/C`` for this partition (``None``: not in ``offsets/C``).
    :param group_offset: the group's committed offset (``None``: nothing committed).
    :param marker_batch: the batch named by the group's marker, if readable.
    :param marker_query_id: the query id named by the group's marker, if readable.
    :param wal_offset: ``offsets/M`` for this partition where ``M`` is the marker's batch,
        i.e. what the group's offset must equal (``None`` when not applicable or unknown).
    :param detail: one sentence explaining the verdict with the values involved.
    """

    verdict: Verdict
    checkpoint_batch: int | None
    checkpoint_offset: int | None
    group_offset: int | None
    marker_batch: int | None
    marker_query_id: str | None
    wal_offset: int | None
    detail: str


_TABLE_HEADERS = [
    "partition",
    "verdict",
    "ckpt batch",
    "ckpt offset",
    "group offset",
    "marker batch",
    "wal@marker",
    "marker query",
    "detail",
]


class VerificationReport(BaseModel):
    """The outcome of :func:`verify`.

    :param query_id: the checkpoint's query id (``None``: the checkpoint has no ``metadata``).
    :param last_committed: the last committed batch ``C`` (``None``: none).
    :param last_planned: the last planned batch (``None``: none).
    :param rows: one row per partition, ordered by topic and partition.
    :param overall: the worst row verdict, or ``DIVERGED`` if markers disagree (see
        :attr:`issues`); ``IN_SYNC`` when there are no rows.
    :param issues: findings that concern the group as a whole rather than one partition.

    Its JSON form (``model_dump(mode="json")``, :meth:`to_dict`) adds ``ok``, ``counts``,
    ``rewind_to_batch`` and ``next_step``; each row names its partition by ``topic`` and ``partition``.
    """

    model_config = ConfigDict(frozen=True)

    query_id: str | None
    last_committed: int | None
    last_planned: int | None
    rows: tuple[PartitionVerdict, ...]
    overall: Verdict
    issues: tuple[str, ...] = ()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """True only for ``IN_SYNC`` and ``KAFKA_AHEAD_SAFE``: the pipeline may resume as is."""
        return self.overall.ok

    @computed_field  # type: ignore[prop-decorator]
    @property
    def counts(self) -> dict[Verdict, int]:
        """How many partitions got each verdict (every verdict present, zeros included)."""
        counted = Counter(row.verdict for row in self.rows)
        return {verdict: counted.get(verdict, 0) for verdict in Verdict}

    @property
    def nothing_to_verify(self) -> bool:
        """True when the checkpoint has committed nothing and the group holds nothing."""
        return self.last_committed is None and all(row.group_offset is None for row in self.rows)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rewind_to_batch(self) -> int | None:
        """The batch to rewind the checkpoint to when the overall verdict is ``KAFKA_BEHIND``.

        It is the lowest marker batch among the behind partitions: after the rewind Spark
        replays from the batch after it, so no missing output is skipped.
        """
        if self.overall is not Verdict.KAFKA_BEHIND:
            return None
        behind = [
            row.marker_batch
            for row in self.rows
            if row.verdict is Verdict.KAFKA_BEHIND and row.marker_batch is not None
        ]
        return min(behind) if behind else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def next_step(self) -> str:
        """What the operator should do about the overall verdict, as one paragraph."""
        c = self.last_committed
        if self.overall is Verdict.IN_SYNC:
            if self.nothing_to_verify:
                return "Nothing to do: no batch has been committed yet and the group holds nothing to compare."
            return f"Nothing to do: the sink group and the checkpoint agree on batch {c}."
        if self.overall is Verdict.KAFKA_AHEAD_SAFE:
            ahead = (c if c is not None else -1) + 1
            return (
                f"Nothing to do: batch {ahead} is in Kafka but not yet in commits/. On restart Spark replays "
                f"batch {ahead} and the sink skips it because its marker is already committed."
            )
        if self.overall is Verdict.KAFKA_BEHIND:
            k = self.rewind_to_batch
            return (
                f"Rewind the checkpoint to batch {k}: eos repair rewind --spec FILE --to-batch {k}. "
                f"The output of batches {(k if k is not None else -1) + 1}..{c} is missing from Kafka; "
                f"after the rewind Spark replays them and the sink, seeing marker {k}, produces them once. "
                "The rewind is a dry run unless executed, and it moves the later checkpoint files "
                "into a backup folder instead of deleting them."
                + (
                    f" But offsets/{k} is no longer in the checkpoint (Spark purged it), so the rewind "
                    "will be refused: the missing output can only be reproduced from a new checkpoint "
                    "started at the marker's offsets."
                    if any(
                        row.verdict is Verdict.KAFKA_BEHIND and row.wal_offset is None for row in self.rows
                    )
                    else ""
                )
            )
        if self.overall is Verdict.NO_MARKER:
            return (
                "Check that the spec's group_id is the sink's group: the group has nothing for "
                f"partitions the checkpoint committed up to batch {c}. If the group is right, the "
                "sink never ran against this checkpoint (e.g. it was written by another sink); "
                "then `eos repair align --spec FILE` commits offsets/C with markers so the next "
                "batch proceeds (batches up to C are not produced again), or rewind to before "
                "the first batch to reproduce everything."
            )
        return (
            "Manual: no automatic repair is safe. Inspect the DIVERGED rows (and the issues "
            "above): a foreign query id means the checkpoint was recreated or another query "
            "uses the same group; offsets differing from the WAL mean something other than "
            "this sink committed. Once the checkpoint is established as the truth, "
            "`eos repair align --spec FILE --force` rewrites the group from offsets/C "
            "(output may then be missing or duplicated)."
        )

    def to_dict(self) -> dict[str, Any]:
        """Alias of ``model_dump(mode="json")``: the report as machine-readable values."""
        return self.model_dump(mode="json")

    def render(self, *, max_rows: int | None = None) -> str:
        """Render the report as readable text: a summary, the partition table, the next step.

        :param max_rows: show at most this many rows, worst first (``None``: all rows,
            worst first). Hidden rows are counted in a final line.
        """
        counts = ", ".join(f"{verdict.value} {n}" for verdict, n in self.counts.items() if n)
        lines = [
            f"Verification: {self.overall.value} "
            f"(query {self.query_id or '-'}, last committed batch "
            f"{'-' if self.last_committed is None else self.last_committed}, last planned batch "
            f"{'-' if self.last_planned is None else self.last_planned})",
            f"Partitions: {len(self.rows)}" + (f" ({counts})" if counts else ""),
        ]
        lines.extend(f"Issue: {issue}" for issue in self.issues)
        ordered = sorted(self.rows, key=lambda row: (-row.verdict.severity, row.tp))
        shown = ordered if max_rows is None else ordered[:max_rows]
        lines.append("")
        lines.append(
            render_table(
                _TABLE_HEADERS,
                [
                    [
                        str(row.tp),
                        row.verdict,
                        row.checkpoint_batch,
                        row.checkpoint_offset,
                        row.group_offset,
                        row.marker_batch,
                        row.wal_offset,
                        row.marker_query_id,
                        row.detail,
                    ]
                    for row in shown
                ],
            )
        )
        if len(shown) < len(ordered):
            lines.append(f"... {len(ordered) - len(shown)} more partition(s) not shown")
        lines.append("")
        lines.append(f"Next step: {self.next_step}")
        return "\n".join(lines)


class _Wal:
    """Memoizing view of ``offsets/N`` so each batch is read at most once per verification."""

    def __init__(self, source: OffsetsSource) -> None:
        if isinstance(source, Mapping):
            self._read: Callable[[int], OffsetMap | None] = source.get
        else:
            self._read = source
        self._cache: dict[int, OffsetMap | None] = {}

    def __call__(self, batch: int) -> OffsetMap | None:
        if batch < 0:
            return None
        if batch not in self._cache:
            self._cache[batch] = self._read(batch)
        return self._cache[batch]


class _Markers:
    """Decodes each distinct metadata string once: the sink writes one marker per batch, so
    thousands of partitions usually share a single string."""

    def __init__(self) -> None:
        self._cache: dict[str, BatchMarker | MarkerError | None] = {}

    def __call__(self, committed: CommittedOffset) -> BatchMarker | None:
        metadata = committed.metadata
        if metadata not in self._cache:
            try:
                self._cache[metadata] = committed.marker
            except MarkerError as exc:
                self._cache[metadata] = exc
        found = self._cache[metadata]
        if isinstance(found, MarkerError):
            raise found
        return found


def verify(
    *,
    query_id: str | None,
    last_committed: int | None,
    last_planned: int | None,
    planned_offsets: OffsetsSource,
    committed: CommittedOffsets,
) -> VerificationReport:
    """Compare the sink group's committed offsets and markers with the checkpoint.

    :param query_id: the checkpoint's query id ``Q``; ``None`` if the checkpoint has no
        ``metadata`` yet (then every marker is foreign).
    :param last_committed: the last batch with a ``commits/N`` file (``None``: none).
    :param last_planned: the last batch with an ``offsets/N`` file (``None``: none).
    :param planned_offsets: ``offsets/N`` of the (single) Kafka source per batch; a mapping
        must hold at least ``last_committed`` and ``last_planned``, and the marker batches to
        check offsets against them; a callable is asked lazily, once per batch, and returns
        ``None`` for a batch the checkpoint does not have (e.g. purged).
    :param committed: the group's committed offsets for the input partitions; ``None`` (or
        absence) means the group has nothing for that partition.
    :return: the report; rows cover the partitions of ``offsets/C`` plus every partition in
        ``committed``.
    :raises CheckpointError: if the batch numbers contradict each other (commits without
        ``offsets/C``, last planned before last committed).
    """
    wal = _Wal(planned_offsets)
    markers = _Markers()
    c = -1 if last_committed is None else last_committed
    p = -1 if last_planned is None else last_planned
    if last_committed is not None and p < c:
        raise CheckpointError(
            f"the checkpoint's last committed batch is {last_committed} but its last planned batch "
            f"is {last_planned}: commits/{last_committed} has no offsets/{last_committed}",
            fix="the checkpoint is damaged or was edited by hand; restore it from a backup",
        )
    checkpoint_offsets: OffsetMap = {}
    if last_committed is not None:
        found = wal(c)
        if found is None:
            raise CheckpointError(
                f"commits/{c} exists but offsets/{c} could not be read, so batch {c}'s offsets are unknown",
                fix=f"restore offsets/{c} from a backup of the checkpoint",
            )
        checkpoint_offsets = found

    partitions = set(checkpoint_offsets)
    partitions.update(committed)
    rows = tuple(
        _verify_partition(
            tp,
            query_id=query_id,
            c=c,
            p=p,
            checkpoint_offset=checkpoint_offsets.get(tp),
            committed=committed.get(tp),
            wal=wal,
            markers=markers,
        )
        for tp in sorted(partitions)
    )

    overall = max((row.verdict for row in rows), key=lambda v: v.severity, default=Verdict.IN_SYNC)
    issues: list[str] = []
    marker_batches = sorted(
        {row.marker_batch for row in rows if row.marker_batch is not None and row.marker_query_id == query_id}
    )
    if len(marker_batches) > 1:
        issues.append(
            f"partitions carry markers of different batches ({', '.join(map(str, marker_batches))}) "
            "although the sink commits every partition with one marker per transaction: "
            "something other than the sink committed, or the group was partly reset"
        )
        overall = Verdict.DIVERGED
    return VerificationReport(
        query_id=query_id,
        last_committed=last_committed,
        last_planned=last_planned,
        rows=rows,
        overall=overall,
        issues=tuple(issues),
    )


def _verify_partition(
    tp: TopicPartition,
    *,
    query_id: str | None,
    c: int,
    p: int,
    checkpoint_offset: int | None,
    committed: CommittedOffset | None,
    wal: _Wal,
    markers: _Markers,
) -> PartitionVerdict:
    """Classify one partition; ``c``/``p`` are the last committed/planned batch or -1."""
    checkpoint_batch = c if c >= 0 else None

    def row(
        verdict: Verdict,
        detail: str,
        *,
        marker: BatchMarker | None = None,
        wal_offset: int | None = None,
    ) -> PartitionVerdict:
        return PartitionVerdict(
            tp=tp,
            verdict=verdict,
            checkpoint_batch=checkpoint_batch,
            checkpoint_offset=checkpoint_offset,
            group_offset=None if committed is None else committed.offset,
            marker_batch=None if marker is None else marker.batch_id,
            marker_query_id=None if marker is None else marker.query_id,
            wal_offset=wal_offset,
            detail=detail,
        )

    if committed is None:
        if c < 0:
            return row(Verdict.IN_SYNC, "nothing to verify: no batch committed and the group holds nothing")
        if checkpoint_offset is None:
            return row(
                Verdict.IN_SYNC,
                f"nothing to verify: not in offsets/{c} and the group holds nothing",
            )
        return row(
            Verdict.NO_MARKER,
            f"the checkpoint committed batch {c} (offset {checkpoint_offset}) "
            "but the group has no committed offset",
        )

    try:
        marker = markers(committed)
    except MarkerError as exc:
        return row(Verdict.DIVERGED, f"the group's offset metadata is not a batch marker: {exc.message}")
    if marker is None:
        return row(
            Verdict.NO_MARKER,
            f"the group committed offset {committed.offset} without a batch marker (empty metadata)",
        )
    if marker.query_id != query_id:
        return row(
            Verdict.DIVERGED,
            f"the marker names query {marker.query_id}, the checkpoint is query {query_id or '(none)'}",
            marker=marker,
        )

    m = marker.batch_id
    if m > c + 1:
        return row(
            Verdict.DIVERGED,
            f"the marker names batch {m}, more than one batch after the last committed batch "
            f"{c if c >= 0 else '(none)'}",
            marker=marker,
        )
    if m > p:
        return row(
            Verdict.DIVERGED,
            f"the marker names batch {m} but the checkpoint has not planned it "
            f"(last planned batch {p if p >= 0 else '(none)'})",
            marker=marker,
        )
    planned = wal(m)
    expected = None if planned is None else planned.get(tp)
    if planned is not None and expected is None:
        return row(
            Verdict.DIVERGED,
            f"the marker names batch {m} but offsets/{m} does not list this partition",
            marker=marker,
        )
    if expected is not None and committed.offset != expected:
        return row(
            Verdict.DIVERGED,
            f"the group's offset {committed.offset} differs from offsets/{m} ({expected}) "
            f"although the marker names batch {m}",
            marker=marker,
            wal_offset=expected,
        )

    if m == c + 1:
        if expected is None:
            return row(
                Verdict.DIVERGED,
                f"the marker names the planned batch {m} but offsets/{m} could not be read",
                marker=marker,
            )
        return row(
            Verdict.KAFKA_AHEAD_SAFE,
            f"batch {m} is in Kafka, commits/{m} is missing: the replay skips it",
            marker=marker,
            wal_offset=expected,
        )
    if m == c:
        return row(Verdict.IN_SYNC, f"marker and offset match batch {c}", marker=marker, wal_offset=expected)
    missing = f"{m + 1}..{c}" if m + 1 < c else str(c)
    unchecked = (
        ""
        if expected is not None
        else f"; offsets/{m} is no longer in the checkpoint, so the offset is unchecked and "
        f"a rewind to batch {m} will be refused"
    )
    return row(
        Verdict.KAFKA_BEHIND,
        f"output of batch(es) {missing} is missing: rewind the checkpoint to batch {m}{unchecked}",
        marker=marker,
        wal_offset=expected,
    )


def verify_checkpoint(reader: CheckpointReader, committed: CommittedOffsets) -> VerificationReport:
    """Verify the sink group's offsets against a checkpoint, reading the WAL lazily.

    Only the batches a verdict needs (``C`` and the marker batches) are read from
    ``offsets/``; a batch the checkpoint no longer has is reported, not raised.

    :param reader: the checkpoint to verify against.
    :param committed: the group's committed offsets for the input partitions.
    :return: the verification report.
    :raises CheckpointError: if a needed checkpoint file is malformed.
    """
    retained = set(reader.offset_batches())

    def offsets_for(batch: int) -> OffsetMap | None:
        return reader.planned_offsets(batch) if batch in retained else None

    return verify(
        query_id=reader.query_id_if_known(),
        last_committed=reader.latest_committed_batch(),
        last_planned=reader.latest_planned_batch(),
        planned_offsets=offsets_for,
        committed=committed,
    )
