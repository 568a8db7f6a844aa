"""``eos verify``, ``eos repair`` and ``eos abort`` end to end: subprocesses, real broker, exit codes, JSON.

The checkpoints here are written by hand in Spark's format (the real-Spark ones come with the
job's tests); the sink group's offsets and markers are committed to the real broker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets, write_committed_offsets
from tests.integration.test_transactions_recovery import open_transaction_and_sigkill
from tests.support.kafka import create_topic

pytestmark = pytest.mark.integration

EOS = Path(sys.executable).with_name("eos")

# Batch N's end offsets per input partition; batch 0 starts at the initial offsets.
INITIAL = {0: 0, 1: 0}
BATCHES = [{0: 2, 1: 1}, {0: 4, 1: 3}, {0: 6, 1: 5}, {0: 8, 1: 7}]


def eos(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    assert EOS.exists(), f"the eos entry point is not installed next to {sys.executable}; run `make install`"
    return subprocess.run([str(EOS), *args], capture_output=True, text=True, timeout=timeout, check=False)


def eos_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = eos(*args, "--json")
    try:
        return result.returncode, json.loads(result.stdout)
    except json.JSONDecodeError:
        command = " ".join(args)
        pytest.fail(f"eos {command} --json printed no JSON (exit {result.returncode}):\n{result.stdout}{result.stderr}")


class Pipeline:
    """A spec file, a hand-made checkpoint and the sink group, for one test."""

    def __init__(self, bootstrap: str, tmp_path: Path, input_topic: str, output_topic: str) -> None:
        self.bootstrap = bootstrap
        self.input = input_topic
        self.query_id = str(uuid.uuid4())
        self.group = f"sink-{uuid.uuid4().hex[:8]}"
        self.prefix = f"eos-{uuid.uuid4().hex[:8]}"
        self.checkpoint = tmp_path / "checkpoint"
        self.spec_file = tmp_path / "pipeline.json"
        self.spec_file.write_text(
            json.dumps({
                "name": "cli_test",
                "kafka": {"bootstrap.servers": bootstrap},
                "input_topics": [input_topic],
                "output_topic": output_topic,
                "group_id": self.group,
                "transactional_id_prefix": self.prefix,
                "checkpoint_location": str(self.checkpoint),
                "transaction_timeout_ms": 600_000,
            })
        )
        self.admin = AdminClient({"bootstrap.servers": bootstrap})

    def write_checkpoint(self, *, planned: int, committed: int) -> None:
        """Batches ``0..planned`` in ``offsets/``, ``0..committed`` in ``commits/``, committed long ago."""
        (self.checkpoint / "offsets").mkdir(parents=True)
        (self.checkpoint / "commits").mkdir()
        (self.checkpoint / "sources" / "0").mkdir(parents=True)
        (self.checkpoint / "metadata").write_text(json.dumps({"id": self.query_id}))
        (self.checkpoint / "sources" / "0" / "0").write_bytes(b"\x00v1\n" + self._offsets_json(INITIAL).encode())
        old = time.time() - 3600
        for batch in range(planned + 1):
            meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1_700_000_000_000 + batch, "conf": {}})
            (self.checkpoint / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{self._offsets_json(BATCHES[batch])}")
        for batch in range(committed + 1):
            commit = self.checkpoint / "commits" / str(batch)
            commit.write_text('v1\n{"nextBatchWatermarkMs":0}')
            # An hour-old commit: the job is not running, so `eos abort` does not refuse.
            os.utime(commit, (old, old))

    def _offsets_json(self, offsets: dict[int, int]) -> str:
        return json.dumps({self.input: {str(p): o for p, o in offsets.items()}})

    def commit_group(self, batch: int, *, overrides: dict[int, int] | None = None, query_id: str | None = None) -> None:
        """Commit ``offsets/batch`` with ``batch``'s marker, as the sink would."""
        marker = BatchMarker(query_id or self.query_id, batch).encode()
        offsets = {**BATCHES[batch], **(overrides or {})}
        target = {TopicPartition(self.input, p): (o, marker) for p, o in offsets.items()}
        write_committed_offsets(self.admin, self.group, target)

    def group_offsets(self) -> dict[int, tuple[int, str] | None]:
        found = read_committed_offsets(self.admin, self.group, [TopicPartition(self.input, p) for p in (0, 1)],
                                       transaction_timeout_ms=PipelineSpec.load(self.spec_file).transaction_timeout_ms)
        return {tp.partition: None if c is None else (c.offset, c.metadata) for tp, c in found.items()}


_GROUP_ROUND_TRIP = textwrap.dedent(
    """
    import sys, uuid
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient
    bootstrap, topic = sys.argv[1:3]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    group = f"warm-up-{uuid.uuid4().hex}"
    admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 7, "m")])])[group].result(30)
    found = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])], require_stable=True)[group].result(30)
    assert [(tp.offset, tp.metadata) for tp in found.topic_partitions] == [(7, "m")], found.topic_partitions
    """
)


@pytest.fixture(scope="module", autouse=True)
def group_coordinator_ready(bootstrap: str) -> None:
    """Wait until committing and reading group offsets works on the (possibly fresh) broker.

    Measured on the devstack Kafka 4.1.1 with confluent-kafka 2.16.1: in the first seconds
    after the broker starts, the first ListConsumerGroupOffsets after an AlterConsumerGroupOffsets
    sometimes crashes the Python process (SIGSEGV in librdkafka) or reads back no offset
    (-1001) for offsets just committed. Round trips run in subprocesses, so a crash costs a
    retry instead of the test session, until three in a row succeed.
    """
    topic = create_topic(bootstrap, f"warm-up-{uuid.uuid4().hex[:10]}")
    successes, attempts, last = 0, 0, ""
    deadline = time.monotonic() + 180
    while successes < 3 and time.monotonic() < deadline:
        attempts += 1
        result = subprocess.run(
            [sys.executable, "-c", _GROUP_ROUND_TRIP, bootstrap, topic],
            capture_output=True, text=True, timeout=120, check=False,
        )
        if result.returncode == 0:
            successes += 1
        else:
            successes, last = 0, f"exit {result.returncode}: {result.stderr[-500:]}"
            time.sleep(1)
    assert successes == 3, f"group offsets never round-tripped in {attempts} attempts; last failure: {last}"


@pytest.fixture
def pipeline(bootstrap: str, topic_factory, tmp_path: Path) -> Pipeline:
    return Pipeline(bootstrap, tmp_path, topic_factory("in", partitions=2), topic_factory("out"))


def test_verify_in_sync_exits_0(pipeline: Pipeline) -> None:
    pipeline.write_checkpoint(planned=2, committed=2)
    pipeline.commit_group(2)
    code, report = eos_json("verify", "--spec", str(pipeline.spec_file))
    assert code == 0, json.dumps(report, indent=1)
    assert report["overall"] == "IN_SYNC" and report["ok"] is True
    assert report["last_committed"] == 2 and report["group_id"] == pipeline.group
    assert {(r["partition"], r["verdict"]) for r in report["rows"]} == {(0, "IN_SYNC"), (1, "IN_SYNC")}
    text = eos("verify", "--spec", str(pipeline.spec_file))
    assert text.returncode == 0 and "Verification: IN_SYNC" in text.stdout and "Next step" in text.stdout


def test_verify_kafka_ahead_safe_exits_0(pipeline: Pipeline) -> None:
    pipeline.write_checkpoint(planned=3, committed=2)
    pipeline.commit_group(3)  # the sink committed batch 3; Spark died before commits/3
    code, report = eos_json("verify", "--spec", str(pipeline.spec_file))
    assert code == 0 and report["overall"] == "KAFKA_AHEAD_SAFE", report


@pytest.mark.smoke
def test_kafka_behind_is_repaired_by_rewind(pipeline: Pipeline) -> None:
    pipeline.write_checkpoint(planned=2, committed=2)
    pipeline.commit_group(1)
    code, report = eos_json("verify", "--spec", str(pipeline.spec_file))
    assert code == 1 and report["overall"] == "KAFKA_BEHIND" and report["rewind_to_batch"] == 1, report

    spec = str(pipeline.spec_file)
    code, dry = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "1")
    assert code == 0 and dry["executed"] is False and dry["moved"] == []
    assert sorted(m["path"] for m in dry["moves"]) == ["commits/2", "offsets/2"]
    assert (pipeline.checkpoint / "commits" / "2").exists()  # a dry run moves nothing
    code, named = eos_json("repair", "rewind", "--spec", spec)  # no --to-batch: the batch the verdict names
    assert code == 0 and named["to_batch"] == 1 and named["moves"] == dry["moves"], named

    text = eos("repair", "rewind", "--spec", spec, "--to-batch", "1")
    assert text.returncode == 0 and "Dry run" in text.stdout and "before" in text.stdout and "after" in text.stdout

    code, done = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "1", "--execute")
    assert code == 0 and done["executed"] is True, done
    assert not (pipeline.checkpoint / "commits" / "2").exists()
    assert (Path(done["backup_dir"]) / "commits" / "2").exists()  # kept, not deleted

    code, after = eos_json("verify", "--spec", spec)
    assert code == 0 and after["overall"] == "IN_SYNC" and after["last_committed"] == 1, after
    # Idempotent: a second execute finds nothing to move.
    code, again = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "1", "--execute")
    assert code == 0 and again["executed"] is False and again["is_noop"] is True


@pytest.mark.smoke
def test_no_marker_is_repaired_by_align(pipeline: Pipeline) -> None:
    pipeline.write_checkpoint(planned=2, committed=2)
    spec = str(pipeline.spec_file)
    code, report = eos_json("verify", "--spec", spec)
    assert code == 1 and report["overall"] == "NO_MARKER", report

    code, dry = eos_json("repair", "align", "--spec", spec)
    assert code == 0 and dry["executed"] is False and dry["changes"] == 2
    assert dry["after"]["overall"] == "NO_MARKER"
    assert pipeline.group_offsets() == {0: None, 1: None}

    text = eos("repair", "align", "--spec", spec)
    assert text.returncode == 0 and "Dry run" in text.stdout and "before offset" in text.stdout

    code, done = eos_json("repair", "align", "--spec", spec, "--execute")
    assert code == 0 and done["executed"] is True and done["after"]["overall"] == "IN_SYNC", done
    marker = BatchMarker(pipeline.query_id, 2).encode()
    assert pipeline.group_offsets() == {0: (6, marker), 1: (5, marker)}
    code, _ = eos_json("verify", "--spec", spec)
    assert code == 0

    code, again = eos_json("repair", "align", "--spec", spec, "--execute")
    assert code == 0 and again["executed"] is False and again["is_noop"] is True


def test_diverged_align_is_refused_unless_forced(pipeline: Pipeline) -> None:
    pipeline.write_checkpoint(planned=2, committed=2)
    pipeline.commit_group(2, overrides={0: 99})  # tampered: the WAL says 6
    spec = str(pipeline.spec_file)
    code, report = eos_json("verify", "--spec", spec)
    assert code == 1 and report["overall"] == "DIVERGED", report

    refused = eos("repair", "align", "--spec", spec, "--execute")
    assert refused.returncode == 2 and "refusing to align" in refused.stderr and "Fix:" in refused.stderr
    code, error = eos_json("repair", "align", "--spec", spec, "--execute")
    assert code == 2 and error["error"] == "RepairError" and "DIVERGED" in error["message"] and error["fix"]
    assert pipeline.group_offsets()[0][0] == 99  # nothing was written

    code, forced = eos_json("repair", "align", "--spec", spec, "--execute", "--force")
    assert code == 0 and forced["executed"] is True and forced["after"]["overall"] == "IN_SYNC", forced
    assert any("forced" in w for w in forced["warnings"])


def test_a_partition_without_a_marker_beside_one_behind_is_diverged_and_align_is_refused(pipeline: Pipeline) -> None:
    # The group holds nothing for in-0 (its offset deleted or expired) and marker 0 for in-1 while the
    # checkpoint committed batch 2: aligning would declare batches 1..2 of in-1 produced.
    pipeline.write_checkpoint(planned=2, committed=2)
    behind = {TopicPartition(pipeline.input, 1): (BATCHES[0][1], BatchMarker(pipeline.query_id, 0).encode())}
    write_committed_offsets(pipeline.admin, pipeline.group, behind)
    spec = str(pipeline.spec_file)
    code, report = eos_json("verify", "--spec", spec)
    assert code == 1 and report["overall"] == "DIVERGED", report
    assert [row["verdict"] for row in report["rows"]] == ["NO_MARKER", "KAFKA_BEHIND"]
    assert any("hold no batch marker" in issue for issue in report["issues"]), report["issues"]

    code, error = eos_json("repair", "align", "--spec", spec, "--execute")
    assert code == 2 and error["error"] == "RepairError" and "DIVERGED" in error["message"], error
    assert pipeline.group_offsets() == {0: None, 1: (BATCHES[0][1], BatchMarker(pipeline.query_id, 0).encode())}


def test_verify_without_a_checkpoint_passes_until_the_group_holds_markers(pipeline: Pipeline) -> None:
    spec = str(pipeline.spec_file)
    code, report = eos_json("verify", "--spec", spec)  # no checkpoint written: a pipeline's first run
    assert code == 0 and report["outcome"] == "ok" and report["overall"] == "IN_SYNC", report
    assert report["last_committed"] is None and {r["group_offset"] for r in report["rows"]} == {None}
    text = eos("verify", "--spec", spec)
    assert text.returncode == 0 and "no checkpoint at" in text.stdout
    assert "no batch has been committed yet" in text.stdout

    # Markers of a query the missing checkpoint does not have: the location is wrong, not new.
    pipeline.commit_group(2)
    code, report = eos_json("verify", "--spec", spec)
    assert code == 1 and report["outcome"] == "finding" and report["overall"] == "DIVERGED", report


def test_errors_exit_2_with_the_fix(pipeline: Pipeline, tmp_path: Path) -> None:
    spec = str(pipeline.spec_file)
    missing = eos("repair", "rewind", "--spec", spec, "--to-batch", "0")  # no checkpoint: nothing to repair
    assert missing.returncode == 2 and "no Spark checkpoint" in missing.stderr and "Fix:" in missing.stderr
    code, error = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "0")
    assert code == 2 and error["error"] == "CheckpointError" and error["fix"]
    code, error = eos_json("repair", "align", "--spec", spec)
    assert code == 2 and error["error"] == "CheckpointError"

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n")
    code, error = eos_json("verify", "--spec", str(bad))
    assert code == 2 and error["error"] == "SpecError" and "kafka" in error["message"]

    pipeline.write_checkpoint(planned=2, committed=2)
    code, error = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "5")
    assert code == 2 and error["error"] == "RepairError" and "forward" in error["message"]


@pytest.mark.smoke
def test_abort_lists_refuses_and_aborts_a_sigkilled_transaction(pipeline: Pipeline, bootstrap: str) -> None:
    pipeline.write_checkpoint(planned=2, committed=2)
    spec = str(pipeline.spec_file)
    code, clean = eos_json("abort", "--spec", spec, "--execute")
    assert code == 0 and clean["ok"] is True and clean["rows"] == [] and clean["executed"] is True, clean

    output = json.loads(pipeline.spec_file.read_text())["output_topic"]
    txn_id = f"{pipeline.prefix}-0"
    open_transaction_and_sigkill(bootstrap, txn_id, output, partition=0)
    try:
        code, dry = eos_json("abort", "--spec", spec)  # a dry run unless --execute
        assert code == 1 and dry["executed"] is False, dry
        assert [(r["kind"], r["transactional_id"], r["outcome"]) for r in dry["rows"]] == [
            ("lingering", txn_id, "would abort (dry run)")
        ]
        assert dry["offsets_before"][0]["pinned"] is True

        refused = eos("abort", "--spec", spec, "--execute")
        assert refused.returncode == 2 and txn_id in refused.stderr and "--force" in refused.stderr
        code, error = eos_json("abort", "--spec", spec, "--execute")
        assert code == 2 and error["error"] == "UnsafeToActError"

        forced = eos("abort", "--spec", spec, "--execute", "--force")
        assert forced.returncode == 0, forced.stdout + forced.stderr
        for expected in (txn_id, "abort by fencing", "aborted", "LSO before", "Forced despite"):
            assert expected in forced.stdout, expected

        code, after = eos_json("abort", "--spec", spec, "--execute")
        assert code == 0 and after["rows"] == [] and after["offsets_after"][0]["pinned"] is False, after
    finally:
        from tests.integration.test_transactions_recovery import fence_quietly

        fence_quietly(bootstrap, txn_id)


def checkpoint_files(pipeline: Pipeline) -> dict[str, bytes]:
    return {str(p.relative_to(pipeline.checkpoint)): p.read_bytes()
            for p in sorted(pipeline.checkpoint.rglob("*")) if p.is_file()}


def backups_of(pipeline: Pipeline) -> list[Path]:
    return sorted(pipeline.checkpoint.parent.glob(f"{pipeline.checkpoint.name}.eos-backup-*"))


def test_rewind_refuses_a_checkpoint_committed_seconds_ago_unless_forced(pipeline: Pipeline) -> None:
    pipeline.write_checkpoint(planned=2, committed=2)
    pipeline.commit_group(1)  # KAFKA_BEHIND: rewind to batch 1
    os.utime(pipeline.checkpoint / "commits" / "2")  # committed just now: the query may still be running
    spec = str(pipeline.spec_file)
    before = checkpoint_files(pipeline)

    # A dry run is still allowed.
    code, dry = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "1")
    assert code == 0 and dry["executed"] is False, dry

    refused = eos("repair", "rewind", "--spec", spec, "--to-batch", "1", "--execute")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "refusing to rewind the checkpoint" in refused.stderr and "the pipeline looks alive" in refused.stderr
    assert "newest commit is" in refused.stderr and "--force" in refused.stderr
    code, error = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "1", "--execute")
    assert code == 2 and error["error"] == "UnsafeToActError", error
    assert checkpoint_files(pipeline) == before and backups_of(pipeline) == []  # nothing moved

    code, forced = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "1", "--execute", "--force")
    assert code == 0 and forced["executed"] is True, forced
    assert forced["safety"]["forced"] is True and "newest commit" in forced["safety"]["reasons"][0]
    assert not (pipeline.checkpoint / "commits" / "2").exists() and len(backups_of(pipeline)) == 1


def test_align_refuses_while_a_young_transaction_is_open_under_the_prefix_unless_forced(
    pipeline: Pipeline, bootstrap: str
) -> None:
    from confluent_kafka import Producer

    pipeline.write_checkpoint(planned=2, committed=2)  # committed an hour ago, NO_MARKER
    spec = str(pipeline.spec_file)
    output = json.loads(pipeline.spec_file.read_text())["output_topic"]
    txn_id = f"{pipeline.prefix}-0"
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(output, value=b"open")
    assert producer.flush(30) == 0
    try:
        refused = eos("repair", "align", "--spec", spec, "--execute")
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "refusing to align the sink group" in refused.stderr and txn_id in refused.stderr
        assert pipeline.group_offsets() == {0: None, 1: None}  # nothing committed

        code, forced = eos_json("repair", "align", "--spec", spec, "--execute", "--force")
        assert code == 0 and forced["executed"] is True and forced["after"]["overall"] == "IN_SYNC", forced
        assert forced["safety"]["forced"] is True and txn_id in forced["safety"]["reasons"][0]
        marker = BatchMarker(pipeline.query_id, 2).encode()
        assert pipeline.group_offsets() == {0: (6, marker), 1: (5, marker)}
    finally:
        producer.abort_transaction(30)


def test_an_execute_refuses_a_plan_that_changed_since_the_dry_run_the_person_saw(pipeline: Pipeline) -> None:
    pipeline.write_checkpoint(planned=2, committed=2)
    pipeline.commit_group(1)
    spec = str(pipeline.spec_file)
    code, dry = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "1")
    seen = dry["fingerprint"]
    assert code == 0 and len(seen) >= 12, dry
    text = eos("repair", "rewind", "--spec", spec, "--to-batch", "1")
    assert f"Plan fingerprint: {seen}" in text.stdout and f"--expect-plan {seen}" in text.stdout

    # The query ran one more batch after the dry run (its commit is old enough not to look alive).
    meta = (pipeline.checkpoint / "offsets" / "2").read_text().splitlines()[1]
    (pipeline.checkpoint / "offsets" / "3").write_text(f"v1\n{meta}\n{json.dumps({pipeline.input: BATCHES[3]})}")
    (pipeline.checkpoint / "commits" / "3").write_text('v1\n{"nextBatchWatermarkMs":0}')
    old = time.time() - 3600
    os.utime(pipeline.checkpoint / "commits" / "3", (old, old))
    before = checkpoint_files(pipeline)

    code, error = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "1", "--execute", "--expect-plan", seen)
    assert code == 2 and error["error"] == "RepairError", error
    assert "changed since the dry run" in error["message"] and seen in error["message"] and error["fix"]
    assert checkpoint_files(pipeline) == before and backups_of(pipeline) == []

    code, again = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "1")
    assert again["fingerprint"] != seen and len(again["moves"]) == len(dry["moves"]) + 2
    code, done = eos_json("repair", "rewind", "--spec", spec, "--to-batch", "1", "--execute",
                          "--expect-plan", again["fingerprint"])
    assert code == 0 and done["executed"] is True and done["fingerprint"] == again["fingerprint"], done

    # Align: the group changed after the dry run (someone committed an offset on partition 0).
    shutil.rmtree(pipeline.checkpoint)
    for backup in backups_of(pipeline):
        shutil.rmtree(backup)
    pipeline.write_checkpoint(planned=2, committed=2)
    pipeline.admin.delete_consumer_groups([pipeline.group])[pipeline.group].result(30)
    code, planned = eos_json("repair", "align", "--spec", spec)
    assert code == 0 and planned["verdict"] == "NO_MARKER" and planned["changes"] == 2, planned
    write_committed_offsets(pipeline.admin, pipeline.group, {TopicPartition(pipeline.input, 0): (1, "")})
    code, error = eos_json("repair", "align", "--spec", spec, "--execute", "--expect-plan", planned["fingerprint"])
    assert code == 2 and error["error"] == "RepairError" and "changed since the dry run" in error["message"], error
    assert pipeline.group_offsets() == {0: (1, ""), 1: None}
