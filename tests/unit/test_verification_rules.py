"""The per-partition verdict rules (:mod:`airflow_provider_eos.core.verification.partition_rules`), as tables.

One scenario throughout: input partition ``in-0``, whose ``offsets/N`` is ``100 * (N + 1)``; the
checkpoint's last committed batch ``C`` is 5 and its last planned batch 6 unless a case says
otherwise. Each row names the rule that must decide and the verdict it gives; the end-to-end
verdicts (and their exact sentences) are tests/unit/test_verification.py's.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import pytest

from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset
from airflow_provider_eos.core.offsets_expiry import RetentionReading
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition
from airflow_provider_eos.core.verification import Verdict
from airflow_provider_eos.core.verification import partition_rules as rules
from airflow_provider_eos.core.verification.partition_rules import (
    CheckpointSide,
    Markers,
    PartitionEvidence,
    Wal,
    classify_partition,
    deciding_rule,
)

Q = "5f0c1a7e-3b2d-4c1e-9a8f-0d6e2b7c4a11"
OTHER_Q = "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"
TP = TopicPartition("in", 0)
OTHER_TP = TopicPartition("in", 1)
NOW = dt.datetime(2026, 12, 6, 12, 0, tzinfo=dt.UTC)


def offset_of(batch: int) -> int:
    """``offsets/batch`` for :data:`TP`."""
    return 100 * (batch + 1)


def marker(batch: int, query_id: str = Q) -> str:
    return BatchMarker(query_id, batch).encode()


@dataclass
class Case:
    """One partition's evidence, in the scenario's terms.

    :param group: the group's committed ``(offset, metadata)``; ``None``: the group holds nothing.
    :param wal_batches: the batches whose ``offsets/N`` the checkpoint still has (listing :data:`TP`).
    :param unlisted: batches whose ``offsets/N`` exists but lists only another partition.
    :param planned_days_ago: how long ago the batch after ``C`` was planned, against a retention of 7 days
        (``None``: its expiry is not judged).
    """

    group: tuple[int, str] | None
    last_committed: int | None = 5
    last_planned: int | None = 6
    checkpoint_offset: int | None = offset_of(5)
    wal_batches: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6)
    unlisted: tuple[int, ...] = ()
    query_id: str | None = Q
    planned_days_ago: float | None = None
    reads: list[int] = field(default_factory=list)

    def evidence(self) -> PartitionEvidence:
        def read(batch: int) -> OffsetMap | None:
            self.reads.append(batch)
            if batch in self.unlisted:
                return {OTHER_TP: offset_of(batch)}
            return {TP: offset_of(batch)} if batch in self.wal_batches else None

        expiry = None
        if self.planned_days_ago is not None:
            planned = NOW - dt.timedelta(days=self.planned_days_ago)
            in_flight = 0 if self.last_committed is None else self.last_committed + 1
            expiry = RetentionReading(7 * 24 * 60, NOW).expiry_of(
                in_flight, {"batchTimestampMs": int(planned.timestamp() * 1000)})
        side = CheckpointSide(self.query_id, self.last_committed, self.last_planned, Wal(read), expiry)
        group = None if self.group is None else CommittedOffset(*self.group)
        return PartitionEvidence(TP, side, self.checkpoint_offset, group, Markers())


# Each rule of PARTITION_RULES (and the fallback) with a case it decides: (id, case, rule, verdict).
DECIDING = [
    ("first-batch-planned-past-retention",
     Case(None, last_committed=None, last_planned=0, checkpoint_offset=None, planned_days_ago=8),
     rules.nothing_left_after_expiry, Verdict.NO_MARKER),
    ("new-partition-of-batch-planned-past-retention", Case(None, checkpoint_offset=None, planned_days_ago=8),
     rules.nothing_left_after_expiry, Verdict.NO_MARKER),
    ("first-batch-planned-within-retention",
     Case(None, last_committed=None, last_planned=0, checkpoint_offset=None, planned_days_ago=6),
     rules.nothing_committed_yet, Verdict.IN_SYNC),
    ("before-first-batch", Case(None, last_committed=None, last_planned=None, checkpoint_offset=None),
     rules.nothing_committed_yet, Verdict.IN_SYNC),
    ("first-batch-planned-only", Case(None, last_committed=None, last_planned=0, checkpoint_offset=None),
     rules.nothing_committed_yet, Verdict.IN_SYNC),
    ("partition-not-discovered", Case(None, checkpoint_offset=None), rules.partition_new_to_checkpoint,
     Verdict.IN_SYNC),
    ("group-holds-nothing", Case(None), rules.group_offset_missing, Verdict.NO_MARKER),
    ("group-holds-nothing-batch-in-flight-within-retention", Case(None, planned_days_ago=6),
     rules.group_offset_missing, Verdict.NO_MARKER),
    ("group-holds-nothing-batch-in-flight-past-retention", Case(None, planned_days_ago=8),
     rules.nothing_left_after_expiry, Verdict.NO_MARKER),
    ("metadata-not-a-marker", Case((600, "written-by-someone-else")), rules.marker_unreadable, Verdict.DIVERGED),
    ("empty-metadata", Case((600, "")), rules.marker_missing, Verdict.NO_MARKER),
    ("marker-of-other-query", Case((600, marker(5, OTHER_Q))), rules.marker_of_other_query, Verdict.DIVERGED),
    ("checkpoint-without-query-id", Case((600, marker(5)), query_id=None), rules.marker_of_other_query,
     Verdict.DIVERGED),
    ("marker-two-batches-ahead", Case((800, marker(7)), last_planned=7), rules.marker_beyond_next_batch,
     Verdict.DIVERGED),
    ("marker-ahead-of-nothing-committed", Case((200, marker(1)), last_committed=None, checkpoint_offset=None),
     rules.marker_beyond_next_batch, Verdict.DIVERGED),
    ("marker-batch-not-planned", Case((700, marker(6)), last_planned=5), rules.marker_batch_unplanned,
     Verdict.DIVERGED),
    ("partition-not-in-marker-batch", Case((600, marker(5)), unlisted=(5,)), rules.partition_not_in_wal,
     Verdict.DIVERGED),
    ("group-offset-differs-at-c", Case((601, marker(5))), rules.group_offset_differs, Verdict.DIVERGED),
    ("group-offset-differs-at-older-batch", Case((401, marker(3))), rules.group_offset_differs, Verdict.DIVERGED),
    ("next-batch-wal-unreadable", Case((700, marker(6)), wal_batches=(5,)), rules.next_batch_unreadable,
     Verdict.DIVERGED),
    ("next-batch-in-kafka", Case((700, marker(6))), rules.next_batch_in_kafka, Verdict.KAFKA_AHEAD_SAFE),
    ("first-batch-in-kafka", Case((100, marker(0)), last_committed=None, last_planned=0, checkpoint_offset=None),
     rules.next_batch_in_kafka, Verdict.KAFKA_AHEAD_SAFE),
    ("in-sync", Case((600, marker(5))), rules.marker_at_last_commit, Verdict.IN_SYNC),
    ("behind-two-batches", Case((400, marker(3))), rules.kafka_behind, Verdict.KAFKA_BEHIND),
    ("behind-marker-batch-purged", Case((400, marker(3)), wal_batches=(5, 6)), rules.kafka_behind,
     Verdict.KAFKA_BEHIND),
]


@pytest.mark.parametrize(("case", "rule", "verdict"), [row[1:] for row in DECIDING], ids=[row[0] for row in DECIDING])
def test_the_first_rule_that_applies_decides(case: Case, rule: rules.PartitionRule, verdict: Verdict) -> None:
    decided, ruling = deciding_rule(case.evidence())
    assert decided is rule, decided.__name__
    assert ruling.verdict is verdict
    row = classify_partition(case.evidence())
    assert (row.verdict, row.detail) == (ruling.verdict, ruling.detail)


def test_every_rule_decides_some_case() -> None:
    assert {row[2] for row in DECIDING} == {*rules.PARTITION_RULES, rules.kafka_behind}


# Each predicate alone, where it applies and where it leaves the decision to the next rule:
# (rule, case, applies).
PREDICATES = [
    (rules.nothing_left_after_expiry, Case(None, last_committed=None, checkpoint_offset=None, planned_days_ago=8),
     True),
    (rules.nothing_left_after_expiry, Case(None, checkpoint_offset=None, planned_days_ago=8), True),
    # Within the retention, or not judged: the absence proves nothing was committed.
    (rules.nothing_left_after_expiry, Case(None, last_committed=None, checkpoint_offset=None, planned_days_ago=6.9),
     False),
    (rules.nothing_left_after_expiry, Case(None, last_committed=None, checkpoint_offset=None), False),
    # A partition of offsets/C holds nothing while C+1 is past the retention: C+1 may have committed and expired,
    # so aligning to C is no longer the plain repair (note 61); within it, that is group_offset_missing's.
    (rules.nothing_left_after_expiry, Case(None, planned_days_ago=8), True),
    (rules.nothing_left_after_expiry, Case(None, planned_days_ago=6), False),
    (rules.nothing_left_after_expiry, Case((100, marker(0)), last_committed=None, planned_days_ago=8), False),
    (rules.nothing_committed_yet, Case(None, last_committed=None, checkpoint_offset=None), True),
    (rules.nothing_committed_yet, Case(None), False),
    (rules.nothing_committed_yet, Case((100, marker(0)), last_committed=None), False),
    (rules.partition_new_to_checkpoint, Case(None, checkpoint_offset=None), True),
    (rules.partition_new_to_checkpoint, Case(None), False),
    (rules.group_offset_missing, Case(None), True),
    (rules.group_offset_missing, Case((600, marker(5))), False),
    (rules.marker_unreadable, Case((600, "eos1:broken")), True),
    (rules.marker_unreadable, Case((600, "")), False),
    (rules.marker_unreadable, Case((600, marker(5))), False),
    (rules.marker_missing, Case((600, "")), True),
    (rules.marker_missing, Case((600, "eos1:broken")), False),
    (rules.marker_missing, Case(None), False),
    (rules.marker_of_other_query, Case((600, marker(5, OTHER_Q))), True),
    (rules.marker_of_other_query, Case((600, marker(5))), False),
    (rules.marker_beyond_next_batch, Case((800, marker(7))), True),
    (rules.marker_beyond_next_batch, Case((700, marker(6))), False),
    (rules.marker_batch_unplanned, Case((700, marker(6)), last_planned=5), True),
    (rules.marker_batch_unplanned, Case((700, marker(6))), False),
    (rules.marker_batch_unplanned, Case((100, marker(0)), last_planned=None), True),
    (rules.partition_not_in_wal, Case((600, marker(5)), unlisted=(5,)), True),
    (rules.partition_not_in_wal, Case((400, marker(3)), wal_batches=(5,)), False),  # purged is not "unlisted"
    (rules.group_offset_differs, Case((601, marker(5))), True),
    (rules.group_offset_differs, Case((600, marker(5))), False),
    (rules.group_offset_differs, Case((401, marker(3)), wal_batches=(5,)), False),  # nothing to compare with
    (rules.next_batch_unreadable, Case((700, marker(6)), wal_batches=(5,)), True),
    (rules.next_batch_unreadable, Case((700, marker(6))), False),
    (rules.next_batch_unreadable, Case((600, marker(5)), wal_batches=()), False),
    (rules.next_batch_in_kafka, Case((700, marker(6))), True),
    (rules.next_batch_in_kafka, Case((600, marker(5))), False),
    (rules.marker_at_last_commit, Case((600, marker(5))), True),
    (rules.marker_at_last_commit, Case((400, marker(3))), False),
    (rules.marker_at_last_commit, Case((100, marker(0)), last_committed=None), False),
]


@pytest.mark.parametrize(
    ("rule", "case", "applies"), PREDICATES, ids=[f"{rule.__name__}-{i}" for i, (rule, _, _) in enumerate(PREDICATES)]
)
def test_each_rule_applies_only_to_its_condition(rule: rules.PartitionRule, case: Case, applies: bool) -> None:
    assert (rule(case.evidence()) is not None) is applies


# Which offsets/N a partition's verdict reads: none for a marker the checkpoint cannot have
# planned (foreign, too far ahead, unplanned), only the marker's batch otherwise: (id, case, reads).
WAL_READS = [
    ("no-marker", Case((600, "")), []),
    ("foreign-marker", Case((600, marker(5, OTHER_Q))), []),
    ("marker-beyond-next", Case((900, marker(8)), last_planned=8), []),
    ("marker-unplanned", Case((700, marker(6)), last_planned=5), []),
    ("in-sync", Case((600, marker(5))), [5]),
    ("behind", Case((400, marker(3))), [3]),
]


@pytest.mark.parametrize(("case", "reads"), [row[1:] for row in WAL_READS], ids=[row[0] for row in WAL_READS])
def test_the_wal_is_read_only_for_the_marker_batch_and_once(case: Case, reads: list[int]) -> None:
    evidence = case.evidence()
    classify_partition(evidence)
    classify_partition(evidence)
    assert case.reads == reads


@pytest.mark.parametrize(
    ("case", "wal_offset"),
    [
        (Case((600, marker(5))), 600),
        (Case((700, marker(6))), 700),
        (Case((400, marker(3))), 400),
        (Case((601, marker(5))), 600),
        (Case((600, marker(5)), unlisted=(5,)), None),
        (Case((700, marker(6, OTHER_Q))), None),
    ],
    ids=["in-sync", "ahead", "behind", "differs", "unlisted", "foreign"],
)
def test_the_row_shows_the_wal_offset_it_was_compared_with(case: Case, wal_offset: int | None) -> None:
    assert classify_partition(case.evidence()).wal_offset == wal_offset
