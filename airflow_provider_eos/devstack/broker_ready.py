"""When the devstack's brokers are up: listening, registered in the cluster's metadata, accepting transactions."""

from __future__ import annotations

import socket
import subprocess
from typing import TYPE_CHECKING

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack.broker_config import NodeLayout

if TYPE_CHECKING:
    from airflow_provider_eos.devstack.broker_state import BrokerInfo

__all__ = ["BROKER_ACCEPTS_TRANSACTIONS", "group_coordinator_ready", "listening", "log_tail", "registered",
           "wait_transactional"]

BROKER_ACCEPTS_TRANSACTIONS = RetryPolicy(
    waiting_for="the broker to accept transactions", timeout_s=120, first_delay_s=0.2, max_delay_s=0.5
)


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_transactional(info: BrokerInfo, processes: list[subprocess.Popen], timeout_s: float) -> None:
    """Wait until every node runs, is registered, and the cluster accepts a transaction and a group read."""
    from confluent_kafka import KafkaException, Producer

    from airflow_provider_eos.kafka.settings import with_client_logger

    errors: list[KafkaException] = []

    def accepts_transactions() -> bool:
        for node, process in zip(info.nodes, processes, strict=True):
            if process.poll() is not None:
                raise DevstackError(
                    f"Kafka broker {node.node_id} exited with code {process.returncode} while starting.\n"
                    f"{log_tail(node.layout)}",
                    fix=f"read {node.layout.log_file}.",  # a port lost to another program is chosen anew by up
                )
        if not all(listening(n.port) for n in info.nodes):
            return False  # no client before the ports listen: librdkafka would log every refusal
        if not registered(info, {n.node_id for n in info.nodes}):
            return False
        producer = Producer(with_client_logger(
            "probe-producer",
            {**info.client_settings(), "transactional.id": "eos-devstack-probe",
             # The probe's own timeout must fit under a deliberately low broker maximum.
             "transaction.timeout.ms": min(60_000, info.transaction_max_timeout_ms)},
        ))
        try:
            producer.init_transactions(10)
            producer.begin_transaction()
            producer.abort_transaction(10)
            return group_coordinator_ready(info)
        except KafkaException as exc:
            errors.append(exc)
            return False
        finally:
            producer.flush(0)

    started = BROKER_ACCEPTS_TRANSACTIONS.bounded(timeout_s=timeout_s).poll(
        accepts_transactions, until=bool, what=f"start of the broker(s) at {info.bootstrap_servers}"
    )
    if not started.settled:
        raise DevstackError(
            f"The broker(s) at {info.bootstrap_servers} did not accept transactions within {timeout_s:.0f}s "
            f"(last error: {errors[-1] if errors else None}).\n{log_tail(info.nodes[0].layout)}",
            fix=f"read {info.log_file}.",
        )

def registered(info: BrokerInfo, node_ids: set[int]) -> bool:
    """Whether every node in ``node_ids`` is in the cluster's metadata (registered and unfenced)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from airflow_provider_eos.kafka.settings import with_client_logger

    if len(info.nodes) <= 1:
        return True
    admin = AdminClient(with_client_logger("probe-admin", info.client_settings()))
    try:
        # Metadata, not DescribeCluster: any live broker answers it, while DescribeCluster goes to the
        # "controller" the metadata names, which in KRaft is any registered broker, the killed one included.
        brokers = admin.list_topics(timeout=5).brokers
    except KafkaException:
        return False
    return node_ids <= set(brokers)


def group_coordinator_ready(info: BrokerInfo) -> bool:
    """True once a group offset fetch answers without a coordinator error.

    The first FindCoordinator creates ``__consumer_offsets``; until its partitions are loaded,
    offset commits fail per partition with NOT_COORDINATOR. Tests and the demo commit group
    offsets right after start, so the broker is not "up" before this works.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from airflow_provider_eos.kafka.settings import with_client_logger

    # describe_consumer_groups, not list_consumer_group_offsets: confluent-kafka 2.16.1 crashes
    # (SIGSEGV in librdkafka) when an offset fetch meets a coordinator that is still loading.
    admin = AdminClient(with_client_logger("probe-admin", info.client_settings()))
    try:
        admin.describe_consumer_groups(["eos-devstack-probe"])["eos-devstack-probe"].result(10)
    except (KafkaException, TimeoutError):
        # TimeoutError (concurrent.futures'): no answer within 10 s, as a three-node 3.9 cluster on a loaded
        # machine gave while creating __consumer_offsets: not up yet, asked again until up()'s own timeout.
        return False
    return True

def log_tail(node: NodeLayout, lines: int = 20) -> str:
    for candidate in (node.log_file, node.log_dir / "kafka.out"):
        if candidate.exists() and candidate.stat().st_size:
            return "\n".join(candidate.read_text(errors="replace").splitlines()[-lines:])
    return "(no broker log)"

