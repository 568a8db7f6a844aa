"""Pre-flight's description of the sink group (state, live members) over kafka-python's DescribeGroups.

It replaced librdkafka's DescribeConsumerGroups, a coordinator request that aborts the whole process when its
connection is lost (librdkafka 2.16, confluentinc/librdkafka#4605; design note 87). The answers must read as
before: librdkafka's state names, the members as people read them, a loading coordinator waited for, a refusal
as the missing ACL, no answer as :class:`KafkaNoAnswerError`. Against the real broker:
tests/integration/test_preflight_live.py (a live member fires EOS401 naming it and the state).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
from kafka.errors import GroupAuthorizationFailedError, RequestTimedOutError
from kafka.protocol.admin import DescribeGroupsResponse

from airflow_provider_eos.core.errors import AclMissingError, KafkaNoAnswerError, RetryExhaustedError
from airflow_provider_eos.kafka import acl_probes, cluster_facts
from airflow_provider_eos.kafka.fact_gaps import FactGaps
from airflow_provider_eos.kafka.group_description import (
    GroupDescriptionError,
    describe_group,
    group_authorized_operations,
)
from tests.support.offset_fetch_admin import BROKERS, OffsetFetchAdmin
from tests.support.silent_admin import silent_spec

Group = DescribeGroupsResponse.DescribedGroup
Member = Group.DescribedGroupMember
LOADING, NOT_COORDINATOR, GROUP_REFUSED, INVALID_GROUP = 14, 16, 30, 24


def _answer(state: str = "Empty", members: tuple[tuple[str, str, str], ...] = (), error_code: int = 0,
            operations: set[int] | None = None) -> Any:
    """A DescribeGroups answer for ``orders-eos``: ``(member id, client id, host)`` per member; ``operations`` the
    caller's authorized operations as kafka-python decodes the broker's bit field (its bits; ``None``: not listed)."""
    described = [Member(member_id=m, group_instance_id=None, client_id=c, client_host=h, member_metadata=b"",
                        member_assignment=b"") for m, c, h in members]
    group = Group(error_code=error_code, error_message=None, group_id="orders-eos", group_state=state,
                  protocol_type="consumer", protocol_data="range", members=described,
                  authorized_operations=operations)
    response = DescribeGroupsResponse(throttle_time_ms=0, groups=[group], version=5)
    # Through the wire and back: what kafka-python hands the reader (the bit field decoded into its bits).
    return DescribeGroupsResponse.decode(io.BytesIO(response.encode()), version=5)


def _describe(admin: OffsetFetchAdmin, timeout_s: float = 5) -> tuple[str, tuple[str, ...]]:
    return describe_group(admin, "orders-eos", timeout_s=timeout_s)  # type: ignore[arg-type]


@pytest.mark.parametrize(("wire", "named"), [
    ("Stable", "STABLE"), ("Empty", "EMPTY"), ("Dead", "DEAD"),
    ("PreparingRebalance", "PREPARING_REBALANCE"), ("CompletingRebalance", "COMPLETING_REBALANCE"),
])
def test_the_state_reads_as_librdkafka_named_it(wire: str, named: str) -> None:
    assert _describe(OffsetFetchAdmin(_answer(wire)))[0] == named


def test_members_are_described_for_people_and_the_request_goes_to_the_coordinator() -> None:
    admin = OffsetFetchAdmin(_answer("Stable", (("m-1", "probe", "/10.0.0.7"), ("m-2", "other", "/10.0.0.8"))))
    assert _describe(admin) == ("STABLE", ("probe on 10.0.0.7 (member m-1)", "other on 10.0.0.8 (member m-2)"))
    [(request, node)] = admin.sent
    assert request.groups == ["orders-eos"] and node == 1


def test_a_loading_or_moved_coordinator_is_asked_again() -> None:
    admin = OffsetFetchAdmin(_answer(error_code=LOADING), _answer(error_code=NOT_COORDINATOR), _answer("Empty"))
    assert _describe(admin) == ("EMPTY", ())
    assert len(admin.sent) == 3 and admin.lookups == 3, "a coordinator not ready must be looked up again"


def test_a_coordinator_still_loading_after_the_timeout_says_what_it_waited_for() -> None:
    with pytest.raises(RetryExhaustedError, match="the group coordinator to load the group"):
        _describe(OffsetFetchAdmin(_answer(error_code=LOADING)), timeout_s=0.3)


@pytest.mark.parametrize("script", [_answer(error_code=GROUP_REFUSED), GroupAuthorizationFailedError()])
def test_a_refusal_is_the_missing_acl(script: Any) -> None:
    with pytest.raises(AclMissingError) as raised:
        _describe(OffsetFetchAdmin(script))
    assert raised.value.request == "DescribeGroups" and raised.value.resource_type == "GROUP", raised.value
    assert raised.value.resource_names == ("orders-eos",), raised.value


def test_a_request_timeout_is_the_no_answer_error() -> None:
    with pytest.raises(KafkaNoAnswerError) as raised:
        _describe(OffsetFetchAdmin(RequestTimedOutError()))
    assert raised.value.retryable
    assert raised.value.message.startswith(
        f"DescribeGroups('orders-eos'): no answer from the Kafka broker(s) at {BROKERS}"), raised.value.message


def test_another_group_error_names_it() -> None:
    with pytest.raises(GroupDescriptionError, match=r"DescribeGroups\('orders-eos'\) failed: InvalidGroupIdError"):
        _describe(OffsetFetchAdmin(_answer(error_code=INVALID_GROUP)))


def test_preflight_describes_the_group_over_kafka_python_and_records_a_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = OffsetFetchAdmin(RequestTimedOutError())
    monkeypatch.setattr(cluster_facts, "admin_client", lambda spec, **kw: contextlib.nullcontext(admin))
    gatherer = object.__new__(cluster_facts._Gatherer)
    gatherer.spec, gatherer.timeout_s, gatherer.gaps = silent_spec(tmp_path), 1, FactGaps()
    assert gatherer.group() == (None, None)
    assert gatherer.gaps.unavailable["group"].startswith(
        f"DescribeGroups('orders-eos'): no answer from the Kafka broker(s) at {BROKERS}")
    assert admin.sent, "pre-flight's description went elsewhere"


# -- the principal's operations on the group (a secured pre-flight's permission probe) --------------------------

READ, DESCRIBE = 3, 8  # Kafka's ACL operation codes: the bit each takes in the answer's field


def test_the_operations_are_read_from_the_brokers_bit_field_and_asked_for() -> None:
    admin = OffsetFetchAdmin(_answer("Dead", operations={READ, DESCRIBE}))
    assert group_authorized_operations(admin, "orders-eos", timeout_s=5) == {"READ", "DESCRIBE"}  # type: ignore[arg-type]
    [(request, _)] = admin.sent
    assert request.include_authorized_operations


def test_an_answer_that_lists_no_operations_is_none_not_nothing_granted() -> None:
    assert group_authorized_operations(OffsetFetchAdmin(_answer()), "orders-eos", timeout_s=5) is None  # type: ignore[arg-type]


def _probe(admin: OffsetFetchAdmin, monkeypatch: pytest.MonkeyPatch) -> tuple[set[str] | None, str]:
    monkeypatch.setattr("airflow_provider_eos.kafka.transactions_admin.admin_client",
                        lambda config, **kw: contextlib.nullcontext(admin))
    prober = object.__new__(acl_probes._Prober)
    prober.librdkafka, prober.timeout_s = {"bootstrap.servers": BROKERS}, 5
    return prober._group_operations("orders-eos")


def test_the_permission_probe_describes_the_group_over_kafka_python(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = OffsetFetchAdmin(_answer("Dead", operations={READ}))
    assert _probe(admin, monkeypatch) == ({"READ"}, "DescribeGroups(orders-eos) authorized operations: READ")
    assert admin.sent, "the probe went elsewhere"


def test_a_refused_description_is_evidence_of_the_missing_acl(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _probe(OffsetFetchAdmin(GroupAuthorizationFailedError()), monkeypatch) == (
        None, "DescribeGroups(orders-eos): GROUP_AUTHORIZATION_FAILED")
