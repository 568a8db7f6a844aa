"""Facts that pass every pre-flight rule, and mutations that break one thing each.

Shared by the rule-family tests: each case is ``(code, mutation, words the message must contain)``
and is checked by :func:`assert_passes` or :func:`assert_fails`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from airflow_provider_eos.core.acls import CheckMethod, PermissionFacts, required_acls
from airflow_provider_eos.core.broker_protocol import BrokerProtocol
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset
from airflow_provider_eos.core.preflight import (
    RULES,
    CheckpointFacts,
    InternalTopicFacts,
    PreflightFacts,
    Severity,
    Status,
    TopicFacts,
    evaluate,
)
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import Transaction, TxnState
from airflow_provider_eos.kafka.settings import sink_producer_config

QUERY = "0b5c3e1a-8d2f-4e6a-9c1b-7f3e5a2d4c60"
OTHER_QUERY = "9f9f9f9f-0000-4e6a-9c1b-7f3e5a2d4c60"
DAY_MS = 86_400_000
JOB_PRINCIPAL = "User:orders-job"
CODES = [r.code for r in RULES]

Mutation = Callable[[PreflightFacts], PreflightFacts]


def good_spec(**overrides: Any) -> PipelineSpec:
    fields: dict[str, Any] = {
        "name": "orders",
        "kafka": {"bootstrap.servers": "b1:9092,b2:9092,b3:9092"},
        "input_topics": ["orders-in"],
        "output_topic": "orders-out",
        "dlq_topic": "orders-dlq",
        "group_id": "orders-sink",
        "transactional_id_prefix": "orders-eos",
        "checkpoint_location": "s3a://bucket/checkpoints/orders",
        "trigger": "10 seconds",
        "batch_budget_ms": 20_000,
        "transaction_timeout_ms": 60_000,
    }
    return PipelineSpec.from_dict({**fields, **overrides})


def good_topic(name: str, **overrides: Any) -> TopicFacts:
    values: dict[str, Any] = {
        "name": name,
        "exists": True,
        "partitions": 4,
        "replication_factor": 3,
        "min_insync_replicas": 2,
        "cleanup_policy": "delete",
        "retention_ms": 7 * DAY_MS,
        "unclean_leader_election": False,
        "retention_bytes": -1,
    }
    return TopicFacts(**{**values, **overrides})


BROKER = {
    "transaction.max.timeout.ms": "900000",
    "transactional.id.expiration.ms": "604800000",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "offsets.topic.replication.factor": "3",
    "offsets.retention.minutes": "10080",
}


#: What a Kafka 4.4.0 broker announces (the keys the rules read; versions as the devstack's broker served them).
PROTOCOL_V2 = BrokerProtocol(
    api_versions={27: (0, 2), 28: (0, 6), 61: (0, 0), 65: (0, 0), 66: (0, 2)},
    finalized_features={"metadata.version": 33, "transaction.version": 2},
    supported_features={"metadata.version": (7, 33), "transaction.version": (0, 2)},
)
#: What a Kafka 3.9.2 broker announces: transactions v1, no transaction.version feature.
PROTOCOL_V1 = BrokerProtocol(
    api_versions={27: (0, 1), 28: (0, 4), 61: (0, 0), 65: (0, 0), 66: (0, 1)},
    finalized_features={"metadata.version": 21},
    supported_features={"metadata.version": (1, 21)},
)

#: Where the JVM executor writer's jar is on the submitting machine (EOS318).
JAR = "/opt/eos/jars/eos-executor-writer/eos-executor-writer.jar"


#: Kafka's partition counts of its internal topics (transaction.state.log.num.partitions, offsets.topic.num.partitions).
INTERNAL_PARTITIONS = {"__transaction_state": 50, "__consumer_offsets": 50}


def internal_topic(name: str, replicas: int = 3, in_sync: int | None = None, min_isr: int | None = 2,
                   **partitions: tuple[int, int]) -> InternalTopicFacts:
    """``name`` with every partition at ``replicas`` and ``in_sync`` (default: all in sync); ``p7=(3, 1)``
    gives partition 7 three replicas, one in sync."""
    count = INTERNAL_PARTITIONS[name]
    shape = {p: (replicas, replicas if in_sync is None else in_sync) for p in range(count)}
    shape.update({int(key[1:]): value for key, value in partitions.items()})
    return InternalTopicFacts(
        name=name,
        exists=True,
        replicas={p: r for p, (r, _) in shape.items()},
        in_sync={p: i for p, (_, i) in shape.items()},
        min_insync_replicas=min_isr,
    )


def good_facts() -> PreflightFacts:
    spec = good_spec()
    other = good_spec(
        name="payments",
        input_topics=["payments-in"],
        output_topic="payments-out",
        dlq_topic=None,
        group_id="payments-sink",
        transactional_id_prefix="payments-eos",
        checkpoint_location="s3a://bucket/checkpoints/payments",
    )
    marker = BatchMarker(QUERY, 3).encode()
    return PreflightFacts(
        spec=spec,
        broker_configs={b: dict(BROKER) for b in (1, 2, 3)},
        live_brokers=3,
        topics={t: good_topic(t) for t in ("orders-in", "orders-out", "orders-dlq")},
        internal_topics={name: internal_topic(name) for name in INTERNAL_PARTITIONS},
        group_state="EMPTY",
        group_members=(),
        group_offsets={TopicPartition("orders-in", p): CommittedOffset(40 + p, marker) for p in range(4)},
        transactions=(),
        other_specs=(spec, other),  # a specs folder holds the pipeline itself too
        checkpoint=CheckpointFacts("s3a://bucket/checkpoints/orders", True, QUERY, 3, 3),
        master="spark://master:7077",
        producer_config=sink_producer_config(spec),
        executor_writer_jar=JAR,
        broker_protocol=PROTOCOL_V2,
        permissions=PermissionFacts(principal=JOB_PRINCIPAL, method=CheckMethod.DESCRIBE_ACLS,
                                    bindings=tuple(required_acls(spec, JOB_PRINCIPAL, "job"))),
    )


# -- mutations -----------------------------------------------------------------------------------


def spec(**overrides: Any) -> Mutation:
    def apply(facts: PreflightFacts) -> PreflightFacts:
        new = facts.spec.with_overrides(**overrides)
        # The specs folder holds the changed file too.
        others = tuple(new if other == facts.spec else other for other in facts.other_specs or ())
        return dataclasses.replace(
            facts,
            spec=new,
            producer_config=sink_producer_config(new),
            other_specs=others if facts.other_specs is not None else None,
        )

    return apply


def facts_(**changes: Any) -> Mutation:
    return lambda facts: dataclasses.replace(facts, **changes)


def broker(key: str, value: str | None, *, only: int | None = None) -> Mutation:
    def apply(facts: PreflightFacts) -> PreflightFacts:
        assert facts.broker_configs is not None
        configs = {b: dict(c) for b, c in facts.broker_configs.items()}
        for b, config in configs.items():
            if only is None or b == only:
                if value is None:
                    config.pop(key, None)
                else:
                    config[key] = value
        return dataclasses.replace(facts, broker_configs=configs)

    return apply


def topic(name: str, **overrides: Any) -> Mutation:
    def apply(facts: PreflightFacts) -> PreflightFacts:
        assert facts.topics is not None
        topics = dict(facts.topics)
        topics[name] = dataclasses.replace(topics[name], **overrides)
        return dataclasses.replace(facts, topics=topics)

    return apply


def single_broker(facts: PreflightFacts) -> PreflightFacts:
    """The devstack: one broker, every replication setting 1."""
    one = {**BROKER, **{k: "1" for k in BROKER if "replication" in k or "isr" in k}}
    topics = {
        name: dataclasses.replace(t, replication_factor=1, min_insync_replicas=1) for name, t in facts.topics.items()
    }
    internal = {name: internal_topic(name, replicas=1, min_isr=1) for name in INTERNAL_PARTITIONS}
    return dataclasses.replace(facts, broker_configs={1: one}, live_brokers=1, topics=topics, internal_topics=internal)


def internal(name: str, *args: Any, **kwargs: Any) -> Mutation:
    """Replace internal topic ``name`` by :func:`internal_topic` ``(name, *args, **kwargs)``."""
    return lambda facts: dataclasses.replace(
        facts, internal_topics={**facts.internal_topics, name: internal_topic(name, *args, **kwargs)}
    )


def no_internal(name: str) -> Mutation:
    """Internal topic ``name`` does not exist yet (Kafka creates it on first use)."""
    return lambda facts: dataclasses.replace(
        facts, internal_topics={**facts.internal_topics, name: InternalTopicFacts(name=name, exists=False)}
    )


def other_spec(**overrides: Any) -> Mutation:
    def apply(facts: PreflightFacts) -> PreflightFacts:
        base = {
            "name": "billing",
            "input_topics": ["billing-in"],
            "output_topic": "billing-out",
            "dlq_topic": None,
            "group_id": "billing-sink",
            "transactional_id_prefix": "billing-eos",
            "checkpoint_location": "s3a://bucket/checkpoints/billing",
        }
        return dataclasses.replace(facts, other_specs=(*facts.other_specs, good_spec(**{**base, **overrides})))

    return apply


def group_offsets(*metadata: str) -> Mutation:
    return facts_(
        group_offsets={TopicPartition("orders-in", p): CommittedOffset(40 + p, m) for p, m in enumerate(metadata)}
    )


def transaction(txn_id: str, state: TxnState = TxnState.ONGOING) -> Mutation:
    txn = Transaction(
        transactional_id=txn_id,
        state=state,
        producer_id=4001,
        producer_epoch=7,
        start_time_ms=1_700_000_000_000,
        timeout_ms=60_000,
        partitions=frozenset({TopicPartition("orders-out", 1)}),
    )
    return facts_(transactions=(txn,))


def producer_config(**changes: Any) -> Mutation:
    return lambda facts: dataclasses.replace(facts, producer_config={**facts.producer_config, **changes})


MARKER_3 = BatchMarker(QUERY, 3).encode()

Case = tuple[str, Mutation, list[str]]


def case_id(case: Case) -> str:
    return case[0]


def assert_passes(case: Case) -> None:
    """The rule passes on the mutated good facts, names ``words`` and gives no fix."""
    code, mutate, words = case
    finding = evaluate(mutate(good_facts())).finding(code)
    assert finding.status is Status.PASS, finding
    assert finding.fix is None
    for word in words:
        assert word in finding.message, finding.message


def assert_fails(case: Case) -> None:
    """The rule fails on the mutated good facts, names ``words``, and the verdict follows its severity."""
    code, mutate, words = case
    report = evaluate(mutate(good_facts()))
    finding = report.finding(code)
    assert finding.status is Status.FAIL, finding
    for word in words:
        assert word in finding.message, finding.message
    if finding.severity is Severity.INFO:
        assert finding.fix is None
    else:
        assert finding.fix
    assert report.ok is not any(f.severity is Severity.ERROR and f.status is Status.FAIL for f in report.findings)
    if finding.severity is Severity.ERROR:
        assert not report.ok and finding in report.errors


def unchanged(area: str) -> list[Case]:
    """A passing case on the good facts themselves for every rule whose code starts with ``area``."""
    return [(code, lambda f: f, []) for code in CODES if code.startswith(area)]
