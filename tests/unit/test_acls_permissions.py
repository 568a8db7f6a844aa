"""Matching a principal's bindings against a required ACL the way Kafka's authorizer does, and the probe id."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core import transactional_ids
from airflow_provider_eos.core.acls import Acl, Operation, PatternType, Permission, ResourceType, covers
from airflow_provider_eos.kafka.acl_probes import probe_transactional_id

WHO = "User:job"


def acl(resource_type: ResourceType, name: str, operation: Operation, *, pattern: PatternType = PatternType.LITERAL,
        principal: str = WHO, permission: Permission = Permission.ALLOW, host: str = "*") -> Acl:
    return Acl(principal=principal, resource_type=resource_type, name=name, pattern=pattern, operation=operation,
               permission=permission, host=host)


TOPIC_DESCRIBE = acl(ResourceType.TOPIC, "orders", Operation.DESCRIBE)
TXN_WRITE = acl(ResourceType.TRANSACTIONAL_ID, "orders-eos-", Operation.WRITE, pattern=PatternType.PREFIXED)


@pytest.mark.parametrize(("bindings", "required", "expected"), [
    ([acl(ResourceType.TOPIC, "orders", Operation.READ)], TOPIC_DESCRIBE, True),  # READ implies DESCRIBE
    ([acl(ResourceType.TOPIC, "orders", Operation.DESCRIBE)], acl(ResourceType.TOPIC, "orders", Operation.READ),
     False),  # ... not the other way round
    ([acl(ResourceType.TOPIC, "orders", Operation.ALTER_CONFIGS)],
     acl(ResourceType.TOPIC, "orders", Operation.DESCRIBE_CONFIGS), True),
    ([acl(ResourceType.TOPIC, "*", Operation.ALL, principal="User:*")], TOPIC_DESCRIBE, True),
    ([acl(ResourceType.TOPIC, "ord", Operation.READ, pattern=PatternType.PREFIXED)], TOPIC_DESCRIBE, True),
    ([acl(ResourceType.TOPIC, "orders", Operation.READ, principal="User:other")], TOPIC_DESCRIBE, False),
    ([acl(ResourceType.TOPIC, "orders", Operation.READ, host="10.0.0.7")], TOPIC_DESCRIBE, False),
    ([acl(ResourceType.GROUP, "orders", Operation.READ)], TOPIC_DESCRIBE, False),
    ([acl(ResourceType.TRANSACTIONAL_ID, "orders-", Operation.WRITE, pattern=PatternType.PREFIXED)], TXN_WRITE, True),
    ([acl(ResourceType.TRANSACTIONAL_ID, "orders-eos-0", Operation.WRITE)], TXN_WRITE, False),
    ([acl(ResourceType.TRANSACTIONAL_ID, "*", Operation.WRITE)], TXN_WRITE, True),
    ([acl(ResourceType.TRANSACTIONAL_ID, "*", Operation.WRITE),
      acl(ResourceType.TRANSACTIONAL_ID, "orders-eos-7", Operation.WRITE, permission=Permission.DENY)],
     TXN_WRITE, False),  # a DENY on one id under the prefix refuses part of it
    ([acl(ResourceType.TOPIC, "orders", Operation.READ),
      acl(ResourceType.TOPIC, "*", Operation.ALL, principal="User:*", permission=Permission.DENY)],
     acl(ResourceType.TOPIC, "orders", Operation.READ), False),
])
def test_covers_follows_kafkas_matching(bindings: list[Acl], required: Acl, expected: bool) -> None:
    assert covers(bindings, required) is expected


def test_the_probe_id_is_under_the_pattern_and_never_a_writers_id() -> None:
    assert probe_transactional_id(TXN_WRITE) == "orders-eos-eos-acl-probe"
    # Recovery never claims (fences, aborts) it: it is not an id the scheme builds.
    assert not transactional_ids.belongs_to_prefix("orders-eos", probe_transactional_id(TXN_WRITE))
    assert probe_transactional_id(acl(ResourceType.TRANSACTIONAL_ID, "*", Operation.DESCRIBE)) == "eos-acl-probe"
    assert probe_transactional_id(acl(ResourceType.TRANSACTIONAL_ID, "x-0", Operation.WRITE)) == "x-0"
