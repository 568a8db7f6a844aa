"""EOS311/EOS312 say what verification and rewind can still do with Spark's batch retention.

The checkpoints here are what Spark leaves after planning batch P = C+1 with
``spark.sql.streaming.minBatchesToRetain = N`` and crashing before committing it: Spark deleted
every offsets/ and commits/ file below P - N. The real verification and rewind planner run on
them, and the rules' verdicts and numbers must match what those could do.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset
from airflow_provider_eos.core.preflight import Status, evaluate
from airflow_provider_eos.core.repair import plan_rewind
from airflow_provider_eos.core.verification import Verdict, verify_checkpoint
from tests.support.checkpoints import batch_end_offsets, write_checkpoint
from tests.unit.preflight.builders import QUERY, good_facts, spec

TOPIC = "orders-in"
COMMITTED = 120  # C: the last committed batch, beyond the default retention of 100
PLANNED = COMMITTED + 1  # P: planned, then the driver crashed mid-batch
RETENTIONS = [1, 2, 3, 9, 10, 100]


def spark_leaves(tmp_path: Path, retained: int) -> CheckpointReader:
    """The checkpoint after Spark planned batch P with minBatchesToRetain ``retained`` and crashed."""
    oldest = max(PLANNED - retained, 0)
    root = write_checkpoint(
        tmp_path / f"retain-{retained}",
        topic=TOPIC,
        partitions=2,
        query_id=QUERY,
        offsets=range(oldest, PLANNED + 1),
        commits=range(oldest, COMMITTED + 1),
    )
    return CheckpointReader(str(root))


def rule(code: str, retained: int) -> tuple[Status, str]:
    report = evaluate(spec(spark_conf={"spark.sql.streaming.minBatchesToRetain": str(retained)})(good_facts()))
    found = report.finding(code)
    return found.status, found.message


@pytest.mark.parametrize("retained", RETENTIONS)
def test_eos311_fails_exactly_when_a_group_one_batch_behind_cannot_be_verified(tmp_path: Path, retained: int) -> None:
    reader = spark_leaves(tmp_path, retained)
    marker = BatchMarker(QUERY, COMMITTED - 1).encode()
    behind = {tp: CommittedOffset(end, marker) for tp, end in batch_end_offsets(TOPIC, COMMITTED - 1, 2).items()}

    report = verify_checkpoint(reader, behind)

    assert {row.verdict for row in report.rows} == {Verdict.KAFKA_BEHIND}
    verifiable = all(row.wal_offset is not None for row in report.rows)
    status, message = rule("EOS311", retained)
    assert (status is Status.PASS) is verifiable, message
    assert verifiable is (retained >= 2)


@pytest.mark.parametrize("retained", RETENTIONS)
def test_eos312_names_how_far_back_a_rewind_can_go(tmp_path: Path, retained: int) -> None:
    reader = spark_leaves(tmp_path, retained)

    def accepted(batch: int) -> bool:
        try:
            plan_rewind(reader, batch)
        except RepairError:
            return False
        return True

    status, message = rule("EOS312", retained)
    assert (status is Status.PASS) is (retained >= 10), message
    said = re.search(r"at most (\d+) batch", message)
    reach = int(said.group(1)) if said else 0
    assert said or "no rewind is possible" in message, message
    # The planner accepts the targets from one batch back to `reach` batches back, and refuses the next one.
    if reach:
        assert accepted(COMMITTED - 1) and accepted(COMMITTED - reach)
    assert not accepted(COMMITTED - reach - 1)
