"""Broker faults on the three-node cluster (the CI subset of the soak): exactly once through every one.

Per writer, five faults of different kinds land while the job streams through 24,000 records in
batches of 800 (replication factor 3, min.insync.replicas 2):

- SIGKILL of the broker coordinating an *open* transaction of the pipeline (found through
  DescribeTransactions, not guessed), then its restart;
- SIGKILL of the broker coordinating the sink group (DescribeGroups), then its restart;
- SIGKILL of the leader of an output partition, then its restart;
- SIGSTOP of a broker for longer than the producer's request timeout, then SIGCONT;
- a graceful restart of a broker.

Whenever the job exits, the pipeline recovers as the DAG would (abort what is open, verify) and
runs again. At the end the output is exact (0 duplicates, 0 lost, dead letters exact, the group at
the checkpoint with its marker), and the fault log says which faults found a transaction open.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.transactions import TxnState
from airflow_provider_eos.devstack.broker import BrokerInfo, LocalKafka
from tests.support.pipeline import PipelineHarness, assert_exactly_once, json_events, kill_group

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

EOS = Path(sys.executable).with_name("eos")
KINDS = ("kill_transaction_coordinator", "kill_group_coordinator", "kill_output_leader", "pause_broker",
         "restart_broker")


@dataclass
class FaultLog:
    """What was done, to which broker, and whether a transaction of the pipeline was open at that moment."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    def add(self, kind: str, node: int, open_transaction: bool) -> None:
        self.entries.append({"kind": kind, "node": node, "open_transaction": open_transaction, "at": time.time()})


def _ongoing(harness: PipelineHarness) -> list[Any]:
    from airflow_provider_eos.kafka.transactions_admin import admin_client, scan_prefix

    with admin_client(harness.spec) as admin:
        return [t for t in scan_prefix(admin, harness.spec.transactional_id_prefix) if t.state is TxnState.ONGOING]


def _wait_ongoing(harness: PipelineHarness, process: subprocess.Popen, timeout_s: float = 60) -> list[Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        found = _ongoing(harness)
        if found:
            return found
        time.sleep(0.1)
    return []


def _group_coordinator(cluster: BrokerInfo, group: str) -> int:
    admin = AdminClient(cluster.client_settings())
    return admin.describe_consumer_groups([group])[group].result(30).coordinator.id


def _output_leader(cluster: BrokerInfo, topic: str) -> int:
    admin = AdminClient(cluster.client_settings())
    return admin.describe_topics(TopicCollection([topic]))[topic].result(30).partitions[0].leader.id


def _recover(harness: PipelineHarness) -> None:
    """What the DAG's recovery branch does after the driver is gone: abort what is open, then verify."""
    for command in (["abort", "--force"], ["verify"]):
        done = subprocess.run([str(EOS), *command, "--spec", str(harness.spec_file)], capture_output=True,
                              text=True, timeout=300, check=False)
        assert done.returncode in (0, 1), done.stdout + done.stderr
        if command == ["verify"]:
            assert "IN_SYNC" in done.stdout or "KAFKA_AHEAD_SAFE" in done.stdout or "nothing committed" in \
                done.stdout, done.stdout


def _apply(kind: str, cluster: BrokerInfo, harness: PipelineHarness, process: subprocess.Popen,
           faults: FaultLog, rng: random.Random) -> None:
    kafka = LocalKafka(cluster.state_dir)
    ongoing = _wait_ongoing(harness, process)
    if kind == "kill_transaction_coordinator":
        coordinated = [t.coordinator_id for t in ongoing if t.coordinator_id is not None]
        node = coordinated[0] if coordinated else rng.choice([1, 2, 3])
    elif kind == "kill_group_coordinator":
        node = _group_coordinator(cluster, harness.spec.group_id)
    elif kind == "kill_output_leader":
        node = _output_leader(cluster, harness.output_topic)
    else:
        node = rng.choice([1, 2, 3])
    faults.add(kind, node, bool(ongoing))
    if kind == "pause_broker":
        kafka.fault("pause", node)
        time.sleep(35)  # longer than the producers' request timeout (30 s)
        kafka.fault("resume", node)
    elif kind == "restart_broker":
        kafka.fault("restart", node)
    else:
        kafka.fault("kill", node)
        time.sleep(3)
        kafka.fault("restart", node)


@pytest.mark.parametrize("writers", ["executors", "driver"])
def test_exactly_once_through_broker_faults(kafka_cluster: BrokerInfo, tmp_path: Path, writers: str) -> None:
    seed = 20261125 if writers == "executors" else 20261126
    rng = random.Random(seed)
    harness = PipelineHarness(kafka_cluster.client_settings(), tmp_path, partitions=3, max_offsets_per_trigger=800,
                              writers=writers)
    records, valid_ids, malformed = json_events(24_000, malformed_every=499)
    harness.produce_input(records, aborted_every=7, chunk=1000)
    faults = FaultLog()
    schedule = rng.sample(KINDS, len(KINDS))
    process, _ = harness.start()
    try:
        for kind in schedule:
            if process.poll() is not None:
                _recover(harness)
                process, _ = harness.start()
            _apply(kind, kafka_cluster, harness, process, faults, rng)
    finally:
        kill_group(process)
    _recover(harness)
    final = harness.run()
    assert final.returncode == 0, final.log[-3000:]
    print(f"seed={seed} faults={faults.entries}")
    assert len(faults.entries) == len(KINDS)
    assert sum(e["open_transaction"] for e in faults.entries) >= 1, faults.entries
    assert_exactly_once(harness, valid_ids, malformed)
