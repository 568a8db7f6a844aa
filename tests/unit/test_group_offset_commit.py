"""The repairs' write of the sink group's offsets (align ``--execute``) over kafka-python's OffsetCommit.

It replaced librdkafka's AlterConsumerGroupOffsets, a coordinator request that aborts the whole process when its
connection is lost (librdkafka 2.16, confluentinc/librdkafka#4605; design note 88). What must hold: the marker is
stored as librdkafka stored it (every reader finds it), no answer is the write that may have gone through, a
coordinator not ready is sent again, a refusal is the missing ACL. Against the real broker:
tests/integration/test_recovery_cli.py (align ``--execute``, then verify and the job read the marker).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kafka.errors import (
    GroupAuthorizationFailedError,
    NoError,
    NotCoordinatorError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    UnknownMemberIdError,
)
from kafka.structs import TopicPartition as KafkaTopicPartition

from airflow_provider_eos.core.errors import AclMissingError, KafkaNoAnswerError, KafkaWriteNoAnswerError
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.group_offset_commit import commit_group_offsets
from airflow_provider_eos.kafka.group_offsets import GroupOffsetsError, stored_metadata
from tests.support.offset_fetch_admin import BROKERS, OffsetCommitAdmin

TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
K0, K1 = KafkaTopicPartition("orders", 0), KafkaTopicPartition("orders", 1)
OK = {K0: NoError, K1: NoError}


def _commit(admin: Any, timeout_s: float = 5) -> None:
    commit_group_offsets(admin, "orders-eos", {TP1: (9, "eos1:q:4"), TP0: (5, "eos1:q:4")}, timeout_s=timeout_s)


def test_the_marker_is_stored_as_librdkafka_stored_it() -> None:
    admin = OffsetCommitAdmin(OK)
    _commit(admin)
    [(group, committed)] = admin.committed
    assert group == "orders-eos"
    assert {tp: (o.offset, o.metadata) for tp, o in committed.items()} == {
        K0: (5, stored_metadata("eos1:q:4")), K1: (9, stored_metadata("eos1:q:4"))}
    assert stored_metadata("eos1:q:4") == "eos1:q:4\0"


def test_nothing_to_commit_sends_nothing() -> None:
    admin = OffsetCommitAdmin(OK)
    commit_group_offsets(admin, "orders-eos", {}, timeout_s=5)  # type: ignore[arg-type]
    assert admin.committed == []


def test_a_coordinator_not_ready_is_forgotten_and_the_write_sent_again() -> None:
    admin = OffsetCommitAdmin({K0: NotCoordinatorError, K1: NotCoordinatorError}, OK)
    from kafka.protocol.metadata import CoordinatorType

    admin._manager.cluster._coordinators[(CoordinatorType.GROUP, "orders-eos")] = 3
    _commit(admin)
    assert len(admin.committed) == 2
    assert (CoordinatorType.GROUP, "orders-eos") not in admin._manager.cluster._coordinators


@pytest.mark.parametrize(("script", "resource", "named"), [
    (GroupAuthorizationFailedError(), "GROUP", "orders-eos"),
    ({K0: TopicAuthorizationFailedError, K1: NoError}, "TOPIC", "orders"),
])
def test_a_refusal_is_the_missing_acl(script: Any, resource: str, named: str) -> None:
    with pytest.raises(AclMissingError) as raised:
        _commit(OffsetCommitAdmin(script))
    assert raised.value.request == "OffsetCommit" and raised.value.resource_type == resource, raised.value
    assert raised.value.resource_names == (named,), raised.value


def test_a_group_with_members_refuses_naming_the_partitions() -> None:
    with pytest.raises(GroupOffsetsError) as raised:
        _commit(OffsetCommitAdmin({K0: UnknownMemberIdError, K1: NoError}))
    assert "refused offsets for orders-0: UnknownMemberIdError; nothing is guaranteed committed" in raised.value.message
    assert "stop the job first" in str(raised.value.fix)


def test_a_request_timeout_is_a_write_that_may_have_gone_through() -> None:
    with pytest.raises(KafkaWriteNoAnswerError) as raised:
        _commit(OffsetCommitAdmin(RequestTimedOutError()))
    found = raised.value
    assert isinstance(found, KafkaNoAnswerError) and not found.retryable
    assert found.message.startswith(f"OffsetCommit('orders-eos'): no answer from the Kafka broker(s) at {BROKERS}")
    assert "the write may have gone through" in found.message
    assert "run `eos verify --spec <spec file>`" in str(found.fix)


def test_a_broker_that_never_answers_ends_at_the_deadline_as_a_write_that_may_have_gone_through() -> None:
    never = threading.Event()

    class Silent(OffsetCommitAdmin):
        def alter_group_offsets(self, group_id: str, offsets: dict[Any, Any]) -> dict[Any, Any]:
            never.wait(30)
            raise AssertionError("the deadline should have ended the call")

    try:
        with pytest.raises(KafkaWriteNoAnswerError) as raised:
            _commit(Silent(OK, request_timeout_ms=300))
    finally:
        never.set()
    assert not raised.value.retryable and "the write may have gone through" in raised.value.message
