"""EOS5xx: the job principal's ACLs, from its bindings or from probes, pass on good facts and fail naming the ACL."""

from __future__ import annotations

import dataclasses

import pytest

from airflow_provider_eos.core.acls import (
    INTERNAL_TOPICS,
    Acl,
    CheckMethod,
    Operation,
    PatternType,
    Permission,
    PermissionFacts,
    ProbeResult,
    ResourceType,
    required_acls,
)
from airflow_provider_eos.core.preflight import PreflightFacts, Status, evaluate
from tests.unit.preflight.builders import (
    JOB_PRINCIPAL,
    Case,
    Mutation,
    assert_fails,
    assert_passes,
    case_id,
    good_facts,
    good_spec,
    unchanged,
)


def _job_set() -> list[Acl]:
    return required_acls(good_spec(), JOB_PRINCIPAL, "job")


def bindings_without(resource_type: ResourceType, operation: Operation) -> Mutation:
    """The principal's bindings lack the job ACL of that resource type and operation."""

    def apply(facts: PreflightFacts) -> PreflightFacts:
        kept = tuple(a for a in _job_set() if (a.resource_type, a.operation) != (resource_type, operation))
        assert len(kept) == len(_job_set()) - 1
        return dataclasses.replace(facts, permissions=PermissionFacts(
            principal=JOB_PRINCIPAL, method=CheckMethod.DESCRIBE_ACLS, bindings=kept))

    return apply


def with_bindings(*bindings: Acl, probes: tuple[ProbeResult, ...] = ()) -> Mutation:
    return lambda facts: dataclasses.replace(facts, permissions=PermissionFacts(
        principal=JOB_PRINCIPAL, method=CheckMethod.DESCRIBE_ACLS, bindings=bindings, probes=probes))


def probed(refused: set[tuple[ResourceType, Operation]] = frozenset(),
           unknown: set[tuple[ResourceType, Operation]] = frozenset()) -> Mutation:
    """The principal may not DescribeAcls: every job ACL probed, allowed unless listed."""

    def result(acl: Acl) -> ProbeResult:
        key = (acl.resource_type, acl.operation)
        if key in refused:
            return ProbeResult(acl=acl, allowed=False, evidence=f"{acl.resource_type.value}_AUTHORIZATION_FAILED")
        if key in unknown:
            return ProbeResult(acl=acl, allowed=None, evidence="UNKNOWN_TOPIC_OR_PART")
        return ProbeResult(acl=acl, allowed=True, evidence="authorized operations list it")

    return lambda facts: dataclasses.replace(facts, permissions=PermissionFacts(
        principal=JOB_PRINCIPAL, method=CheckMethod.PROBE, probes=tuple(result(a) for a in _job_set())))


def _wildcard(principal: str, resource_type: ResourceType, operation: Operation, *,
              permission: Permission = Permission.ALLOW, name: str = "*",
              pattern: PatternType = PatternType.LITERAL) -> Acl:
    return Acl(principal=principal, resource_type=resource_type, name=name, pattern=pattern, operation=operation,
               permission=permission)


EVERYTHING = tuple(_wildcard(JOB_PRINCIPAL, t, Operation.ALL) for t in ResourceType)

PASSES: list[Case] = [
    *unchanged("EOS5"),
    ("EOS501", probed(), ["User:orders-job", "probing", "DescribeAcls"]),
    ("EOS501", with_bindings(*EVERYTHING), ["describing"]),
    # User:* bindings and prefixes that cover the required names count too.
    ("EOS501", with_bindings(*(_wildcard("User:*", t, Operation.ALL, name="orders", pattern=PatternType.PREFIXED)
                               for t in ResourceType if t is not ResourceType.CLUSTER),
                             _wildcard("User:*", ResourceType.CLUSTER, Operation.ALTER_CONFIGS,
                                       name="kafka-cluster"),
                             # The internal topics, named literally: what EOS201 and EOS204 read of them.
                             *(_wildcard("User:*", ResourceType.TOPIC, operation, name=topic)
                               for topic in INTERNAL_TOPICS
                               for operation in (Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS))), []),
    # A super user has no ACLs: the probes confirm what the ACLs do not show.
    ("EOS501", with_bindings(probes=tuple(ProbeResult(acl=a, allowed=True, evidence="ok") for a in _job_set())), []),
    ("EOS501", probed(unknown={(ResourceType.TOPIC, Operation.WRITE)}), ["could not be verified (EOS502)"]),
    ("EOS501", lambda f: dataclasses.replace(f, permissions=PermissionFacts(
        principal=JOB_PRINCIPAL, method=CheckMethod.NO_AUTHORIZER)), ["no authorizer"]),
    ("EOS502", with_bindings(), ["confirmed or refuted"]),
]

FAILS: list[Case] = [
    ("EOS501", bindings_without(ResourceType.GROUP, Operation.READ),
     ["User:orders-job", "GROUP 'orders-sink' (LITERAL) READ", "describing the principal's ACLs"]),
    ("EOS501", bindings_without(ResourceType.TRANSACTIONAL_ID, Operation.WRITE),
     ["TRANSACTIONAL_ID 'orders-eos-' (PREFIXED) WRITE"]),
    ("EOS501", bindings_without(ResourceType.CLUSTER, Operation.DESCRIBE_CONFIGS),
     ["CLUSTER 'kafka-cluster' (LITERAL) DESCRIBE_CONFIGS"]),
    ("EOS501", probed(refused={(ResourceType.TOPIC, Operation.WRITE)}),
     ["2 ACL(s)", "TOPIC 'orders-out' (LITERAL) WRITE", "TOPIC 'orders-dlq' (LITERAL) WRITE",
      "TOPIC_AUTHORIZATION_FAILED", "probing authorized operations"]),
    # A DENY wins over the ALLOW that would cover it.
    ("EOS501", with_bindings(*EVERYTHING, _wildcard(JOB_PRINCIPAL, ResourceType.TOPIC, Operation.READ,
                                                     permission=Permission.DENY, name="orders-in")),
     ["TOPIC 'orders-in' (LITERAL) READ"]),
    # A literal id is not the prefix; a prefix of another pipeline does not cover this one's.
    ("EOS501", with_bindings(*(a for a in _job_set() if a.resource_type is not ResourceType.TRANSACTIONAL_ID),
                             _wildcard(JOB_PRINCIPAL, ResourceType.TRANSACTIONAL_ID, Operation.WRITE,
                                       name="orders-eos-0"),
                             _wildcard(JOB_PRINCIPAL, ResourceType.TRANSACTIONAL_ID, Operation.WRITE,
                                       name="orders-eos2", pattern=PatternType.PREFIXED)),
     ["TRANSACTIONAL_ID 'orders-eos-' (PREFIXED) WRITE"]),
    ("EOS502", probed(unknown={(ResourceType.TOPIC, Operation.WRITE)}), ["orders-out", "UNKNOWN_TOPIC_OR_PART"]),
]


@pytest.mark.parametrize("case", PASSES, ids=case_id)
def test_passes(case: Case) -> None:
    assert_passes(case)


@pytest.mark.parametrize("case", FAILS, ids=case_id)
def test_fails(case: Case) -> None:
    assert_fails(case)


def test_the_fix_is_the_apply_command_for_the_principal() -> None:
    finding = evaluate(bindings_without(ResourceType.GROUP, Operation.READ)(good_facts())).finding("EOS501")
    assert finding.fix is not None
    assert "eos acls --spec FILE --principal User:orders-job --role job --apply --admin-config" in finding.fix


def test_an_unsecured_cluster_has_nothing_to_check() -> None:
    facts = dataclasses.replace(good_facts(), permissions=PermissionFacts(
        principal=None, secured=False, note="security.protocol is PLAINTEXT: the cluster is not secured"))
    report = evaluate(facts)
    for code in ("EOS501", "EOS502"):
        finding = report.finding(code)
        assert finding.status is Status.PASS and finding.fix is None
        assert finding.message == "nothing to check: security.protocol is PLAINTEXT: the cluster is not secured"


def test_a_principal_that_cannot_be_named_skips_the_rules_with_the_reason() -> None:
    facts = dataclasses.replace(good_facts(), permissions=PermissionFacts(
        principal=None, note="security.protocol is SSL: the principal is the client certificate's distinguished name"))
    report = evaluate(facts)
    for code in ("EOS501", "EOS502"):
        finding = report.finding(code)
        assert finding.status is Status.NOT_CHECKED
        assert finding.message.startswith("not checked: security.protocol is SSL")
    assert report.ok


def test_unread_permissions_name_the_reason() -> None:
    facts = dataclasses.replace(good_facts(), permissions=None,
                                unavailable={"permissions": "_TRANSPORT: connection refused"})
    finding = evaluate(facts).finding("EOS501")
    assert finding.status is Status.NOT_CHECKED and "_TRANSPORT: connection refused" in finding.message
