"""The JVM executor writer's Python side: the plan the tasks get, and their failures as typed errors.

No Spark and no JVM: the plan is the ``eos.plan`` option as built, and a failure is the text
Spark hands the driver, with the ``EOS-TASK-FAILURE`` facts the Java writer puts in it.
"""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from airflow_provider_eos.core.errors import (
    InconsistentOffsetsError,
    KafkaNoAnswerError,
    ProducerFencedError,
    ScanRangeMismatchError,
    SinkAuthorizationError,
    SinkError,
    SinkKafkaError,
    TransactionTimedOutError,
)
from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.plan_alignment import InputRange, map_input_partitions
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions.stable_read import stable_read_timeout_ms
from airflow_provider_eos.kafka.group_offsets import GroupOffsetsError, offsets_pending_error
from airflow_provider_eos.spark.executor_writers import BatchTasks
from airflow_provider_eos.spark.jvm_task_errors import task_failure, typed_task_error
from airflow_provider_eos.spark.jvm_writer import write_plan
from tests.support.faults.tasks import TaskFaultPoint, TaskFaults

Q = "5f0c2b7e-9a41-4c3e-8d2a-1b6f3e9c7a10"
SPEC = PipelineSpec(
    name="orders", kafka={"bootstrap.servers": "localhost:9092"}, input_topics=["orders"], output_topic="out",
    group_id="orders-sink", transactional_id_prefix="orders-txn", checkpoint_location="/tmp/ckpt",
    executor_writer="jvm",
)
P0, P1, P2 = (TopicPartition("orders", p) for p in range(3))


def tasks(batch_id: int = 4, faults: TaskFaults | None = None) -> BatchTasks:
    start, end = {P0: 10, P1: 20}, {P0: 15, P1: 20, P2: 7}
    mapping = map_input_partitions(batch_id, [InputRange(spark_partition=0, topic="orders", partition=0,
                                                         from_offset=10, until_offset=15),
                                              InputRange(spark_partition=1, topic="orders", partition=2,
                                                         from_offset=0, until_offset=7)])
    return BatchTasks(SPEC, Q, batch_id, start, end, mapping, faults or TaskFaults())


def failed(**facts: object) -> Exception:
    """An exception as PySpark raises a failed stage: the task's exception inside the message."""
    encoded = base64.b64encode(json.dumps(facts).encode()).decode()
    return RuntimeError(f"Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times, most recent failure: "
                        f"Lost task 0.0: io.github.airflowprovidereos.writer.TaskFailure: EOS-TASK-FAILURE:{encoded} "
                        f"{{kind=...}}\n\tat io.github...")


def test_the_plan_carries_the_protocols_states_and_the_same_transactional_ids():
    plan = write_plan(tasks(), config_handle="h", report_key="k")
    first, new = plan["partitions"]
    # The metadata as the broker holds what confluent-kafka commits (with its NUL): both writers store the same.
    assert first == {
        "spark_partition": 0, "topic": "orders", "partition": 0,
        "transactional_id": SPEC.partition_transactional_id("orders", 0),
        "commit": {"offset": 15, "metadata": BatchMarker(Q, 4).encode() + "\0"},
        "skip_when": {"offset": 15, "metadata": BatchMarker(Q, 4).encode() + "\0"},
        "produce_when": {"offset": 10, "metadata": BatchMarker(Q, 3).encode() + "\0"},
        "produce_when_nothing_committed": False, "describe": "orders-0 [10, 15)",
    }
    # A partition new in the batch: only "nothing committed" is its state before the batch.
    assert (new["produce_when"], new["produce_when_nothing_committed"]) == (None, True)
    assert plan["observer"] is None and plan["dlq_topic"] is None and plan["config_handle"] == "h"
    # No secret and no client setting in the options: the handle stands for them.
    assert "bootstrap" not in json.dumps(plan)


def test_the_plan_carries_the_stable_reads_wait_from_the_specs_transaction_timeout():
    # The JVM tasks' read waits as the Python readers do: one rule, computed here, not a constant of the jar's.
    plan = write_plan(tasks(), config_handle="h", report_key="k")
    assert plan["transaction_timeout_ms"] == SPEC.transaction_timeout_ms
    assert plan["stable_read_timeout_ms"] == stable_read_timeout_ms(SPEC.transaction_timeout_ms)
    longer = dataclasses.replace(tasks(), spec=SPEC.with_overrides(transaction_timeout_ms=900_000))
    assert write_plan(longer, config_handle="h", report_key="k")["stable_read_timeout_ms"] == 930_000


def test_offsets_still_pending_are_the_python_readers_error():
    error = typed_task_error(failed(kind="offsets_pending", group_id="orders-sink", topic="orders", partition=2,
                                    waited_ms=90_412, transaction_timeout_ms=60_000), tasks())
    same = offsets_pending_error("orders-sink", ["orders-2"], waited_s=90.412, transaction_timeout_ms=60_000)
    assert isinstance(error, GroupOffsetsError) and (error.message, error.fix) == (same.message, same.fix)
    assert "'orders-sink' still holds a pending transactional offset commit on orders-2 after 90 s" in error.message


def test_a_group_read_no_broker_answered_is_the_python_readers_no_answer_error():
    error = typed_task_error(failed(kind="group_offsets", group_id="orders-sink", topic="orders", partition=0,
                                    detail="org.apache.kafka.common.errors.TimeoutException: timed out",
                                    no_answer=True, waited_ms=90_412), tasks())
    assert isinstance(error, KafkaNoAnswerError), error
    assert "OffsetFetch('orders-sink'): no answer from the Kafka broker(s) at localhost:9092 within 90.4 s" \
        in error.message, error.message
    answered = typed_task_error(failed(kind="group_offsets", group_id="orders-sink", topic="orders", partition=0,
                                       detail="GroupAuthorizationException", no_answer=False, waited_ms=12), tasks())
    assert isinstance(answered, GroupOffsetsError) and not isinstance(answered, KafkaNoAnswerError)
    assert "GroupAuthorizationException" in answered.message


def test_armed_faults_travel_with_the_plan():
    faults = TaskFaults(TaskFaultPoint.TASK_AFTER_PRODUCE, 1, 0, "/tmp/r.faults", (11, 12))
    observer = write_plan(tasks(faults=faults), config_handle="h", report_key="k")["observer"]
    # The tasks get the class and what is armed; the jar is the driver's to add, not the tasks' to know.
    assert observer["class"] == "io.github.airflowprovidereos.writer.FaultingTaskObserver" and "jar" not in observer
    armed = observer["config"]
    assert armed["point"] == "task_after_produce" and armed["driver_pids"] == [11, 12] and armed["partition"] == 0


def test_an_inconsistent_partition_is_the_protocols_own_error():
    error = typed_task_error(failed(kind="inconsistent", topic="orders", partition=0, offset=12,
                                    metadata=BatchMarker(Q, 3).encode() + "\0"), tasks())
    assert isinstance(error, InconsistentOffsetsError)
    assert "orders-0" in error.message and f"offset 12 (marker {BatchMarker(Q, 3).encode()})" in error.message


def test_a_state_the_protocol_accepts_is_reported_as_a_disagreement():
    error = typed_task_error(failed(kind="inconsistent", topic="orders", partition=0, offset=10,
                                    metadata=BatchMarker(Q, 3).encode()), tasks())
    assert type(error) is SinkError and "disagree" in error.message


@pytest.mark.parametrize(("code", "outlived", "kind"), [
    ("PRODUCER_FENCED", False, ProducerFencedError),
    ("INVALID_PRODUCER_EPOCH", True, TransactionTimedOutError),
    ("REQUEST_TIMED_OUT", False, TransactionTimedOutError),
    ("TOPIC_AUTHORIZATION_FAILED", False, SinkAuthorizationError),
])
def test_kafka_failures_take_the_python_writers_classification(code, outlived, kind):
    error = typed_task_error(failed(kind="kafka", code=code, fatal=False, retriable=False, detail="x",
                                    stage="produce", transactional_id="orders-txn-0_0", batch_id=4,
                                    outlived_timeout=outlived, unauthorized_topics=["out"]), tasks())
    assert isinstance(error, kind), error


def test_rows_of_another_partition_and_dead_letters_without_a_topic():
    foreign = typed_task_error(failed(kind="foreign_rows", spark_partition=1, column="partition", found=1), tasks())
    assert isinstance(foreign, ScanRangeMismatchError) and "orders-2 [0, 7)" in foreign.message
    dead = typed_task_error(failed(kind="no_dlq_topic", dead=3), tasks())
    assert isinstance(dead, SinkError) and "3 dead-letter row(s)" in dead.message
    beyond = typed_task_error(failed(kind="scan_partition", spark_partition=5, partitions=2), tasks())
    assert isinstance(beyond, ScanRangeMismatchError)


def test_a_failure_the_jvm_did_not_name_is_left_alone():
    assert task_failure(RuntimeError("Job aborted: java.lang.OutOfMemoryError")) is None
    assert typed_task_error(RuntimeError("EOS-TASK-FAILURE:!!!"), tasks()) is None


def test_a_driver_without_the_writers_classes_is_told_how_to_get_them():
    from types import SimpleNamespace

    from airflow_provider_eos.core.errors import PrerequisiteError
    from airflow_provider_eos.spark.jvm_writer import JvmTasks

    class JavaPackage:  # what py4j answers for a class the driver's classpath does not have: not callable
        def __getattr__(self, name: str) -> JavaPackage:
            return JavaPackage()

    frame = SimpleNamespace(sparkSession=SimpleNamespace(sparkContext=SimpleNamespace(_jvm=JavaPackage())))
    with pytest.raises(PrerequisiteError, match="not on the Spark driver's classpath") as raised:
        JvmTasks(SPEC)._driver_registry(frame)
    assert "make install" in raised.value.fix


def test_a_driver_without_the_plan_reader_is_told_how_to_get_it():
    from types import SimpleNamespace

    from airflow_provider_eos.core.errors import PlanReadError
    from airflow_provider_eos.spark.plan_reader import PlanReader

    class JavaPackage:  # what py4j answers for a class the driver's classpath does not have
        def __getattr__(self, name: str) -> JavaPackage:
            return JavaPackage()

    session = SimpleNamespace(sparkContext=SimpleNamespace(_jvm=JavaPackage()))
    with pytest.raises(PlanReadError, match=r"plan reader .* is not on the Spark driver's classpath") as raised:
        PlanReader(session)
    assert "make install" in raised.value.fix and "writers: driver" in raised.value.fix


def test_the_sinks_close_names_the_transactional_ids_its_writes_used():
    # The driver JVM closes only these ids' producers: another pipeline's with the same settings stay.
    from types import SimpleNamespace

    from airflow_provider_eos.spark.jvm_writer import JvmTasks

    calls: list[tuple] = []
    registry = SimpleNamespace(putConfig=lambda *args: None, forgetConfig=lambda *args: calls.append(args))
    jar = SimpleNamespace(registry=lambda session: registry, write=lambda *args, **kwargs: [])
    writer = JvmTasks(SPEC, jar=jar)
    frame = SimpleNamespace(sparkSession=None)
    writer.run(frame, tasks(batch_id=4), [])
    writer.run(frame, tasks(batch_id=5), [])
    writer.close()
    assert calls == [(writer._handle, json.dumps(["orders-txn-0_0", "orders-txn-0_2"]))]


@pytest.mark.parametrize(("code", "words"), [
    ("INVALID_TRANSACTION_TIMEOUT", ["transaction.timeout.ms=60000", "transaction.max.timeout.ms", "EOS104"]),
    ("COORDINATOR_NOT_AVAILABLE", ["Kafka error COORDINATOR_NOT_AVAILABLE", "EOS201"]),
])
def test_a_producer_that_could_not_start_is_the_same_error_from_both_writers(code, words, monkeypatch):
    # The JVM task's init failure and the Python writer's (TransactionalProducer.producer) say the same.
    from confluent_kafka import KafkaError, KafkaException

    from airflow_provider_eos.spark import transactional_producer

    jvm = typed_task_error(failed(kind="kafka", code=code, fatal=False, retriable=False, detail="x", stage="init",
                                  transactional_id="orders-txn-0_0", batch_id=4), tasks())

    class Refusing:
        def __init__(self, config: dict) -> None:
            pass

        def init_transactions(self, timeout: float) -> None:
            raise KafkaException(KafkaError(getattr(KafkaError, code), "x"))

    monkeypatch.setattr(transactional_producer, "Producer", Refusing)
    writer = transactional_producer.TransactionalProducer(SPEC, "orders-txn-0_0")
    with pytest.raises(SinkKafkaError) as python:
        writer.producer(4)
    assert type(jvm) is SinkKafkaError and jvm.message == python.value.message and jvm.fix == python.value.fix
    assert jvm.message.startswith("the sink could not start its transactional producer orders-txn-0_0 for batch 4")
    for word in words:
        assert word in jvm.message + (jvm.fix or ""), jvm
    assert not writer.has_producer
