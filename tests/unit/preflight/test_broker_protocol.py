"""EOS213-EOS215: what the brokers' Kafka version gives exactly-once; pass on good facts, fail naming the values."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.broker_protocol import BrokerProtocol
from tests.unit.preflight.builders import (
    PROTOCOL_V1,
    PROTOCOL_V2,
    Case,
    Mutation,
    assert_fails,
    assert_passes,
    broker,
    case_id,
    facts_,
)

VERIFICATION = "transaction.partition.verification.enable"


def announced(protocol: BrokerProtocol, *, without: tuple[int, ...] = (), **versions: tuple[int, int]) -> Mutation:
    """``protocol`` without the API keys ``without`` and with ``versions`` (``k28=(0, 2)``) changed."""
    apis = {k: v for k, v in protocol.api_versions.items() if k not in without}
    apis |= {int(key[1:]): value for key, value in versions.items()}
    return facts_(broker_protocol=protocol.model_copy(update={"api_versions": apis}))


def v1_with(verification: str | None) -> Mutation:
    set_verification = broker(VERIFICATION, verification)
    return lambda facts: set_verification(facts_(broker_protocol=PROTOCOL_V1)(facts))


PASSES: list[Case] = [
    ("EOS213", lambda f: f, ["ListTransactions", "transactions v2", "transaction.version=2"]),
    ("EOS213", facts_(broker_protocol=PROTOCOL_V1), ["transactions v1", "metadata.version=21"]),
    ("EOS214", lambda f: f, ["TxnOffsetCommit up to v6"]),
    ("EOS214", facts_(broker_protocol=PROTOCOL_V1), ["TxnOffsetCommit up to v4"]),
    ("EOS215", lambda f: f, ["transactions v2", "verifies every partition"]),
    # Kafka 3.6-3.9: v1, with partition verification on (its default).
    ("EOS215", v1_with("true"), ["transactions v1", f"{VERIFICATION}=true on every broker"]),
]

FAILS: list[Case] = [
    # A broker before Kafka 3.0: no KIP-664 requests.
    ("EOS213", announced(PROTOCOL_V1, without=(61, 65, 66)),
     ["DESCRIBE_PRODUCERS", "DESCRIBE_TRANSACTIONS", "LIST_TRANSACTIONS", "recovery cannot find"]),
    # A broker before Kafka 2.5: TxnOffsetCommit without the group's metadata.
    ("EOS214", announced(PROTOCOL_V1, k28=(0, 2)), ["(0, 2)", "generation and member id"]),
    ("EOS215", v1_with("false"), ["transactions v1", "[1, 2, 3]", VERIFICATION, "hanging transaction"]),
    # Before Kafka 3.6 the brokers do not know the setting at all.
    ("EOS215", v1_with(None), ["[1, 2, 3]", VERIFICATION]),
]


@pytest.mark.parametrize("case", PASSES, ids=case_id)
def test_passes(case: Case) -> None:
    assert_passes(case)


@pytest.mark.parametrize("case", FAILS, ids=case_id)
def test_fails(case: Case) -> None:
    assert_fails(case)


def test_a_v1_cluster_whose_brokers_support_v2_says_so() -> None:
    upgradable = PROTOCOL_V2.model_copy(update={"finalized_features": {"metadata.version": 33}})
    assert not upgradable.transactions_v2 and upgradable.transactions_v2_supported
    assert upgradable.describe() == ("transactions v1 (the brokers support v2; the cluster has not finalized it) "
                                     "(metadata.version=33)")
    assert PROTOCOL_V2.describe() == "transactions v2 (metadata.version=33, transaction.version=2)"
