"""Lingering and hanging transactions on the real broker, cross-checked with Kafka's own tool.

Everything here is live: a producer SIGKILLed inside a transaction leaves a real lingering
transaction; a real hanging transaction is made by writing a transactional batch without
AddPartitionsToTxn while the broker's ``transaction.partition.verification.enable`` (a
dynamic, cluster-wide setting) is switched off for a moment, which is how hanging
transactions arose on brokers before KIP-890. Apache Kafka's ``TransactionsCommand`` (the
class behind ``kafka-transactions.sh``) runs from the same Maven-resolved jars as the broker.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.errors import UnsafeToActError
from airflow_provider_eos.core.presentation import abort_text
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import Action, Outcome, TxnState
from airflow_provider_eos.kafka import transactions_admin as ta
from airflow_provider_eos.usecases.abort import abort_open_transactions
from airflow_provider_eos.usecases.clients import PipelineClients
from tests.support.kafka import consume_all, end_offsets
from tests.support.partition_verification import INVALID_TXN_STATE, until_accepted, verification_off

pytestmark = pytest.mark.integration

# A transaction that stays open for the whole test unless someone aborts it.
LONG_TIMEOUT_MS = 600_000

_OPEN_TRANSACTION = textwrap.dedent(
    """
    import sys, time
    from confluent_kafka import Producer
    bootstrap, txn_id, topic, partition, timeout_ms = sys.argv[1:6]
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": int(timeout_ms)})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, f"uncommitted-{txn_id}-{i}".encode(), partition=int(partition))
    assert producer.flush(60) == 0
    print("READY", flush=True)
    time.sleep(3600)
    """
)


def open_transaction_and_sigkill(
    bootstrap: str, txn_id: str, topic: str, partition: int, timeout_ms: int = LONG_TIMEOUT_MS
) -> None:
    """Simulate a driver killed mid-batch: a transaction opened, records flushed, then SIGKILL."""
    process = subprocess.Popen(
        [sys.executable, "-c", _OPEN_TRANSACTION, bootstrap, txn_id, topic, str(partition), str(timeout_ms)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        line = ""
        while time.monotonic() < deadline and process.poll() is None:
            line = process.stdout.readline().strip()
            if line == "READY":
                break
        assert line == "READY", f"the producer did not open its transaction: {process.stderr.read()}"
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        process.stdout.close()
        process.stderr.close()


def make_hanging_transaction(bootstrap: str, txn_id: str, topic: str, partition: int) -> tuple[int, int, int]:
    """Leave a real hanging transaction on ``topic``/``partition`` and return (producer id, epoch, offset).

    The transactional id gets a producer id through ``init_transactions``; then a transactional
    batch with that producer id is written straight to the partition leader, skipping the
    AddPartitionsToTxn a correct client sends. The leader opens a transaction the coordinator
    never hears of: exactly the state Kafka's ``find-hanging`` looks for.
    """
    from kafka.admin import KafkaAdminClient
    from kafka.protocol.producer import ProduceRequest
    from kafka.record.default_records import DefaultRecordBatchBuilder

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": 60_000})
    producer.init_transactions(60)
    producer.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        description = admin.describe_transactions([txn_id])[txn_id]
        batch = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=0,
            is_transactional=True,
            producer_id=description.producer_id,
            producer_epoch=description.producer_epoch,
            base_sequence=0,
            batch_size=16_384,
        )
        batch.append(0, timestamp=None, key=None, value=f"hanging-{txn_id}".encode(), headers=[])
        topic_data = ProduceRequest.TopicProduceData(
            name=topic,
            partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=bytes(batch.build()))
            ],
        )
        # v9: the last version before KIP-890's implicit partition registration.
        request = ProduceRequest(
            transactional_id=txn_id, acks=-1, timeout_ms=30_000, topic_data=[topic_data], min_version=3, max_version=9
        )

        def produce() -> Any:
            return admin._manager.run(admin._manager.send, request, 1)

        def refused(response: Any) -> bool:
            return not isinstance(response, Exception) and \
                response.responses[0].partition_responses[0].error_code == INVALID_TXN_STATE

        with verification_off(AdminClient({"bootstrap.servers": bootstrap}), bootstrap):
            response = until_accepted(produce, refused)
        (result,) = response.responses[0].partition_responses
        assert result.error_code == 0, response
        return description.producer_id, description.producer_epoch, result.base_offset
    finally:
        admin.close()


def kafka_transactions_tool(bootstrap: str, *args: str) -> list[dict[str, str]]:
    """Run Apache Kafka's TransactionsCommand and parse its table into dicts."""
    from airflow_provider_eos.devstack.jars import kafka_jars_dir, require_java

    command = [
        require_java(), "-cp", f"{kafka_jars_dir()}/*", "org.apache.kafka.tools.TransactionsCommand",
        "--bootstrap-server", bootstrap, *args,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines, f"no output from {' '.join(args)}: {result.stderr}"
    headers = [cell.strip() for cell in lines[0].split("\t") if cell.strip()]
    return [dict(zip(headers, (cell.strip() for cell in line.split("\t")), strict=False)) for line in lines[1:]]


def tool_find_hanging(bootstrap: str, topic: str) -> list[dict[str, str]]:
    """``find-hanging --broker-id 1 --max-transaction-timeout 0``, rows of ``topic`` only.

    Zero minutes makes every open transaction old enough; the coordinator check still applies.
    """
    rows = kafka_transactions_tool(bootstrap, "find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0")
    return [row for row in rows if row.get("Topic") == topic]


def make_spec(bootstrap: str, tmp_path: Path, output: str, prefix: str, **overrides: object) -> PipelineSpec:
    fields: dict = {
        "name": "recovery_test",
        "kafka": {"bootstrap.servers": bootstrap},
        "input_topics": [f"in-{uuid.uuid4().hex[:6]}"],
        "output_topic": output,
        "group_id": f"sink-{uuid.uuid4().hex[:8]}",
        "transactional_id_prefix": prefix,
        "checkpoint_location": str(tmp_path / "checkpoint"),
        "transaction_timeout_ms": LONG_TIMEOUT_MS,
    }
    fields.update(overrides)
    return PipelineSpec.from_dict(fields)


def write_checkpoint(root: Path, *, commit_age_s: float) -> None:
    """A minimal hand-made checkpoint whose newest commit is ``commit_age_s`` old."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text(json.dumps({"id": str(uuid.uuid4())}))
    (root / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}\n{"in":{"0":1}}')
    commit = root / "commits" / "0"
    commit.write_text('v1\n{"nextBatchWatermarkMs":0}')
    stamp = time.time() - commit_age_s
    os.utime(commit, (stamp, stamp))


def fence_quietly(bootstrap: str, txn_id: str) -> None:
    """Test cleanup: abort whatever ``txn_id`` left open."""
    with contextlib.suppress(Exception):
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
        producer.init_transactions(60)
        producer.close()


def ongoing_ids(bootstrap: str, ids: set[str]) -> dict[str, str]:
    """Our view (kafka-python ListTransactions) of the states of ``ids``."""
    with ta.admin_client({"bootstrap.servers": bootstrap}) as admin:
        listed = ta.list_transactions(admin)
    return {item.transactional_id: item.state.value for item in listed if item.transactional_id in ids}


@pytest.mark.compat
def test_sigkilled_transaction_is_lingering_then_aborted_and_read_committed_moves_on(
    bootstrap: str, topic_factory, tmp_path: Path
) -> None:
    output = topic_factory("out", partitions=2)
    prefix = f"eos-{uuid.uuid4().hex[:8]}"
    ours, foreign = f"{prefix}-0", f"{prefix}2-0"  # the look-alike belongs to another prefix
    spec = make_spec(bootstrap, tmp_path, output, prefix)
    _produce_to(bootstrap, output, 0, b"before")
    try:
        open_transaction_and_sigkill(bootstrap, ours, output, partition=0)
        open_transaction_and_sigkill(bootstrap, foreign, output, partition=1)
        # A committed record behind the open transaction: read_committed consumers cannot reach it yet.
        _produce_to(bootstrap, output, 0, b"after")
        assert _values(consume_all(bootstrap, output, idle_s=1)) == [b"before"]

        # Kafka's own tool and our scan list the same ongoing transactions.
        tool = {row["TransactionalId"]: row["TransactionState"] for row in kafka_transactions_tool(bootstrap, "list")}
        assert {k: v for k, v in tool.items() if k in {ours, foreign}} == {ours: "Ongoing", foreign: "Ongoing"}
        assert ongoing_ids(bootstrap, {ours, foreign}) == {ours: "Ongoing", foreign: "Ongoing"}

        # Neither tool calls them hanging, even with no age threshold: their coordinator covers them.
        assert tool_find_hanging(bootstrap, output) == []
        with ta.admin_client(spec) as admin:
            partitions, _ = ta.topic_partitions(admin, [output])
            now = dt.datetime.now(dt.UTC)
            hanging, offsets = ta.scan_hanging(admin, partitions, now=now, max_transaction_timeout_ms=0)
        assert hanging == []
        assert [(o.tp.partition, o.pinned) for o in offsets] == [(0, True), (1, True)]

        # Dry run: listed as lingering, nothing changed.
        dry = abort_open_transactions(PipelineClients(spec), execute=False)
        assert [(r.kind, r.transactional_id, r.action, r.outcome) for r in dry.rows] == [
            ("lingering", ours, Action.FENCE, Outcome.WOULD_ABORT)
        ]
        assert dry.rows[0].partitions == (TopicPartition(output, 0),)
        assert not dry.safety.safe and not dry.ok
        assert ongoing_ids(bootstrap, {ours}) == {ours: "Ongoing"}

        # The transaction is younger than its timeout: the job may be alive, so no action without force.
        with pytest.raises(UnsafeToActError) as refused:
            abort_open_transactions(PipelineClients(spec), execute=True)
        assert ours in str(refused.value) and "--force" in str(refused.value)
        assert ongoing_ids(bootstrap, {ours}) == {ours: "Ongoing"}

        report = abort_open_transactions(PipelineClients(spec), force=True, execute=True)
        assert report.executed and report.safety.forced and report.ok, abort_text(report)
        assert [(r.transactional_id, r.outcome) for r in report.rows] == [(ours, Outcome.ABORTED)]
        after = {o.tp.partition: o for o in report.offsets_after}
        assert not after[0].pinned and after[1].pinned
        assert "abort by fencing" in abort_text(report)

        # The LSO reached the high watermark; a read_committed consumer gets past the aborted records.
        lso, hwm = end_offsets(bootstrap, output, 2, committed=True), end_offsets(bootstrap, output, 2, committed=False)
        assert lso[0] == hwm[0]
        assert lso[1] < hwm[1]  # the other prefix's transaction was not touched
        committed_values = _values(consume_all(bootstrap, output))
        assert committed_values == [b"before", b"after"]
        # The aborted records really were in the log: the crash happened mid-transaction.
        uncommitted = _values(consume_all(bootstrap, output, isolation="read_uncommitted"))
        assert f"uncommitted-{ours}-0".encode() in uncommitted

        states = {row["TransactionalId"]: row["TransactionState"] for row in kafka_transactions_tool(bootstrap, "list")}
        assert states[foreign] == "Ongoing" and states[ours] != "Ongoing"
    finally:
        fence_quietly(bootstrap, ours)
        fence_quietly(bootstrap, foreign)


@pytest.mark.compat
def test_hanging_transactions_found_like_kafkas_tool_ours_aborted_foreign_left(
    bootstrap: str, topic_factory, tmp_path: Path
) -> None:
    output = topic_factory("out", partitions=2)
    prefix = f"eos-{uuid.uuid4().hex[:8]}"
    ours, foreign = f"{prefix}-1", f"other-{uuid.uuid4().hex[:8]}-0"
    spec = make_spec(bootstrap, tmp_path, output, prefix)
    _produce_to(bootstrap, output, 0, b"before")
    made: dict[int, tuple[int, int, int]] = {}
    try:
        made[0] = make_hanging_transaction(bootstrap, ours, output, 0)
        made[1] = make_hanging_transaction(bootstrap, foreign, output, 1)
        _produce_to(bootstrap, output, 0, b"after")
        time.sleep(1.5)  # Kafka's tool needs the transaction strictly older than 0 minutes

        tool = sorted(
            (int(r["Partition"]), int(r["ProducerId"]), int(r["ProducerEpoch"]), int(r["StartOffset"]))
            for r in tool_find_hanging(bootstrap, output)
        )
        assert tool == sorted((p, pid, epoch, offset) for p, (pid, epoch, offset) in made.items())

        with ta.admin_client(spec) as admin:
            partitions, _ = ta.topic_partitions(admin, [output])
            now = dt.datetime.now(dt.UTC)
            hanging, _ = ta.scan_hanging(admin, partitions, now=now, max_transaction_timeout_ms=0)
        ours_view = sorted(
            (h.tp.partition, h.producer.producer_id, h.producer.producer_epoch, h.producer.current_txn_start_offset)
            for h in hanging
        )
        assert ours_view == tool
        assert {h.tp.partition: h.transactional_id for h in hanging} == {0: ours, 1: foreign}
        assert all(h.coordinator_state is TxnState.EMPTY for h in hanging)

        # With the broker's real maximum (15 minutes) they are too young to be called hanging.
        assert abort_open_transactions(PipelineClients(spec), execute=False).rows == ()

        report = abort_open_transactions(PipelineClients(spec), hanging_min_age_ms=0, execute=True)
        assert report.executed and not report.safety.reasons, abort_text(report)
        summary = {(r.transactional_id, r.action, r.outcome) for r in report.rows}
        assert summary == {
            (ours, Action.ABORT_MARKER, Outcome.ABORTED),
            (foreign, Action.LEAVE_FOREIGN, Outcome.LEFT),
        }
        assert report.ok, abort_text(report)
        assert [(r.transactional_id, r.action) for r in report.remaining] == [(foreign, Action.LEAVE_FOREIGN)]

        lso, hwm = end_offsets(bootstrap, output, 2, committed=True), end_offsets(bootstrap, output, 2, committed=False)
        assert lso[0] == hwm[0] and lso[1] < hwm[1]
        assert b"after" in _values(consume_all(bootstrap, output))

        time.sleep(1.5)
        left = [(int(r["Partition"]), int(r["ProducerId"])) for r in tool_find_hanging(bootstrap, output)]
        assert left == [(1, made[1][0])]
    finally:
        _abort_all_hanging(bootstrap, output)


def test_a_recent_checkpoint_commit_refuses_unless_forced(bootstrap: str, topic_factory, tmp_path: Path) -> None:
    output = topic_factory("out")
    prefix = f"eos-{uuid.uuid4().hex[:8]}"
    spec = make_spec(bootstrap, tmp_path, output, prefix, transaction_timeout_ms=60_000)
    write_checkpoint(Path(spec.checkpoint_location), commit_age_s=5)

    # Nothing open: nothing to refuse, but the report says the job looks alive.
    idle = abort_open_transactions(PipelineClients(spec), execute=True)
    assert idle.ok and idle.rows == () and not idle.safety.safe and not idle.safety.forced
    assert "newest commit" in abort_text(idle)

    try:
        make_hanging_transaction(bootstrap, f"{prefix}-0", output, 0)
        time.sleep(0.1)
        with pytest.raises(UnsafeToActError) as refused:
            abort_open_transactions(PipelineClients(spec), hanging_min_age_ms=0, execute=True)
        assert "newest commit" in str(refused.value) and "--force" in str(refused.value)
        assert len(tool_find_hanging(bootstrap, output)) == 1  # refused means untouched

        forced = abort_open_transactions(PipelineClients(spec), hanging_min_age_ms=0, force=True, execute=True)
        assert forced.ok and forced.safety.forced, abort_text(forced)
        assert [(r.kind, r.outcome) for r in forced.rows] == [("hanging", Outcome.ABORTED)]
        assert tool_find_hanging(bootstrap, output) == []
    finally:
        _abort_all_hanging(bootstrap, output)


def test_nothing_open_and_an_old_commit_is_a_clean_noop(bootstrap: str, topic_factory, tmp_path: Path) -> None:
    output = topic_factory("out")
    spec = make_spec(bootstrap, tmp_path, output, f"eos-{uuid.uuid4().hex[:8]}", transaction_timeout_ms=60_000)
    write_checkpoint(Path(spec.checkpoint_location), commit_age_s=3600)
    report = abort_open_transactions(PipelineClients(spec), execute=True)
    assert report.executed and report.ok and report.safety.safe and report.rows == () and report.remaining == ()
    assert [(o.tp, o.pinned) for o in report.offsets_after] == [(TopicPartition(output, 0), False)]
    assert "nothing under the prefix is open" in abort_text(report)


def test_missing_output_topic_is_reported_not_fatal(bootstrap: str, tmp_path: Path) -> None:
    spec = make_spec(bootstrap, tmp_path, f"absent-{uuid.uuid4().hex[:8]}", f"eos-{uuid.uuid4().hex[:8]}")
    report = abort_open_transactions(PipelineClients(spec), execute=False)
    assert report.ok and report.rows == ()
    assert any("do not exist" in note for note in report.notes)


def test_broker_max_transaction_timeout_is_read_live(bootstrap: str, kafka_broker) -> None:
    with ta.admin_client({"bootstrap.servers": bootstrap}) as admin:
        assert ta.broker_max_transaction_timeout_ms(admin) == kafka_broker.transaction_max_timeout_ms


def test_unreachable_broker_is_a_typed_error(tmp_path: Path) -> None:
    from airflow_provider_eos.devstack.broker_config import free_port

    with pytest.raises(ta.TransactionsAdminError) as raised, ta.admin_client(
        {"bootstrap.servers": f"127.0.0.1:{free_port()}"}, timeout_ms=2_000
    ):
        pass
    assert "127.0.0.1" in str(raised.value) and raised.value.fix


# -- helpers ------------------------------------------------------------------------------------


def _produce_to(bootstrap: str, topic: str, partition: int, value: bytes) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value, partition=partition)
    assert producer.flush(30) == 0


def _values(records) -> list[bytes]:
    return [r.value() for r in records]


def _abort_all_hanging(bootstrap: str, topic: str) -> None:
    """Test cleanup: abort every open transaction left on ``topic``, whoever owns it."""
    from kafka.admin import AbortTransactionSpec
    from kafka.structs import TopicPartition as KafkaTopicPartition

    with contextlib.suppress(Exception), ta.admin_client({"bootstrap.servers": bootstrap}) as admin:
        partitions, _ = ta.topic_partitions(admin, [topic])
        for tp, states in ta.describe_producers(admin, partitions).items():
            for state in states:
                if state.has_open_transaction:
                    admin.abort_transaction(
                        AbortTransactionSpec(
                            KafkaTopicPartition(*tp),
                            state.producer_id,
                            state.producer_epoch,
                            max(state.coordinator_epoch, 0),
                        )
                    )
