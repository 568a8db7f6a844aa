"""`eos devstack up --brokers 3`: a real three-node KRaft cluster, its replication, and one fault vocabulary.

Every node is broker and controller; internal and new topics get replication factor 3 and
min.insync.replicas 2, unclean leader election is off. One node at a time is killed, paused,
resumed, stopped and restarted by id (through the CLI and the library the soak uses), a
transaction commits while a node is down, and pre-flight's replication rules see the live
brokers the cluster really has.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from airflow_provider_eos.core.preflight import Status, evaluate
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.broker_state import BrokerInfo
from airflow_provider_eos.kafka.cluster_facts import gather_facts
from tests.support.kafka import create_topic

pytestmark = pytest.mark.integration

EOS = Path(sys.executable).with_name("eos")


def _admin(cluster: BrokerInfo) -> AdminClient:
    return AdminClient(cluster.client_settings())


def _live_nodes(cluster: BrokerInfo) -> set[int]:
    """The brokers in the cluster's metadata (registered and not fenced), from any live broker."""
    admin = _admin(cluster)
    return set(admin.list_topics(timeout=10).brokers)


def _state(pid: int, letter: str, timeout_s: float = 5) -> bool:
    """Whether the process reaches state ``letter`` (``T`` stopped) within ``timeout_s`` (signals are async)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if f"State:\t{letter}" in Path(f"/proc/{pid}/status").read_text():
            return True
        time.sleep(0.1)
    return False


def _wait_live(cluster: BrokerInfo, expected: set[int], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while _live_nodes(cluster) != expected:
        assert time.monotonic() < deadline, f"live brokers {_live_nodes(cluster)}, expected {expected}"
        time.sleep(0.5)


def _partitions(admin: AdminClient, topic: str, timeout_s: float = 30) -> list:
    """The topic's partitions once every broker's metadata has it (a new topic takes a moment to propagate)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return admin.describe_topics(TopicCollection([topic]))[topic].result(10).partitions
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _eos(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(EOS), "devstack", *args], capture_output=True, text=True, timeout=180, check=False)


def test_three_nodes_replicate_everything_by_three_with_min_isr_two(kafka_cluster: BrokerInfo) -> None:
    assert len(kafka_cluster.bootstrap_servers.split(",")) == 3 and _live_nodes(kafka_cluster) == {1, 2, 3}
    admin = _admin(kafka_cluster)
    topic = f"rf-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 3)])[topic].result(30)  # the cluster's defaults
    for name in (topic, "__transaction_state", "__consumer_offsets"):
        partitions = _partitions(admin, name)
        assert partitions and all(len(p.replicas) == 3 for p in partitions), name
    configs = admin.describe_configs([ConfigResource("TOPIC", topic)])
    (entries,) = [f.result(30) for f in configs.values()]
    assert entries["min.insync.replicas"].value == "2"
    assert entries["unclean.leader.election.enable"].value == "false"


def _restore_every_broker(cluster: BrokerInfo) -> None:
    """Continue every paused broker and restart every dead one, so that a fault test that fails midway
    leaves the session's cluster whole for the tests after it (a lost quorum fails them all)."""
    kafka = LocalKafka(cluster.state_dir)
    status = kafka.status()
    for node in status.nodes if status is not None else cluster.nodes:
        if pid_alive(node.pid):
            kafka.fault("resume", node.node_id)
        else:
            kafka.fault("restart", node.node_id)
    _wait_live(cluster, {n.node_id for n in cluster.nodes})


@pytest.mark.long  # CI: the faults' own tests below; `make soak` drives them all
def test_fault_vocabulary_through_the_cli(kafka_cluster: BrokerInfo) -> None:
    state = ["--state-dir", kafka_cluster.state_dir]
    try:
        node = kafka_cluster.node(2)
        killed = _eos("broker", "kill", "2", *state)
        assert killed.returncode == 0 and "broker 2 kill" in killed.stdout, killed.stderr
        assert not pid_alive(node.pid)
        _wait_live(kafka_cluster, {1, 3})
        status = _eos("status", *state)
        assert "broker 2 not running" in status.stdout
        assert status.stdout.splitlines()[-1].startswith("bootstrap.servers=")
        restarted = _eos("broker", "restart", "2", *state)
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        assert 2 in _live_nodes(kafka_cluster), "restart returns once the broker is in the cluster's metadata"
        paused = LocalKafka(kafka_cluster.state_dir).fault("pause", 3)
        assert _state(paused.pid, "T"), "SIGSTOP did not stop the broker"
        LocalKafka(kafka_cluster.state_dir).fault("resume", 3)
        assert not _state(paused.pid, "T", timeout_s=0.5) and pid_alive(paused.pid)
        unknown = _eos("broker", "kill", "7", *state)
        assert unknown.returncode == 2, unknown.stdout
        assert "no broker with node id 7" in unknown.stderr and "[1, 2, 3]" in unknown.stderr
        _wait_live(kafka_cluster, {1, 2, 3})
    finally:
        _restore_every_broker(kafka_cluster)


def test_a_transaction_commits_while_one_broker_is_down(kafka_cluster: BrokerInfo) -> None:
    settings: dict[str, Any] = kafka_cluster.client_settings()
    topic = f"tx-{uuid.uuid4().hex[:8]}"
    admin = _admin(kafka_cluster)
    admin.create_topics([NewTopic(topic, 3)])[topic].result(30)
    kafka = LocalKafka(kafka_cluster.state_dir)
    kafka.fault("kill", 1)
    try:
        _wait_live(kafka_cluster, {2, 3})
        producer = Producer({**settings, "transactional.id": f"{topic}-p"})
        producer.init_transactions(60)
        producer.begin_transaction()
        for i in range(30):
            producer.produce(topic, f"r{i}".encode(), partition=i % 3)
        producer.commit_transaction(60)
        consumer = Consumer({**settings, "group.id": f"{topic}-g", "auto.offset.reset": "earliest",
                             "isolation.level": "read_committed"})
        consumer.subscribe([topic])
        seen: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(seen) < 30 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.append(message.value())
        consumer.close()
        assert sorted(seen) == sorted(f"r{i}".encode() for i in range(30))
    finally:
        kafka.fault("restart", 1)
    assert _live_nodes(kafka_cluster) == {1, 2, 3}


def test_preflight_sees_the_live_brokers(kafka_cluster: BrokerInfo, tmp_path: Path) -> None:
    topics = [f"pf-{uuid.uuid4().hex[:6]}-{kind}" for kind in ("in", "out", "lone")]
    for name, replicas in zip(topics, (3, 3, 1), strict=True):
        create_topic(kafka_cluster.client_settings(), name, 2, replicas=replicas)
    spec = PipelineSpec.from_dict({
        "name": "pf", "kafka": kafka_cluster.client_settings(), "input_topics": [topics[0]],
        "output_topic": topics[1], "group_id": f"{topics[0]}-g", "transactional_id_prefix": f"{topics[0]}-t",
        "checkpoint_location": str(tmp_path / "cp"),
    })
    facts = gather_facts(spec, timeout_s=20)
    assert facts.internal_topics is not None
    for name in ("__transaction_state", "__consumer_offsets"):
        internal = facts.internal_topics[name]
        assert internal.exists and internal.min_insync_replicas == 2, internal
        assert set(internal.replicas.values()) == set(internal.in_sync.values()) == {3}, internal
    healthy = evaluate(facts)
    for rule in ("EOS201", "EOS202", "EOS203", "EOS204", "EOS207", "EOS208", "EOS209", "EOS211"):
        assert healthy.finding(rule).status is Status.PASS, healthy.finding(rule)
    lone = evaluate(gather_facts(spec.with_overrides(output_topic=topics[2]), timeout_s=20)).finding("EOS209")
    assert lone.status is not Status.PASS and "1" in lone.message, lone

    kafka = LocalKafka(kafka_cluster.state_dir)
    kafka.fault("kill", 3)
    try:
        _wait_live(kafka_cluster, {1, 2})
        # A rolling restart: the replication factors (3) exceed the live brokers (2), but the internal topics
        # exist and keep 2 in-sync replicas, their min.insync.replicas: transactions and offset commits go on.
        degraded = evaluate(gather_facts(spec, timeout_s=20))
        for rule, name in (("EOS201", "__transaction_state"), ("EOS204", "__consumer_offsets")):
            finding = degraded.finding(rule)
            assert finding.status is Status.PASS, finding
            assert f"{name} exists: 10 partitions, each with at least 2 in-sync replica(s)" in finding.message, finding
            assert "with a replica out of sync" in finding.message, finding
        assert degraded.ok, [f.message for f in degraded.errors]
    finally:
        kafka.fault("restart", 3)


def test_preflight_judges_the_existing_transaction_log_by_its_own_min_isr(
    kafka_cluster: BrokerInfo, tmp_path: Path
) -> None:
    """EOS202 once ``__transaction_state`` exists: the topic's min.insync.replicas against its replicas.

    The brokers' ``transaction.state.log.min.isr`` (2) only gave the topic its first value. An
    administrator raises the topic's own ``min.insync.replicas`` to 4, above its 3 replicas: no
    transaction can initialize or commit any more, while the brokers' setting still says 2. Before
    the fix EOS202 compared the brokers' 2 with the live brokers and passed.
    """
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    topics = [f"isr-{uuid.uuid4().hex[:6]}-{kind}" for kind in ("in", "out")]
    for name in topics:
        create_topic(kafka_cluster.client_settings(), name, 1, replicas=3)
    spec = PipelineSpec.from_dict({
        "name": "isr", "kafka": kafka_cluster.client_settings(), "input_topics": [topics[0]],
        "output_topic": topics[1], "group_id": f"{topics[0]}-g", "transactional_id_prefix": f"{topics[0]}-t",
        "checkpoint_location": str(tmp_path / "cp"),
    })
    admin = _admin(kafka_cluster)
    assert _partitions(admin, "__transaction_state")  # it exists (a request naming it creates it)

    def set_min_isr(value: str) -> None:
        resource = ConfigResource("TOPIC", "__transaction_state", incremental_configs=[
            ConfigEntry("min.insync.replicas", value, incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(30)

    before = evaluate(gather_facts(spec, timeout_s=20)).finding("EOS202")
    assert before.status is Status.PASS, before
    assert "__transaction_state's min.insync.replicas 2 <= the replicas of each of its partitions (at least 3)" \
        in before.message, before
    set_min_isr("4")
    try:
        facts = gather_facts(spec, timeout_s=20)
        assert facts.internal_topics is not None
        assert facts.internal_topics["__transaction_state"].min_insync_replicas == 4
        finding = evaluate(facts).finding("EOS202")
        assert finding.status is Status.FAIL, finding
        assert "__transaction_state's min.insync.replicas 4 > the replicas of" in finding.message, finding
        assert "transaction.state.log.min.isr 2 of brokers 1, 2, 3 applied only when it was created" \
            in finding.message, finding
        assert finding.fix and "--entity-name __transaction_state --add-config min.insync.replicas=3" in finding.fix
    finally:
        set_min_isr("2")


def test_preflight_judges_the_existing_transaction_log_by_its_partitions_replicas(
    kafka_cluster: BrokerInfo, tmp_path: Path
) -> None:
    """EOS203 once ``__transaction_state`` exists: each partition's replicas, not the brokers' replication factor.

    The brokers' ``transaction.state.log.replication.factor`` (3) only gave the topic its first replicas. A
    reassignment leaves partition 0 on one broker: losing that broker loses the state of the transactions
    it coordinates, while the brokers' setting still says 3. Before the fix EOS203 read the setting and passed.
    """
    from kafka.structs import TopicPartition as KafkaTopicPartition

    from airflow_provider_eos.kafka.transactions_admin import admin_client

    topics = [f"rf-{uuid.uuid4().hex[:6]}-{kind}" for kind in ("in", "out")]
    for name in topics:
        create_topic(kafka_cluster.client_settings(), name, 1, replicas=3)
    spec = PipelineSpec.from_dict({
        "name": "rf", "kafka": kafka_cluster.client_settings(), "input_topics": [topics[0]],
        "output_topic": topics[1], "group_id": f"{topics[0]}-g", "transactional_id_prefix": f"{topics[0]}-t",
        "checkpoint_location": str(tmp_path / "cp"),
    })
    admin = _admin(kafka_cluster)

    def replicas_of_0() -> list[int]:
        return [r.id for r in next(p for p in _partitions(admin, "__transaction_state") if p.id == 0).replicas]

    def reassign(replicas: list[int]) -> None:
        with admin_client(kafka_cluster.client_settings()) as kafka_python:
            kafka_python.alter_partition_reassignments({KafkaTopicPartition("__transaction_state", 0): replicas})
        deadline = time.monotonic() + 60
        while sorted(replicas_of_0()) != sorted(replicas):
            assert time.monotonic() < deadline, f"__transaction_state-0 still on {replicas_of_0()}, not {replicas}"
            time.sleep(0.5)

    original = replicas_of_0()  # it exists (a request naming it creates it)
    assert len(original) == 3, original
    before = evaluate(gather_facts(spec, timeout_s=20)).finding("EOS203")
    assert before.status is Status.PASS, before
    reassign(original[:1])
    try:
        finding = evaluate(gather_facts(spec, timeout_s=20)).finding("EOS203")
        assert finding.status is Status.FAIL, finding
        assert "1 of __transaction_state's partitions have fewer than 3 replicas with 3 live brokers: " \
            "__transaction_state-0 (1)" in finding.message, finding
        assert "transaction.state.log.replication.factor 3 of brokers 1, 2, 3 applied only when it was created" \
            in finding.message, finding
        assert finding.fix and "kafka-reassign-partitions.sh" in finding.fix, finding
    finally:
        reassign(original)
    assert "each of __transaction_state's partitions has at least 3 replicas" in before.message, before
