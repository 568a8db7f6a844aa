"""EOS213-EOS215: what the brokers' Kafka version gives exactly-once (:mod:`airflow_provider_eos.core.broker_protocol`).

One rule per version-dependent ability the product relies on: the transaction admin requests
recovery and health call (KIP-664, Kafka 3.0), offsets committed with the group's metadata
(KIP-447, Kafka 2.5), and the broker-side defence against hanging transactions (KIP-890:
transactions v2, or partition verification on v1). Their messages name the transaction protocol
the cluster runs, as ``eos health`` shows it.
"""

from __future__ import annotations

from airflow_provider_eos.core.broker_protocol import ApiKey, missing_apis
from airflow_provider_eos.core.preflight.facts import PreflightFacts
from airflow_provider_eos.core.preflight.rule import Outcome, Severity, failed, passed, rule, unknown

__all__ = ["PARTITION_VERIFICATION"]

#: The v1 broker setting (Kafka 3.6, default true) that refuses a transactional write to a
#: partition the coordinator did not add, so a late write cannot open a hanging transaction.
PARTITION_VERIFICATION = "transaction.partition.verification.enable"
_BROKERS = "the brokers' request versions and feature levels"


@rule(
    "EOS213",
    Severity.ERROR,
    "transaction admin requests (KIP-664)",
    "upgrade the brokers to Kafka 3.0 or later: recovery and health list, describe and abort transactions with them",
)
def _transaction_admin(facts: PreflightFacts) -> Outcome:
    protocol = facts.broker_protocol
    if protocol is None:
        return unknown(facts, "broker_protocol", _BROKERS)
    missing = missing_apis(protocol)
    if missing:
        return failed(f"the brokers do not serve {', '.join(missing)}: recovery cannot find or abort lingering and "
                      f"hanging transactions ({protocol.describe()})")
    return passed(f"ListTransactions, DescribeTransactions, DescribeProducers, WriteTxnMarkers served; "
                  f"{protocol.describe()}")


@rule(
    "EOS214",
    Severity.ERROR,
    "offsets committed with the group's metadata (KIP-447)",
    "upgrade the brokers to Kafka 2.5 or later",
)
def _group_metadata_fencing(facts: PreflightFacts) -> Outcome:
    protocol = facts.broker_protocol
    if protocol is None:
        return unknown(facts, "broker_protocol", _BROKERS)
    served = protocol.api_versions.get(int(ApiKey.TXN_OFFSET_COMMIT))
    if not protocol.group_metadata_fencing:
        return failed(f"TxnOffsetCommit versions {served} lack the group's generation and member id: the batch's "
                      "offsets and marker cannot be committed in its transaction as the sink does")
    return passed(f"TxnOffsetCommit up to v{served[1] if served else '?'} carries the group's metadata")


@rule(
    "EOS215",
    Severity.WARNING,
    "brokers refuse writes that would leave a transaction hanging (KIP-890)",
    f"set {PARTITION_VERIFICATION}=true on the brokers (Kafka 3.6+), or finalize transaction.version=2 "
    "(Kafka 4.0+: `kafka-features.sh upgrade --feature transaction.version=2`)",
)
def _hanging_defence(facts: PreflightFacts) -> Outcome:
    protocol = facts.broker_protocol
    if protocol is None:
        return unknown(facts, "broker_protocol", _BROKERS)
    if protocol.transactions_v2:
        return passed(f"{protocol.describe()}: the coordinator verifies every partition a transaction writes")
    if facts.broker_configs is None:
        return unknown(facts, "broker_configs", f"{PARTITION_VERIFICATION} of the brokers")
    off = sorted(broker for broker, configs in facts.broker_configs.items()
                 if str(configs.get(PARTITION_VERIFICATION)).lower() != "true")
    if off:
        return failed(f"{protocol.describe()}, and broker(s) {off} run without {PARTITION_VERIFICATION}: a "
                      "delayed write can open a hanging transaction that pins the last stable offset (health "
                      "reports it; `eos abort --execute` ends it)")
    return passed(f"{protocol.describe()}, {PARTITION_VERIFICATION}=true on every broker")
