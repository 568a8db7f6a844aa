"""The read of the sink group's offsets outside the job (health samples, pre-flight, verification) over
kafka-python's OffsetFetch.

It replaced librdkafka's ListConsumerGroupOffsets there, which aborts the whole process when its connection is
lost (librdkafka 2.16, confluentinc/librdkafka#4605; design notes 84, 85). The same answers must read the same: the
stable read's retries, the markers without librdkafka's NUL, refusals as the missing ACL, no answer as
:class:`KafkaNoAnswerError`. Against the real broker: tests/integration/test_health_live.py (markers, verdicts)
and tests/integration/test_silent_broker.py (the broker paused under this read).
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.errors import GroupAuthorizationFailedError, RequestTimedOutError

from airflow_provider_eos.core.errors import AclMissingError, KafkaNoAnswerError
from airflow_provider_eos.core.markers import CommittedOffset
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions.stable_read import OBSERVER_STABLE_WAIT_MS, STABLE_READ_MARGIN_MS
from airflow_provider_eos.kafka import cluster_facts, group_offset_fetch
from airflow_provider_eos.kafka.fact_gaps import FactGaps
from airflow_provider_eos.kafka.group_offset_fetch import read_group_offsets
from airflow_provider_eos.kafka.group_offsets import GroupOffsetsError
from airflow_provider_eos.kafka.retriable import STABLE_OFFSETS
from airflow_provider_eos.usecases.clients import PipelineClients
from tests.support.offset_fetch_admin import BROKERS, OffsetFetchAdmin, answer
from tests.support.silent_admin import TIMED_OUT, SilentAdmin, silent_spec

TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
UNSTABLE, NOT_COORDINATOR, TOPIC_REFUSED, GROUP_REFUSED = 88, 16, 29, 30


def _read(admin: OffsetFetchAdmin, partitions: Any = (TP0, TP1)) -> Any:
    return read_group_offsets(admin, "orders-eos", partitions, transaction_timeout_ms=60_000, observer=True)  # type: ignore[arg-type]


@pytest.fixture
def short_observer_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """The observer's wait for a pending commit cut to 0.3 s (60 s in the product)."""
    monkeypatch.setattr(group_offset_fetch, "observer_stable_read_timeout_ms", lambda timeout_ms: 300)


def test_offsets_and_markers_read_as_librdkafka_read_them() -> None:
    admin = OffsetFetchAdmin(answer([("orders", 0, 42, "eos1:q:7\0", 0), ("orders", 1, -1, "", 0)]))
    assert _read(admin) == {TP0: CommittedOffset(42, "eos1:q:7"), TP1: None}  # the stored NUL is librdkafka's
    [(request, node)] = admin.sent
    assert request.require_stable and request.group_id == "orders-eos" and node == 1
    assert [(t.name, sorted(t.partition_indexes)) for t in request.topics] == [("orders", [0, 1])]


def test_no_partitions_sends_nothing() -> None:
    admin = OffsetFetchAdmin(answer([]))
    assert _read(admin, partitions=()) == {}
    assert admin.sent == []


def test_a_pending_commit_is_read_again_until_it_resolves() -> None:
    admin = OffsetFetchAdmin(answer([("orders", 0, 40, "m", UNSTABLE), ("orders", 1, 3, "m", 0)]),
                             answer([("orders", 0, 42, "m", 0), ("orders", 1, 3, "m", 0)]))
    assert _read(admin) == {TP0: CommittedOffset(42, "m"), TP1: CommittedOffset(3, "m")}
    assert len(admin.sent) == 2


def test_a_commit_pending_past_the_observers_wait_is_the_pending_error(short_observer_wait: None) -> None:
    admin = OffsetFetchAdmin(answer([("orders", 0, 40, "m", UNSTABLE), ("orders", 1, 3, "m", 0)]))
    with pytest.raises(GroupOffsetsError, match=r"still holds a pending transactional offset commit on orders-0"):
        _read(admin)
    assert len(admin.sent) > 1


def test_a_moved_coordinator_is_looked_up_again() -> None:
    admin = OffsetFetchAdmin(answer([], error_code=NOT_COORDINATOR), answer([("orders", 0, 7, "m", 0)]))
    assert _read(admin, partitions=(TP0,)) == {TP0: CommittedOffset(7, "m")}
    assert admin.lookups == 2, "NOT_COORDINATOR must drop kafka-python's cached coordinator"


@pytest.mark.parametrize(("script", "resource"), [
    ((answer([], error_code=GROUP_REFUSED),), "GROUP"),
    ((answer([("orders", 0, -1, None, TOPIC_REFUSED)]),), "TOPIC"),
    ((GroupAuthorizationFailedError(),), "GROUP"),  # FindCoordinator's refusal, raised by kafka-python
])
def test_a_refusal_is_the_missing_acl(script: tuple[Any, ...], resource: str) -> None:
    with pytest.raises(AclMissingError) as raised:
        _read(OffsetFetchAdmin(*script), partitions=(TP0,))
    assert raised.value.request == "OffsetFetch" and raised.value.resource_type == resource, raised.value
    named = "orders-eos" if resource == "GROUP" else "orders"
    assert raised.value.resource_names == (named,), raised.value


def test_a_request_timeout_is_the_no_answer_error() -> None:
    with pytest.raises(KafkaNoAnswerError) as raised:
        _read(OffsetFetchAdmin(RequestTimedOutError()), partitions=(TP0,))
    assert raised.value.retryable
    assert raised.value.message.startswith(
        f"OffsetFetch('orders-eos'): no answer from the Kafka broker(s) at {BROKERS}"), raised.value.message


def test_a_broker_that_never_answers_ends_at_the_deadline() -> None:
    never = threading.Event()
    admin = OffsetFetchAdmin(never, request_timeout_ms=300, bootstrap_timeout_ms=300)
    try:
        with pytest.raises(KafkaNoAnswerError) as raised:
            _read(admin, partitions=(TP0,))
    finally:
        never.set()
    assert f"at {BROKERS} within 0.6 s" in raised.value.message, raised.value.message


def test_an_unexpected_group_error_names_it() -> None:
    invalid_group = 24  # INVALID_GROUP_ID
    with pytest.raises(GroupOffsetsError, match=r"group 'orders-eos': InvalidGroupIdError"):
        _read(OffsetFetchAdmin(answer([], error_code=invalid_group)), partitions=(TP0,))


def test_preflight_reads_the_group_over_kafka_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib

    admin = OffsetFetchAdmin(RequestTimedOutError())
    monkeypatch.setattr(cluster_facts, "admin_client", lambda spec, **kw: contextlib.nullcontext(admin))
    gatherer = object.__new__(cluster_facts._Gatherer)
    gatherer.spec, gatherer.timeout_s, gatherer.gaps = silent_spec(tmp_path), 1, FactGaps()
    assert gatherer.group_offsets({TP0}) is None
    assert gatherer.gaps.unavailable["group_offsets"].startswith(
        f"OffsetFetch('orders-eos'): no answer from the Kafka broker(s) at {BROKERS} within 1 s")
    assert admin.sent, "pre-flight's read went elsewhere"


@pytest.fixture
def wait_bounds(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds each read's wait for a pending commit was bounded by, in order."""
    bounds: list[float] = []
    real_bounded = STABLE_OFFSETS.bounded

    def bounded(*, timeout_s: float) -> Any:
        bounds.append(timeout_s)
        return real_bounded(timeout_s=timeout_s)

    monkeypatch.setattr(group_offset_fetch, "STABLE_OFFSETS", SimpleNamespace(bounded=bounded))
    return bounds


def test_a_pending_commit_is_waited_for_the_observers_wait_or_one_request_timeout_not_a_whole_call_deadline(
    monkeypatch: pytest.MonkeyPatch, wait_bounds: list[float],
) -> None:
    """The integration test of the capped wait (tests/integration/test_observer_stable_read.py) met it: bounded by
    the call's deadline (bootstrap wait + request timeout), the observer's 30 s became 60 s."""
    monkeypatch.setattr(group_offset_fetch, "observer_stable_read_timeout_ms", lambda timeout_ms: 3_000)
    ok = answer([("orders", 0, 7, "m", 0)])
    _read(OffsetFetchAdmin(ok, request_timeout_ms=30_000, bootstrap_timeout_ms=30_000), partitions=(TP0,))
    _read(OffsetFetchAdmin(ok, request_timeout_ms=1_000, bootstrap_timeout_ms=30_000), partitions=(TP0,))
    assert wait_bounds == [30.0, 3.0]


def test_a_non_observer_waits_as_long_as_a_transaction_can_be_open(wait_bounds: list[float]) -> None:
    """verify and the recovery actions act on what they read: a pending commit is waited for as the writers wait
    for it (the spec's transaction timeout plus the broker's margin), never the observer's cap."""
    ok = answer([("orders", 0, 7, "m", 0)])
    for observer in (True, False):
        read_group_offsets(OffsetFetchAdmin(ok, request_timeout_ms=1_000), "orders-eos", (TP0,),  # type: ignore[arg-type]
                           transaction_timeout_ms=900_000, observer=observer)
    assert wait_bounds == [OBSERVER_STABLE_WAIT_MS / 1000, (900_000 + STABLE_READ_MARGIN_MS) / 1000]


def test_verify_reads_the_group_over_kafka_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Design note 85: verification's read of the offsets (verify, align, rewind) is kafka-python's OffsetFetch; the
    librdkafka client reads the topics' partitions only (its ListConsumerGroupOffsets would fail this test)."""
    import contextlib

    spec = silent_spec(tmp_path)
    fetch = OffsetFetchAdmin(answer([("orders", 0, 42, "eos1:q:7\0", 0)]))
    clients = PipelineClients(spec, timeout_s=3)
    clients.__dict__["admin"] = SilentAdmin(offsets=AssertionError("librdkafka's group read was used"))
    monkeypatch.setattr(PipelineClients, "transactions_admin", lambda self: contextlib.nullcontext(fetch))
    assert clients.committed_offsets() == {TP0: CommittedOffset(42, "eos1:q:7")}
    [(request, _)] = fetch.sent
    assert request.require_stable and request.group_id == "orders-eos"


def test_verify_with_settings_kafka_python_cannot_take_reads_through_librdkafka(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An OAUTHBEARER spec: kafka-python has no token provider here, so verification keeps librdkafka's read (and its
    no-answer error) rather than refusing a spec it could verify before note 85."""
    spec = silent_spec(tmp_path)
    spec = spec.model_copy(update={"kafka": {**spec.kafka, "sasl.oauthbearer.config": "principal=eos"}})
    clients = PipelineClients(spec, timeout_s=3)
    clients.__dict__["admin"] = SilentAdmin(offsets=TIMED_OUT)

    def no_kafka_python(self: PipelineClients) -> Any:
        raise AssertionError("kafka-python was used with settings it cannot take")

    monkeypatch.setattr(PipelineClients, "transactions_admin", no_kafka_python)
    with pytest.raises(KafkaNoAnswerError) as raised:
        clients.committed_offsets()
    expected = f"OffsetFetch('orders-eos'): no answer from the Kafka broker(s) at {BROKERS}"
    assert raised.value.message.startswith(expected), raised.value.message
    assert "_TIMED_OUT" in raised.value.message, raised.value.message  # librdkafka's verdict
