"""What a Kafka cluster's brokers can do for exactly-once, read from what they announce.

A broker announces the request versions it serves (ApiVersions) and the cluster's finalized
feature levels (KIP-584: ``metadata.version``, ``transaction.version`` ...). The product relies on
three version-dependent abilities, each a small named predicate here; pre-flight turns them into
findings (EOS213-EOS215) and ``eos health`` shows the transaction protocol the cluster runs.

- **KIP-664** (Kafka 3.0): ListTransactions, DescribeTransactions and DescribeProducers, which
  recovery and health use to find lingering and hanging transactions (and AbortTransaction's
  markers, written through WriteTxnMarkers, to end a hanging one).
- **KIP-447** (Kafka 2.5): TxnOffsetCommit with the consumer group's metadata, the request that
  commits a batch's offsets and marker inside its transaction.
- **Transactions v2** (KIP-890 part 2, ``transaction.version`` 2, finalized by default from Kafka
  4.0): every commit and abort bumps the producer epoch, and an epoch at its limit rolls over into
  a new producer id. The product fences by ``init_transactions`` on a known transactional id and
  reads markers from the group's offsets, never by producer id or epoch, so it runs on v1 and v2
  alike; what v2 adds is the broker-side defence against hanging transactions, which v1 brokers
  get from ``transaction.partition.verification.enable`` (KIP-890 part 1, Kafka 3.6).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum

from airflow_provider_eos.core.frozen_model import FrozenModel

__all__ = ["RELIED_ON_APIS", "ApiKey", "BrokerProtocol", "missing_apis"]


class ApiKey(IntEnum):
    """The Kafka requests the product's exactly-once depends on (their protocol API keys)."""

    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66


#: TxnOffsetCommit from this version carries the group's generation and member id (KIP-447).
GROUP_METADATA_TXN_OFFSET_COMMIT = 3
#: ``transaction.version`` from which the coordinator bumps the epoch on every commit and abort.
TRANSACTIONS_V2 = 2
TRANSACTION_VERSION = "transaction.version"
METADATA_VERSION = "metadata.version"

#: What recovery and health call to see and end transactions (KIP-664).
TRANSACTION_ADMIN_APIS = (ApiKey.LIST_TRANSACTIONS, ApiKey.DESCRIBE_TRANSACTIONS, ApiKey.DESCRIBE_PRODUCERS,
                          ApiKey.WRITE_TXN_MARKERS)
#: Every request whose version the rules read: what a :class:`BrokerProtocol` keeps of ApiVersions.
RELIED_ON_APIS = (*TRANSACTION_ADMIN_APIS, ApiKey.TXN_OFFSET_COMMIT)


class BrokerProtocol(FrozenModel):
    """What one broker of the cluster announced.

    :param api_versions: per API key the versions it serves, ``(min, max)`` (of :data:`RELIED_ON_APIS`).
    :param finalized_features: the cluster's finalized feature levels (feature -> max level);
        a feature the cluster has not finalized is absent (level 0).
    :param supported_features: the feature levels the broker could run (feature -> ``(min, max)``).
    """

    api_versions: Mapping[int, tuple[int, int]]
    finalized_features: Mapping[str, int] = {}
    supported_features: Mapping[str, tuple[int, int]] = {}

    @property
    def transaction_version(self) -> int:
        """The finalized ``transaction.version``: 0 or 1 run transactions v1, 2 runs v2."""
        return self.finalized_features.get(TRANSACTION_VERSION, 0)

    @property
    def transactions_v2(self) -> bool:
        """Whether every commit and abort bumps the producer epoch (KIP-890 part 2)."""
        return self.transaction_version >= TRANSACTIONS_V2

    @property
    def transactions_v2_supported(self) -> bool:
        """Whether the broker could run transactions v2 once the cluster finalizes it."""
        return self.supported_features.get(TRANSACTION_VERSION, (0, 0))[1] >= TRANSACTIONS_V2

    def serves(self, api: ApiKey, min_version: int = 0) -> bool:
        """Whether the broker serves ``api`` at ``min_version`` or later."""
        versions = self.api_versions.get(int(api))
        return versions is not None and versions[1] >= min_version

    @property
    def group_metadata_fencing(self) -> bool:
        """KIP-447: the transaction's offsets carry the group's metadata."""
        return self.serves(ApiKey.TXN_OFFSET_COMMIT, GROUP_METADATA_TXN_OFFSET_COMMIT)

    def describe(self) -> str:
        """One line for people: the transaction protocol and the metadata version."""
        protocol = "transactions v2" if self.transactions_v2 else "transactions v1"
        levels = ", ".join(f"{name}={level}" for name, level in sorted(self.finalized_features.items())
                           if name in (TRANSACTION_VERSION, METADATA_VERSION))
        if not self.transactions_v2 and self.transactions_v2_supported:
            protocol += " (the brokers support v2; the cluster has not finalized it)"
        return f"{protocol} ({levels or 'no feature levels finalized'})"


def missing_apis(protocol: BrokerProtocol) -> list[str]:
    """The KIP-664 transaction admin requests the broker does not serve, by name."""
    return [api.name for api in TRANSACTION_ADMIN_APIS if not protocol.serves(api)]
