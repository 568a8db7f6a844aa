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

import json
import re
import time

import pytest
from confluent_kafka.admin import AdminClient

from tests.chaos.test_recovery_verdicts import verify
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
    """Move ``offsets/batch``'s planning time (``batchTimestampMs``) ``age_ms`` back, as if the job had stopped then.

    Its Hadoop checksum goes too: the local file system checks a file against one that is there.
    """
    path = harness.work_dir / "checkpoint" / "offsets" / str(batch)
    version, metadata, *sources = path.read_text().split("\n")
    planned = json.loads(metadata)
    planned["batchTimestampMs"] = int(time.time() * 1000) - age_ms
    path.write_text("\n".join([version, json.dumps(planned, separators=(",", ":")), *sources]))
    (path.parent / f".{batch}.crc").unlink(missing_ok=True)


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
