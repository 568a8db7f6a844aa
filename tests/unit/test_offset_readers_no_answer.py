"""Every reader of the sink group's offsets and of the logs' offsets ends a silent broker's no answer with
:class:`KafkaNoAnswerError` naming the spec's brokers and the request, and align's write with
:class:`KafkaWriteNoAnswerError`, which says the write may have gone through (design note 76).

Before, the writers' committed-offset reads, health's and pre-flight's raised (or recorded) a plain
``GroupOffsetsError`` without the brokers, health's metadata and ListOffsets a ``HealthProbeError`` (a ListOffsets
future's wait that ran out: an untyped ``TimeoutError``), and align's write a ``GroupOffsetsError`` saying nothing
of its effect (its future's wait: an untyped ``TimeoutError``). The readers themselves run here, each with a
:class:`~tests.support.silent_admin.SilentAdmin`; the real paused broker: tests/integration/test_silent_broker.py.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from airflow_provider_eos.core.errors import (
    AclMissingError,
    KafkaNoAnswerError,
    KafkaWriteNoAnswerError,
)
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka import health_probe
from airflow_provider_eos.kafka.group_offsets import GroupOffsetsError, write_committed_offsets
from airflow_provider_eos.kafka.health_probe import HealthProbeError, probe, probe_run_input
from airflow_provider_eos.spark.driver_writer import DriverWriter
from airflow_provider_eos.spark.executor_writers import ExecutorWriters
from airflow_provider_eos.spark.partition_writer import PartitionWriteTask
from tests.support.silent_admin import BROKERS, TIMED_OUT, SilentAdmin, silent_spec

TP = TopicPartition("orders", 0)
TIMED_OUT_DETAIL = "_TIMED_OUT: Failed to get metadata: Local: Timed out"
SILENT_DETAIL = "connected, but the broker does not answer"  # a future's own wait: the client said nothing
#: The writers read with read_committed_offsets' own request timeout.
WRITERS_TIMEOUT_S = 30


@pytest.fixture
def spec(tmp_path: Path) -> PipelineSpec:
    return silent_spec(tmp_path)


def _no_answer(raised: BaseException, request: str, timeout_s: float, detail: str) -> None:
    assert type(raised) is KafkaNoAnswerError, f"{type(raised).__name__}: {raised}"
    assert raised.retryable
    assert raised.message == f"{request}: no answer from the Kafka broker(s) at {BROKERS} within {timeout_s:g} s " \
                             f"({detail})"
    assert raised.fix is not None and raised.fix.startswith("check that the brokers are answering")


# -- the writers' reads of the group's committed offsets ---------------------------------------------------------


def _driver_writer_read(spec: PipelineSpec, admin: SilentAdmin) -> None:
    clients = SimpleNamespace(spec=spec, admin=admin, checkpoint=None)
    DriverWriter(clients, spill=object())._action("query", 1, {TP: 5})  # type: ignore[arg-type]


def _task_read(spec: PipelineSpec, admin: SilentAdmin) -> None:
    task = PartitionWriteTask(spec=spec, query_id="query", batch_id=1, start={TP: 0}, end={TP: 5},
                              partitions=None, points=None)  # type: ignore[arg-type]  # _decide needs neither
    task._decide(SimpleNamespace(admin=admin), SimpleNamespace(tp=TP))  # type: ignore[arg-type]


def _partitions_without_task_read(spec: PipelineSpec, admin: SilentAdmin) -> None:
    writers = object.__new__(ExecutorWriters)
    writers.clients = SimpleNamespace(spec=spec, admin=admin,  # type: ignore[assignment]
                                      driver_producer=SimpleNamespace(producer=lambda batch_id: None))
    planned = SimpleNamespace(query_id="query", batch_id=1, end={TP: 5})
    mapping = SimpleNamespace(partitions_without_task=lambda end: [TP])
    writers._commit_partitions_without_task(planned, mapping)  # type: ignore[arg-type]


@pytest.mark.parametrize("read", [_driver_writer_read, _task_read, _partitions_without_task_read])
@pytest.mark.parametrize(("error", "detail"), [(TIMED_OUT, TIMED_OUT_DETAIL), (TimeoutError(), SILENT_DETAIL)])
def test_the_writers_reads_of_the_group_end_with_the_no_answer_error(
    spec: PipelineSpec, read: Any, error: BaseException, detail: str
) -> None:
    with pytest.raises(KafkaNoAnswerError) as raised:
        read(spec, SilentAdmin(offsets=error))
    _no_answer(raised.value, "OffsetFetch('orders-eos')", WRITERS_TIMEOUT_S, detail)


def test_a_writers_read_the_broker_answered_keeps_the_groups_error(spec: PipelineSpec) -> None:
    invalid = KafkaException(KafkaError(KafkaError.INVALID_GROUP_ID, "Broker: Invalid group.id"))
    with pytest.raises(GroupOffsetsError, match="could not read committed offsets of group 'orders-eos'"):
        _driver_writer_read(spec, SilentAdmin(offsets=invalid))


# -- health ------------------------------------------------------------------------------------------------------


def _sample(spec: PipelineSpec, admin: SilentAdmin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health_probe, "connected_admin", lambda name, config: admin)
    probe(spec, timeout_s=3, include_transactions=False)


@pytest.mark.parametrize(("admin", "request_name", "detail"), [
    (SilentAdmin(metadata=TIMED_OUT), "Metadata", TIMED_OUT_DETAIL),  # before: HealthProbeError
    # The group's offsets: over kafka-python since design note 84 (tests/unit/test_group_offset_fetch.py).
])
def test_a_health_sample_ends_with_the_no_answer_error(
    spec: PipelineSpec, monkeypatch: pytest.MonkeyPatch, admin: SilentAdmin, request_name: str, detail: str
) -> None:
    with pytest.raises(KafkaNoAnswerError) as raised:
        _sample(spec, admin, monkeypatch)
    _no_answer(raised.value, request_name, 3, detail)


@pytest.mark.parametrize(("error", "detail"), [(TIMED_OUT, TIMED_OUT_DETAIL), (TimeoutError(), SILENT_DETAIL)])
def test_healths_list_offsets_ends_with_the_no_answer_error(
    spec: PipelineSpec, error: BaseException, detail: str
) -> None:
    # Before: HealthProbeError for the client's timeout, and an untyped TimeoutError for the future's wait.
    with pytest.raises(KafkaNoAnswerError) as raised:
        probe_run_input(spec, SilentAdmin(list_offsets=error), timeout_s=3)  # type: ignore[arg-type]
    _no_answer(raised.value, "ListOffsets (read_committed)", 3, detail)


def test_an_answer_of_the_broker_stays_the_health_probes_error(
    spec: PipelineSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    invalid = KafkaException(KafkaError(KafkaError._INVALID_ARG, "Local: Invalid argument or configuration"))
    with pytest.raises(HealthProbeError, match=f"reading topic metadata failed against '{BROKERS}'"):
        _sample(spec, SilentAdmin(metadata=invalid), monkeypatch)
    with pytest.raises(HealthProbeError, match=r"ListOffsets \(read_committed\) failed against"):
        probe_run_input(spec, SilentAdmin(list_offsets=invalid), timeout_s=3)  # type: ignore[arg-type]


# -- align's write -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("error", "detail"), [(TIMED_OUT, TIMED_OUT_DETAIL), (TimeoutError(), SILENT_DETAIL)])
def test_a_write_no_broker_answered_says_it_may_have_gone_through(error: BaseException, detail: str) -> None:
    with pytest.raises(KafkaWriteNoAnswerError) as raised:
        write_committed_offsets(SilentAdmin(commit=error), "orders-eos", {TP: (5, "marker")},  # type: ignore[arg-type]
                                timeout_s=3, brokers=BROKERS)
    found = raised.value
    assert isinstance(found, KafkaNoAnswerError), "the same fact: no answer"
    assert not found.retryable, "a retry would act on a state nobody read"
    assert found.message == (
        f"OffsetCommit('orders-eos'): no answer from the Kafka broker(s) at {BROKERS} within 3 s ({detail}); "
        "the write may have gone through: what the group holds now is unknown")
    assert found.fix is not None and found.fix.startswith("check that the brokers are answering"), found.fix
    assert "before repeating the repair, run `eos verify --spec <spec file>`" in found.fix, found.fix
    assert "The task's retry runs the call again" not in found.fix, found.fix


def test_a_write_the_broker_answered_keeps_its_own_error() -> None:
    invalid = KafkaException(KafkaError(KafkaError.INVALID_GROUP_ID, "Broker: Invalid group.id"))
    with pytest.raises(GroupOffsetsError, match="could not write offsets of group 'orders-eos'"):
        write_committed_offsets(SilentAdmin(commit=invalid), "orders-eos", {TP: (5, "m")},  # type: ignore[arg-type]
                                timeout_s=3, brokers=BROKERS)
    refused = KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED, "Broker: Group authorization failed"))
    with pytest.raises(AclMissingError):
        write_committed_offsets(SilentAdmin(commit=refused), "orders-eos", {TP: (5, "m")},  # type: ignore[arg-type]
                                timeout_s=3, brokers=BROKERS)
