"""Each role's ACL set is the one Kafka's documented rules give for the requests its code sends: no more, no less.

The expected sets are derived from :mod:`tests.support.kafka_authorization` (Kafka's
request-to-operation table, written from Kafka's documentation) and
:mod:`tests.support.role_requests` (the requests each role's code sends), never from
:func:`required_acls`: a product table that drifted from Kafka fails here even where the
product's own checks (pre-flight EOS501, ``eos acls``) agree with it.
"""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_eos.core.acls import Acl, Operation, PatternType, ResourceType, required_acls
from tests.support.acl_specs import orders_spec as spec
from tests.support.kafka_authorization import Binding, derive, needed_by
from tests.support.role_requests import calls_of

P = "User:orders-app"


# (role, the role's opt-in or None, spec overrides): every shape a set takes.
CASES = [
    ("job", None, {}),
    ("job", None, {"dlq_topic": None}),
    ("job", None, {"mode": "at-least-once"}),
    ("job", None, {"mode": "at-least-once", "dlq_topic": None}),
    ("recovery", None, {}),
    ("recovery", None, {"dlq_topic": None}),
    ("recovery", "hanging_abort", {}),
    ("health", None, {}),
    ("health", None, {"dlq_topic": None}),
    ("health", "broker_configs", {}),
]


def _id(case: tuple[str, str | None, dict[str, Any]]) -> str:
    role, opt_in, overrides = case
    return "-".join([role, *([opt_in.replace("_", "-")] if opt_in else []),
                     *(f"{k}={v}" for k, v in overrides.items())])


def _options(opt_in: str | None) -> dict[str, bool]:
    return {opt_in: True} if opt_in else {}


def binding(acl: Acl) -> Binding:
    return Binding(acl.resource_type.value, acl.name, acl.pattern.value, acl.operation.value)


def product_set(case: tuple[str, str | None, dict[str, Any]]) -> list[Acl]:
    role, opt_in, overrides = case
    return required_acls(spec(**overrides), P, role, **_options(opt_in))


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_each_roles_set_is_what_kafkas_table_gives_for_the_requests_its_code_sends(case) -> None:
    role, opt_in, overrides = case
    expected = derive(calls_of(spec(**overrides), role, **_options(opt_in)))
    actual = [binding(a) for a in product_set(case)]
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    assert not missing and not extra, (
        f"{role}: missing (a request of the role would be refused): {[str(b) for b in missing]}; "
        f"extra (no request of the role needs it): {[str(b) for b in extra]}")
    assert len(actual) == len(set(actual)), f"{role}: an ACL is listed twice"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_no_acl_is_broader_than_a_request_of_the_role_needs(case) -> None:
    role, opt_in, overrides = case
    s = spec(**overrides)
    calls = calls_of(s, role, **_options(opt_in))
    acls = product_set(case)
    for acl in acls:
        needs = needed_by(calls, binding(acl))
        # Exactly this operation on this resource: READ where every request needs only DESCRIBE has none.
        assert needs, f"{role}: {acl.describe()} is needed by no request of the role (a narrower one would do)"
        assert acl.operation is not Operation.ALL, acl.describe()
        if acl.pattern is PatternType.PREFIXED:
            # Only the transactional ids are an open set; topics and the group are named exactly.
            assert acl.resource_type is ResourceType.TRANSACTIONAL_ID, acl.describe()
            assert acl.name == f"{s.transactional_id_prefix}-", acl.describe()
        if acl.name == "*":
            # The one wildcard: recovery's opt-in to tell another application's hanging transaction from ours.
            assert (role, opt_in, acl.resource_type, acl.operation) == (
                "recovery", "hanging_abort", ResourceType.TRANSACTIONAL_ID, Operation.DESCRIBE), acl.describe()
        # Its printed reason names a request that needs it (`eos acls` shows it to the administrator).
        requests = {need.split(" (")[0].split("(")[0] for need in needs}
        assert any(r in acl.why for r in requests), f"{acl.describe()}: {acl.why!r} names none of {requests}"
    # No ACL next to one that implies it (DESCRIBE beside READ on the same resource).
    for acl in acls:
        if acl.operation is Operation.DESCRIBE:
            assert not any(o.operation in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER)
                           and (o.resource_type, o.name, o.pattern) == (acl.resource_type, acl.name, acl.pattern)
                           for o in acls), f"{acl.describe()} is implied by another ACL of the set"


def test_the_derivation_tells_a_narrower_or_missing_acl() -> None:
    """The reference itself: what it derives for a few requests, as Kafka's table has them."""
    from tests.support.kafka_authorization import Call, Resource

    topic, group = (Resource("t"),), (Resource("g"),)
    ids = (Resource("p-", "PREFIXED"),)
    assert derive([Call("OffsetFetch", {"GROUP": group, "TOPIC": topic}),
                   Call("OffsetCommit", {"GROUP": group, "TOPIC": topic})]) == [
        Binding("GROUP", "g", "LITERAL", "READ"), Binding("TOPIC", "t", "LITERAL", "READ")]
    assert derive([Call("TxnOffsetCommit", {"TRANSACTIONAL_ID": ids, "GROUP": group, "TOPIC": topic})]) == [
        Binding("TRANSACTIONAL_ID", "p-", "PREFIXED", "WRITE"), Binding("GROUP", "g", "LITERAL", "READ"),
        Binding("TOPIC", "t", "LITERAL", "READ")]
    # An idempotent producer's InitProducerId: WRITE on a topic it produces to suffices, else IDEMPOTENT_WRITE.
    assert derive([Call("InitProducerId(idempotent)"), Call("Produce", {"TOPIC": topic})]) == [
        Binding("TOPIC", "t", "LITERAL", "WRITE")]
    assert derive([Call("InitProducerId(idempotent)")]) == [
        Binding("CLUSTER", "kafka-cluster", "LITERAL", "IDEMPOTENT_WRITE")]
    with pytest.raises(AssertionError, match="names none"):
        derive([Call("AddOffsetsToTxn", {"TRANSACTIONAL_ID": ids})])
    with pytest.raises(AssertionError, match="does not check"):
        derive([Call("Fetch", {"TOPIC": topic, "GROUP": group})])
