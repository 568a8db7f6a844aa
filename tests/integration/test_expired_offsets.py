"""A replayed first batch whose committed offsets expired: the real job on the real broker refuses it.

The sink group never has members, so the broker deletes its committed offsets (and their batch
markers) ``offsets.retention.minutes`` after their last commit. A job killed inside batch 0 after
(part of) the batch committed, then stopped longer than that, finds the group empty on restart: the
same as "nothing committed yet", the normal state before batch 0. Here the expiry is the group's
deletion (what expiry does to a group without members whose every offset has aged: all of them go)
and "longer than that" is the batch's planning time in ``offsets/0`` moved back past the broker's
retention (7 days). Without the expiry check both writers wrote batch 0 a second time.
"""

from __future__ import annotations

import re

import pytest
from confluent_kafka.admin import AdminClient

from tests.chaos.test_recovery_verdicts import eos, verify
from tests.support.checkpoints import date_batch_back
from tests.support.kafka import client_settings
from tests.support.pipeline import PipelineHarness, json_events, output_ids, writers_of

pytestmark = [pytest.mark.integration, pytest.mark.spark]

#: Beyond Kafka's default offsets.retention.minutes (7 days), which the tests' broker keeps.
EIGHT_DAYS_MS = 8 * 86_400_000


def expire_group(harness: PipelineHarness) -> None:
    """What the broker's offsets expiry does to the sink group: nothing of it is left."""
    admin = AdminClient(client_settings(harness.bootstrap))
    admin.delete_consumer_groups([harness.spec.group_id])[harness.spec.group_id].result(30)


def plan_batch_long_ago(harness: PipelineHarness, batch: int, age_ms: int) -> None:
    """Move ``offsets/batch``'s planning time ``age_ms`` back, as if the job had stopped then."""
    date_batch_back(harness.work_dir / "checkpoint", batch, age_ms)


@pytest.mark.parametrize(("writers", "fault"), [
    # One transaction for the batch: the driver dies after it committed, before Spark's commit
    # (the chaos tests' after_kafka_commit, at batch 0).
    ("driver", "after_kafka_commit@0"),
    # One core: the first task commits its partition and kills the driver; the other never starts.
    ("executors", "task_kill_driver@0"),
    # The same in PySpark's workers, whose tasks decide with the expiry the driver judged (`make test-long`).
    pytest.param("executors/python", "task_kill_driver@0", marks=pytest.mark.long),
])
def test_a_first_batch_replayed_after_its_offsets_expired_is_refused_not_written_twice(
    bootstrap, tmp_path, writers, fault,
):
    harness = PipelineHarness(bootstrap, tmp_path, **writers_of(writers), master="local[1]")
    records, _, _ = json_events(40)
    harness.produce_input(records)

    crashed = harness.run(fault=fault)
    assert crashed.killed, f"expected a SIGKILL, got {crashed.returncode}\n{crashed.log[-2000:]}"
    assert re.search(rf"EOS-FAULT fired: {fault.split('@')[0]} batch 0", crashed.log), crashed.log[-3000:]
    assert harness.checkpoint().commit_batches() == []
    written = output_ids(harness.output_values())
    assert written and max(written.values()) == 1, written

    expire_group(harness)
    plan_batch_long_ago(harness, 0, EIGHT_DAYS_MS)
    restarted = harness.run()

    assert output_ids(harness.output_values()) == written, "batch 0 was written a second time"
    assert restarted.returncode != 0, restarted.log[-3000:]
    assert "ExpiredOffsetsError" in restarted.log, restarted.log[-3000:]
    # The retention read from the brokers (Kafka's default), not an unreadable one taken as any.
    assert "holds nothing for" in restarted.log and "in batch 0 of query" in restarted.log
    assert "offsets.retention.minutes 10080 (7.0 days)" in restarted.log, restarted.log[-3000:]
    assert "--to-batch -1" in restarted.log
    assert harness.checkpoint().commit_batches() == []
    # What the on-call sees: not "nothing to verify", but that the group's emptiness proves nothing.
    verdict = verify(harness)
    assert verdict.returncode == 1 and verdict.data["overall"] == "NO_MARKER", verdict.stderr
    assert verdict.data["rows"] and all("offsets.retention.minutes 10080" in row["detail"]
                                        for row in verdict.data["rows"]), verdict.data["rows"]
    assert "--to-batch -1" in verdict.data["next_step"], verdict.data["next_step"]


@pytest.mark.parametrize(("fault", "answer"), [
    # Batch 1 committed to Kafka (output, offsets and marker 1), then the driver died before Spark's commit.
    ("after_kafka_commit@1", "written"),
    # The driver died as batch 1's transaction opened: none of it reached Kafka.
    ("before_produce@1", "not-written"),
])
def test_align_after_the_batch_in_flight_expired_asks_whether_it_was_written_and_the_replay_writes_it_once(
    bootstrap, tmp_path, fault, answer,
):
    """Batch 1 in flight (commits/0, offsets/1), every offset of the group expired: align refuses to guess.

    Before, align committed offsets/0 with marker 0 here, and when batch 1 had committed the replay wrote it
    a second time. Now it refuses without --in-flight-batch (even forced); told ``written`` it commits
    offsets/1 with marker 1 and the replay is skipped, told ``not-written`` offsets/0 and the replay writes it.
    """
    # 40 records in one transaction: 21 offsets a partition with its commit marker, so 24 offsets a batch make
    # exactly two batches (12 a partition, then the other 9).
    harness = PipelineHarness(bootstrap, tmp_path, **writers_of("driver"), max_offsets_per_trigger=24,
                              master="local[1]")
    records, ids, _ = json_events(40)
    harness.produce_input(records)

    crashed = harness.run(fault=fault)
    assert crashed.killed, f"expected a SIGKILL, got {crashed.returncode}\n{crashed.log[-2000:]}"
    assert re.search(rf"EOS-FAULT fired: {fault.split('@')[0]} batch 1", crashed.log), crashed.log[-3000:]
    checkpoint = harness.checkpoint()
    assert checkpoint.commit_batches() == [0] and checkpoint.latest_planned_batch() == 1
    before = output_ids(harness.output_values())
    assert before and max(before.values()) == 1, before
    # Batch 1 is in the output exactly when its Kafka transaction committed.
    assert (set(before) == set(ids)) is (answer == "written"), (answer, sorted(before))

    expire_group(harness)
    plan_batch_long_ago(harness, 0, EIGHT_DAYS_MS)
    plan_batch_long_ago(harness, 1, EIGHT_DAYS_MS)
    spec = str(harness.spec_file)

    verdict = verify(harness)
    assert verdict.data["overall"] == "NO_MARKER" and verdict.data["expired_batch"] == 1, verdict.stderr
    assert "--in-flight-batch written" in verdict.data["next_step"], verdict.data["next_step"]
    # The job stopped seconds ago (its lease was not released): --force is for that, and does not answer.
    refused = eos("repair", "align", "--spec", spec, "--execute", "--force")
    assert refused.returncode == 2, refused.stderr
    assert "refusing to align: batch 1's offsets may have expired" in refused.stderr, refused.stderr
    assert "--in-flight-batch not-written" in refused.stderr and "--in-flight-batch written" in refused.stderr
    assert verify(harness).data["overall"] == "NO_MARKER", "a refused align must commit nothing"

    done = eos("repair", "align", "--spec", spec, "--in-flight-batch", answer, "--execute", "--force")
    assert done.returncode == 0, done.stderr
    assert done.data["batch_id"] == (1 if answer == "written" else 0), done.data
    assert done.data["verdict_after"] == ("KAFKA_AHEAD_SAFE" if answer == "written" else "IN_SYNC"), done.data

    restarted = harness.run()
    assert restarted.returncode == 0, restarted.log[-3000:]
    after = output_ids(harness.output_values())
    assert set(after) == set(ids) and max(after.values()) == 1, f"written twice: {after.most_common(3)}"
    assert harness.checkpoint().commit_batches()[-1] >= 1
    assert verify(harness).data["overall"] == "IN_SYNC"
