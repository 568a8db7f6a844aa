"""Read what the cluster's brokers announce (:class:`~airflow_provider_eos.core.broker_protocol.BrokerProtocol`).

kafka-python, as for the transaction admin calls: confluent-kafka exposes neither the broker's
ApiVersions nor DescribeFeatures. DescribeFeatures needs no ACL (any authenticated client may
send it), so the health and pre-flight principals read it as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.broker_protocol import RELIED_ON_APIS, BrokerProtocol
from airflow_provider_eos.kafka.transactions_admin import admin_call, admin_client

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

__all__ = ["describe_protocol", "read_broker_protocol"]


def read_broker_protocol(admin: KafkaAdminClient) -> BrokerProtocol:
    """The request versions and feature levels of the broker ``admin`` talks to.

    :raises TransactionsAdminError: if DescribeFeatures fails.
    """
    features = admin_call("DescribeFeatures", admin.describe_features)
    # kafka-python gives {name: {"supported": (min, max), "finalized": (min, max), ...}}.
    finalized = {name: levels["finalized"][1] for name, levels in features.items() if "finalized" in levels}
    supported = {name: tuple(levels["supported"]) for name, levels in features.items() if "supported" in levels}
    # Not admin.api_versions(): it maps every key to kafka-python's ApiKey enum and fails on a key newer
    # than the library (Kafka 4.4 serves API 93). The version data keeps the broker's raw keys.
    broker = admin_call("DescribeCluster", admin.describe_cluster)["brokers"][0]["broker_id"]
    announced = admin_call("ApiVersions", admin.get_broker_version_data, broker).api_versions
    # Only what the rules read: health samples carry it in XCom and trigger state.
    api_versions = {int(key): (int(low), int(high)) for key, (low, high) in announced.items()
                    if int(key) in RELIED_ON_APIS}
    return BrokerProtocol(api_versions=api_versions, finalized_features=finalized, supported_features=supported)


def describe_protocol(config: Mapping[str, Any]) -> str:
    """:meth:`BrokerProtocol.describe` of the cluster ``config`` (librdkafka settings) reaches: the line
    the compatibility matrix and the bench's and soak's reports show for the brokers they ran on.

    :raises TransactionsAdminError: if no broker can be reached or DescribeFeatures fails.
    """
    with admin_client(config) as admin:
        return read_broker_protocol(admin).describe()
