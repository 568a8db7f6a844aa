"""The least-privilege ACL sets per role: exact for a sample spec, prefixed ids, the DLQ only when configured."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core import transactional_ids
from airflow_provider_eos.core.acls import (
    Acl,
    AclError,
    AclSetReport,
    Operation,
    PatternType,
    ResourceType,
    check_principal,
    is_secured,
    principal_of,
    required_acls,
)
from airflow_provider_eos.core.presentation import acls_text
from tests.support.acl_specs import orders_spec as spec

P = "User:orders-job"


def rows(acls: list[Acl]) -> list[tuple[str, str, str, str]]:
    return [(a.resource_type.value, a.pattern.value, a.name, a.operation.value) for a in acls]


JOB = [
    ("CLUSTER", "LITERAL", "kafka-cluster", "DESCRIBE_CONFIGS"),
    ("TOPIC", "LITERAL", "__transaction_state", "DESCRIBE"),
    ("TOPIC", "LITERAL", "__transaction_state", "DESCRIBE_CONFIGS"),
    ("TOPIC", "LITERAL", "__consumer_offsets", "DESCRIBE"),
    ("TOPIC", "LITERAL", "__consumer_offsets", "DESCRIBE_CONFIGS"),
    ("TOPIC", "LITERAL", "orders-in", "READ"),
    ("TOPIC", "LITERAL", "orders-in", "DESCRIBE_CONFIGS"),
    ("TOPIC", "LITERAL", "refunds-in", "READ"),
    ("TOPIC", "LITERAL", "refunds-in", "DESCRIBE_CONFIGS"),
    ("TOPIC", "LITERAL", "orders-out", "WRITE"),
    ("TOPIC", "LITERAL", "orders-out", "DESCRIBE_CONFIGS"),
    ("TOPIC", "LITERAL", "orders-dlq", "WRITE"),
    ("TOPIC", "LITERAL", "orders-dlq", "DESCRIBE_CONFIGS"),
    ("GROUP", "LITERAL", "orders-sink", "READ"),
    ("TRANSACTIONAL_ID", "PREFIXED", "orders-eos-", "WRITE"),
]
RECOVERY = [
    ("CLUSTER", "LITERAL", "kafka-cluster", "DESCRIBE_CONFIGS"),
    ("TOPIC", "LITERAL", "orders-in", "READ"),
    ("TOPIC", "LITERAL", "refunds-in", "READ"),
    ("TOPIC", "LITERAL", "orders-out", "READ"),
    ("TOPIC", "LITERAL", "orders-dlq", "READ"),
    ("GROUP", "LITERAL", "orders-sink", "READ"),
    ("TRANSACTIONAL_ID", "PREFIXED", "orders-eos-", "WRITE"),
]
HANGING_ABORT = [("CLUSTER", "LITERAL", "kafka-cluster", "ALTER"), ("TRANSACTIONAL_ID", "LITERAL", "*", "DESCRIBE")]
HEALTH = [
    ("TOPIC", "LITERAL", "orders-in", "DESCRIBE"),
    ("TOPIC", "LITERAL", "refunds-in", "DESCRIBE"),
    ("TOPIC", "LITERAL", "orders-out", "DESCRIBE"),
    ("TOPIC", "LITERAL", "orders-dlq", "DESCRIBE"),
    ("GROUP", "LITERAL", "orders-sink", "DESCRIBE"),
    ("TRANSACTIONAL_ID", "PREFIXED", "orders-eos-", "DESCRIBE"),
]


@pytest.mark.parametrize(("role", "expected"), [("job", JOB), ("recovery", RECOVERY), ("health", HEALTH)])
def test_each_role_gets_exactly_its_set(role: str, expected: list[tuple[str, str, str, str]]) -> None:
    acls = required_acls(spec(), P, role)
    assert rows(acls) == expected
    for acl in acls:
        assert acl.principal == P and acl.host == "*" and acl.permission.value == "ALLOW"
        assert acl.why, f"{acl.describe()} carries no reason"
    assert len({a.binding for a in acls}) == len(acls)


def test_health_only_describes() -> None:
    assert {a.operation for a in required_acls(spec(), P, "health")} == {Operation.DESCRIBE}


def test_only_recovery_touches_the_cluster_beyond_reading_configs_and_says_what_alter_allows() -> None:
    for role in ("job", "health"):
        assert {a.operation for a in required_acls(spec(), P, role) if a.resource_type is ResourceType.CLUSTER} <= {
            Operation.DESCRIBE_CONFIGS}
    assert Operation.ALTER not in {a.operation for a in required_acls(spec(), P, "recovery")}
    (alter,) = [a for a in required_acls(spec(), P, "recovery", hanging_abort=True) if a.operation is Operation.ALTER]
    assert "WriteTxnMarkers" in alter.why and alter.caution and "ACLs" in alter.caution


def test_aborting_hanging_transactions_is_an_opt_in_of_recovery_only() -> None:
    base = rows(required_acls(spec(), P, "recovery"))
    extended = rows(required_acls(spec(), P, "recovery", hanging_abort=True))
    assert sorted(set(extended) - set(base)) == sorted(HANGING_ABORT) and set(base) <= set(extended)
    for role in ("job", "health"):
        with pytest.raises(AclError, match="hanging_abort is a right of the recovery role") as err:
            required_acls(spec(), P, role, hanging_abort=True)
        assert "--role recovery" in err.value.fix


def test_reading_the_brokers_configuration_is_an_opt_in_of_health_only() -> None:
    base = rows(required_acls(spec(), P, "health"))
    extended = required_acls(spec(), P, "health", broker_configs=True)
    assert rows(extended) == [("CLUSTER", "LITERAL", "kafka-cluster", "DESCRIBE_CONFIGS"), *base]
    assert "transaction.max.timeout.ms" in extended[0].why and "--broker-configs" in extended[0].why
    assert {a.operation for a in extended} == {Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS}
    # The job and recovery sets hold it already: the option is refused for them, never silently a no-op.
    for role in ("job", "recovery"):
        with pytest.raises(AclError, match=f"broker_configs is an option of the health role, not of '{role}'") as err:
            required_acls(spec(), P, role, broker_configs=True)
        assert "already holds DESCRIBE_CONFIGS on the cluster" in err.value.message
        assert err.value.fix == "pass --broker-configs only with --role health"


def test_the_dead_letter_topic_only_when_configured() -> None:
    for role in ("job", "recovery", "health"):
        names = {a.name for a in required_acls(spec(dlq_topic=None), P, role)}
        assert "orders-dlq" not in names and "orders-out" in names


def test_the_transactional_id_pattern_covers_every_id_of_the_scheme_and_no_other_prefix() -> None:
    (txn,) = [a for a in required_acls(spec(), P, "job") if a.resource_type is ResourceType.TRANSACTIONAL_ID]
    assert txn.pattern is PatternType.PREFIXED and txn.name == "orders-eos-"
    s = spec()
    for txn_id in (s.transactional_id(0), s.transactional_id(12), s.partition_transactional_id("refunds-in", 7)):
        assert txn_id.startswith(txn.name) and transactional_ids.belongs_to_prefix(s.transactional_id_prefix, txn_id)
    assert not "orders-eos2-0".startswith(txn.name)


def test_at_least_once_jobs_need_no_transactions_and_no_group_writes() -> None:
    acls = required_acls(spec(mode="at-least-once"), P, "job")
    by_type = {(a.resource_type, a.operation) for a in acls}
    assert (ResourceType.GROUP, Operation.DESCRIBE) in by_type and (ResourceType.GROUP, Operation.READ) not in by_type
    assert (ResourceType.TRANSACTIONAL_ID, Operation.DESCRIBE) in by_type
    assert (ResourceType.TRANSACTIONAL_ID, Operation.WRITE) not in by_type
    assert (ResourceType.TOPIC, Operation.WRITE) in by_type


@pytest.mark.parametrize("principal", ["orders-job", "user:orders-job", "User:", "Group:ops", "User: x", ""])
def test_a_principal_must_be_a_user_principal(principal: str) -> None:
    with pytest.raises(AclError) as err:
        required_acls(spec(), principal, "job")
    assert repr(principal) in err.value.message and "User:" in (err.value.fix or "")


def test_an_unknown_role_names_the_roles() -> None:
    with pytest.raises(AclError) as err:
        required_acls(spec(), P, "admin")
    assert "'admin'" in err.value.message and err.value.fix == "use one of: job, recovery, health"


def test_check_principal_returns_it() -> None:
    assert check_principal("User:a.b-c") == "User:a.b-c"


def test_the_wildcard_principal_is_refused() -> None:
    # Kafka's User:* is every principal: a role's set would go to every authenticated user.
    with pytest.raises(AclError, match="wildcard") as err:
        check_principal("User:*")
    assert "--principal User:" in (err.value.fix or "")
    with pytest.raises(AclError, match="wildcard"):
        required_acls(spec(), "User:*", "recovery")


@pytest.mark.parametrize(("kafka", "principal", "words"), [
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "job"}, "User:job",
     "SCRAM-SHA-512"),
    ({"security.protocol": "sasl_plaintext", "sasl.mechanisms": "PLAIN", "sasl.username": "j"}, "User:j", "PLAIN"),
    ({}, None, "not secured"),
    ({"security.protocol": "SSL"}, None, "distinguished name"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, None, "OAUTHBEARER"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256"}, None, "sasl.username is not set"),
])
def test_the_principal_of_the_kafka_settings(kafka: dict[str, str], principal: str | None, words: str) -> None:
    found, description = principal_of({"bootstrap.servers": "b:1", **kafka})
    assert found == principal and words in description


def test_only_plaintext_is_unsecured() -> None:
    assert not is_secured({"bootstrap.servers": "b:1"}) and not is_secured({"security.protocol": "plaintext"})
    assert is_secured({"security.protocol": "SSL"}) and is_secured({"security.protocol": "SASL_PLAINTEXT"})


def test_the_report_renders_the_table_the_cautions_and_the_apply() -> None:
    acls = tuple(required_acls(spec(), P, "recovery", hanging_abort=True))
    printed = acls_text(AclSetReport(pipeline="orders", principal=P, role="recovery", acls=acls))
    lines = printed.splitlines()
    assert lines[0].startswith("9 ACL(s) for User:orders-job as recovery of pipeline 'orders' (printed only")
    assert lines[2].split() == ["resource", "type", "pattern", "name", "operation", "why"]
    assert any(line.split()[:4] == ["TRANSACTIONAL_ID", "PREFIXED", "orders-eos-", "WRITE"] for line in lines)
    assert "Caution:" in printed and "CLUSTER kafka-cluster ALTER" in printed
    applied = AclSetReport(pipeline="orders", principal=P, role="recovery", acls=acls, applied=True,
                           created=acls[:2], already_present=acls[2:])
    text = acls_text(applied)
    assert "applied, 2 created, 7 already present" in text
    assert [line.split()[4] for line in text.splitlines()[4:13]] == ["created"] * 2 + ["present"] * 7
    assert AclSetReport.model_validate(applied.to_dict()) == applied
