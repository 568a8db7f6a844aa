"""Every verdict produced for real, on checkpoints written by the real job, and the repairs that
bring each back to exactly-once output; a SIGKILLed driver's open transaction aborted.
(KAFKA_AHEAD_SAFE, then IN_SYNC after the restart: test_crash_points' after_kafka_commit, both writers.)"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

import pytest
import yaml
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.kafka.group_offsets import write_committed_offsets
from tests.support.kafka import consume_all, end_offsets, produce
from tests.support.pipeline import PipelineHarness, assert_exactly_once, json_events, output_ids

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]


@dataclass
class CliResult:
    returncode: int
    data: dict
    stderr: str


def eos(*args: str) -> CliResult:
    result = subprocess.run([sys.executable, "-m", "airflow_provider_eos.cli", *args, "--json"],
                            capture_output=True, text=True, timeout=300, check=False)
    try:
        data = json.loads(result.stdout)
    except ValueError:
        data = {}
    return CliResult(result.returncode, data, result.stdout + result.stderr)


def verify(harness: PipelineHarness) -> CliResult:
    return eos("verify", "--spec", str(harness.spec_file))


@pytest.mark.long  # CI: NO_MARKER and align in test_recovery_cli and test_recovery_operators
def test_group_deleted_is_no_marker_and_align_repairs_it(bootstrap, tmp_path):
    harness = PipelineHarness(bootstrap, tmp_path)
    records, valid_ids, malformed = json_events(900, malformed_every=37)
    harness.produce_input(records)
    assert harness.run().returncode == 0
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_consumer_groups([harness.spec.group_id])[harness.spec.group_id].result(30)

    lost = verify(harness)
    assert lost.returncode == 1 and lost.data["overall"] == "NO_MARKER", lost.stderr
    # The job refuses rather than guess: nothing committed for a batch > 0 is not a first batch.
    more, more_ids, _ = json_events(200, prefix="later")
    harness.produce_input(more)
    refused = harness.run()
    assert refused.returncode != 0 and "disagrees with the checkpoint" in refused.log

    dry = eos("repair", "align", "--spec", str(harness.spec_file))
    assert dry.returncode == 0, dry.stderr
    assert verify(harness).data["overall"] == "NO_MARKER", "a dry run must change nothing"
    # The job ended seconds ago, so its newest commit is within the quiet period: the liveness gate
    # refuses without --force. It is gone (harness.run returned), which is what --force asserts.
    done = eos("repair", "align", "--spec", str(harness.spec_file), "--execute", "--force")
    assert done.returncode == 0, done.stderr
    assert verify(harness).data["overall"] == "IN_SYNC"

    assert harness.run().returncode == 0
    assert_exactly_once(harness, valid_ids + more_ids, malformed)


@pytest.mark.long  # CI: KAFKA_BEHIND and rewind in test_recovery_cli and test_recovery_operators
def test_output_missing_batches_is_kafka_behind_and_rewind_repairs_it(bootstrap, tmp_path):
    """Batches K+1..C ran in at-least-once mode against a scratch output topic (a misconfigured
    run on the production checkpoint): their output never reached the real output topic and the
    sink group never heard of them. Verify says KAFKA_BEHIND; rewinding to K replays them once."""
    harness = PipelineHarness(bootstrap, tmp_path, max_offsets_per_trigger=200)
    first, first_ids, first_bad = json_events(600, malformed_every=31, prefix="a")
    harness.produce_input(first)
    assert harness.run().returncode == 0
    k = harness.checkpoint().latest_committed_batch()

    real_spec = harness.spec
    misconfigured = harness.spec.with_overrides(output_topic=f"{harness.output_topic}-scratch")
    from tests.support.kafka import create_topic

    create_topic(bootstrap, misconfigured.output_topic, 2)
    harness.spec_file.write_text(yaml.safe_dump(misconfigured.to_dict()))
    second, second_ids, second_bad = json_events(600, malformed_every=31, prefix="b")
    harness.produce_input(second)
    assert harness.run(mode="at-least-once").returncode == 0
    c = harness.checkpoint().latest_committed_batch()
    assert c > k
    harness.spec_file.write_text(yaml.safe_dump(real_spec.to_dict()))

    behind = verify(harness)
    assert behind.returncode == 1 and behind.data["overall"] == "KAFKA_BEHIND", behind.stderr
    assert behind.data["rewind_to_batch"] == k

    dry = eos("repair", "rewind", "--spec", str(harness.spec_file), "--to-batch", str(k))
    assert dry.returncode == 0, dry.stderr
    assert harness.checkpoint().latest_committed_batch() == c, "a dry run must change nothing"
    # Forced for the same reason as the align above: the job that just committed has exited.
    done = eos("repair", "rewind", "--spec", str(harness.spec_file), "--to-batch", str(k), "--execute", "--force")
    assert done.returncode == 0, done.stderr
    assert harness.checkpoint().latest_committed_batch() == k
    backups = list(tmp_path.glob("checkpoint.eos-backup-*"))
    assert len(backups) == 1 and any(backups[0].rglob("*")), "the moved files are kept in a backup"
    assert verify(harness).data["overall"] == "IN_SYNC"

    assert harness.run().returncode == 0
    # The DLQ got the first part's dead letters from the real run and the second part's from the
    # replay; the scratch run's dead letters went to the same DLQ topic, so count them once more.
    produced = output_ids(harness.output_values())
    assert set(produced) == set(first_ids + second_ids) and max(produced.values()) == 1
    dlq = [m.value() for m in harness.dlq_records()]
    assert sorted(dlq) == sorted(first_bad + second_bad + second_bad)
    assert verify(harness).data["overall"] == "IN_SYNC"


def test_tampered_offsets_are_diverged(bootstrap, tmp_path):
    harness = PipelineHarness(bootstrap, tmp_path)
    records, _, _ = json_events(500)
    harness.produce_input(records)
    assert harness.run().returncode == 0
    checkpoint = harness.checkpoint()
    last = checkpoint.latest_committed_batch()
    tampered = {tp: (offset + 3, f"eos1:{checkpoint.query_id()}:{last}")
                for tp, offset in checkpoint.planned_offsets(last).items()}
    write_committed_offsets(AdminClient({"bootstrap.servers": bootstrap}), harness.spec.group_id, tampered)
    diverged = verify(harness)
    assert diverged.returncode == 1 and diverged.data["overall"] == "DIVERGED", diverged.stderr
    assert diverged.data["next_step"].startswith("Manual"), diverged.data["next_step"]
    assert {r["verdict"] for r in diverged.data["rows"]} == {"DIVERGED"}


# CI: the driver writer's one id here; the partitions' ids are aborted in CI by the pipeline DAG's
# recovery after a crash with executor writers (tests/dags).
# A long proof (`make test-long`): CI lists and aborts a SIGKILLed process's transaction in
# test_transactions_recovery and test_recovery_cli, and the pipeline DAG's recovery aborts one.
@pytest.mark.long
@pytest.mark.parametrize("writers", ["driver", "executors"])
def test_transaction_left_open_by_a_sigkilled_driver_is_listed_and_aborted(bootstrap, tmp_path, writers):
    harness = PipelineHarness(bootstrap, tmp_path, transaction_timeout_ms=600_000, writers=writers)
    records, valid_ids, malformed = json_events(900, malformed_every=29)
    harness.produce_input(records)
    assert harness.run(fault="after_produce@1").killed

    partitions = harness.partitions
    assert end_offsets(bootstrap, harness.output_topic, partitions, committed=True) != end_offsets(
        bootstrap, harness.output_topic, partitions, committed=False), "the killed batch must pin the LSO"
    # A downstream read_committed consumer is stuck behind the open transaction.
    produce(bootstrap, harness.output_topic, [(b"k", b'{"id": "after-the-crash"}')])
    assert b'{"id": "after-the-crash"}' not in [m.value() for m in consume_all(bootstrap, harness.output_topic,
                                                                                 idle_s=1)]

    found = eos("abort", "--spec", str(harness.spec_file), "--dry-run")
    lingering = [r for r in found.data["rows"] if r["kind"] == "lingering"]
    listed = [r["transactional_id"] for r in lingering]
    if writers == "driver":
        assert listed == [harness.spec.transactional_id(0)], found.stderr
    else:  # the partitions' own ids; the one whose task killed the driver at least
        partition_ids = {harness.spec.partition_transactional_id(harness.input_topic, p) for p in range(partitions)}
        assert listed and set(listed) <= partition_ids, (listed, found.stderr)
    refused = eos("abort", "--spec", str(harness.spec_file), "--execute")
    assert refused.returncode == 2, "a transaction younger than the timeout is refused without --force"
    aborted = eos("abort", "--spec", str(harness.spec_file), "--execute", "--force")
    assert aborted.returncode == 0, aborted.stderr

    assert end_offsets(bootstrap, harness.output_topic, partitions, committed=True) == end_offsets(
        bootstrap, harness.output_topic, partitions, committed=False)
    assert b'{"id": "after-the-crash"}' in [m.value() for m in consume_all(bootstrap, harness.output_topic)]

    assert harness.run().returncode == 0
    produced = output_ids([v for v in harness.output_values() if b"after-the-crash" not in v])
    assert set(produced) == set(valid_ids) and max(produced.values()) == 1
    assert sorted(m.value() for m in harness.dlq_records()) == sorted(malformed)
