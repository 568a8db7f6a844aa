"""The one mapping of a Kafka refusal to the ACL it needs (core.acls.denials) and the clients' dialects of it."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.acls import ResourceType, required_acls
from airflow_provider_eos.core.acls.denials import NEEDED, acl_missing, denied_resource_type, for_role, java_denial
from airflow_provider_eos.core.errors import AclMissingError, EosError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.denials import refusal

SCRAM = {"bootstrap.servers": "b:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
         "sasl.username": "orders-recovery", "sasl.password": "secret"}
SPEC = PipelineSpec(name="orders", kafka=SCRAM, input_topics=["orders"], output_topic="orders-out",
                    dlq_topic="orders-dlq", group_id="orders-sink", transactional_id_prefix="orders-txn",
                    checkpoint_location="/tmp/cp")


@pytest.mark.parametrize(("code", "expected"), [
    ("TOPIC_AUTHORIZATION_FAILED", ResourceType.TOPIC),
    ("GroupAuthorizationFailedError", ResourceType.GROUP),
    ("TransactionalIdAuthorizationFailedError", ResourceType.TRANSACTIONAL_ID),
    ("cluster_authorization_failed", ResourceType.CLUSTER),
    ("_TRANSPORT", None),
    ("UnknownTopicOrPartitionError", None),
])
def test_each_clients_spelling_of_a_refusal_names_its_resource_type(code: str, expected: ResourceType | None) -> None:
    assert denied_resource_type(code) is expected


def test_java_exceptions_name_the_refused_topics_and_group() -> None:
    text = "Caused by: org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics: " \
           "[a, b]\n\tat org.apache..."
    assert java_denial(text) == (ResourceType.TOPIC, ("a", "b"))
    assert java_denial("GroupAuthorizationException: Not authorized to access group: g") == (ResourceType.GROUP,
                                                                                                ("g",))
    assert java_denial("TimeoutException: Timed out waiting for a node assignment") is None


def test_the_refused_request_decides_the_operation_named() -> None:
    fetch = acl_missing("OffsetFetch", ResourceType.GROUP, ["orders-sink"], settings=SCRAM)
    commit = acl_missing("OffsetCommit", ResourceType.GROUP, ["orders-sink"], settings=SCRAM)
    assert (fetch.operation, commit.operation) == ("DESCRIBE", "READ")
    assert "Kafka refused User:orders-recovery OffsetFetch: it needs DESCRIBE on GROUP 'orders-sink'" in fetch.message
    assert "implies" not in commit.message and "imply DESCRIBE" in fetch.message
    assert isinstance(fetch, EosError) and "secret" not in str(fetch)
    assert ("WriteTxnMarkers", ResourceType.CLUSTER) in NEEDED
    cluster = acl_missing("DescribeConfigs", ResourceType.CLUSTER, [])
    assert cluster.resource_names == ("kafka-cluster",) and "the client's principal" in cluster.message


def test_for_role_names_the_roles_acl_on_the_resource_and_the_grant() -> None:
    refused = acl_missing("Metadata", ResourceType.TOPIC, ["orders"])
    principal = "User:orders-recovery"
    named = for_role(refused, "recovery", pipeline="orders", settings=SCRAM,
                     role_acls=required_acls(SPEC, principal, "recovery"))
    assert named.role == "recovery" and named.principal == principal
    assert principal in named.message and "the client's principal" not in named.message
    assert "READ on TOPIC 'orders' (LITERAL)" in str(named.fix)
    assert f"eos acls --spec FILE --principal {principal} --role recovery --apply" in str(named.fix)
    assert for_role(named, "health") is named  # the first role to name it wins


def test_a_prefixed_acl_covers_the_ids_under_it() -> None:
    refused = acl_missing("DescribeTransactions", ResourceType.TRANSACTIONAL_ID, ["orders-txn-0"])
    named = for_role(refused, "health", settings=SCRAM, role_acls=required_acls(SPEC, "User:h", "health"))
    assert "DESCRIBE on TRANSACTIONAL_ID 'orders-txn-' (PREFIXED)" in str(named.fix)


def test_client_errors_become_the_typed_error_and_others_do_not() -> None:
    from confluent_kafka import KafkaError, KafkaException
    from kafka.errors import NodeNotReadyError, TopicAuthorizationFailedError

    group = refusal(KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED)), "OffsetFetch",
                    {ResourceType.GROUP: ["g"]}, settings=SCRAM)
    assert isinstance(group, AclMissingError) and group.resource_names == ("g",)
    topic = refusal(TopicAuthorizationFailedError(), "DescribeProducers", {ResourceType.TOPIC: ["out"]})
    assert topic is not None and topic.operation == "READ"
    assert refusal(KafkaException(KafkaError(KafkaError._TRANSPORT)), "OffsetFetch", {}) is None
    assert refusal(NodeNotReadyError(), "ListOffsets", {}) is None
