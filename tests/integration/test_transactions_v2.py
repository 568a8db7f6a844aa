"""Transactions v2 (KIP-890 part 2) on the broker under test: the protocol change, and the fencing we rely on.

On a cluster that finalized ``transaction.version`` 2 (Kafka 4.0 and later by default), a client that
negotiates v2 (the Java client from 4.0) has its epoch bumped by every commit and abort, and an
epoch at its limit rolls over into a new producer id. The product's own writers do not negotiate it
(librdkafka, and Spark 4.2's kafka-clients 3.9 in the JVM writer), so they run v1 on every broker;
a future client that does must change nothing, because the product fences by ``init_transactions``
on a known transactional id and keeps its progress in the sink group's offsets (batch markers),
never by producer id or epoch. Here a v2 Java client (the broker's own kafka-clients, as a
single-file program) is fenced, and its transaction left open aborted, the way recovery does it.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from airflow_provider_eos.core.broker_protocol import BrokerProtocol
from airflow_provider_eos.core.transactions import Transaction, TxnState
from airflow_provider_eos.devstack.jars import kafka_jars_dir, require_java
from airflow_provider_eos.kafka import transactions_admin as ta
from airflow_provider_eos.kafka.broker_protocol import read_broker_protocol
from tests.conftest import kafka_version_under_test
from tests.support.kafka import end_offsets

pytestmark = [pytest.mark.integration]

JAVA_CLIENT = Path(__file__).parents[1] / "support" / "java" / "TransactionsV2Client.java"
#: The coordinator gives a v2 producer a new id when its epoch would pass Short.MAX_VALUE - 1.
EPOCH_LIMIT = 32_766


class JavaProducer:
    """:data:`JAVA_CLIENT` on ``txn_id``: the Java client of the broker's version, one command per call."""

    def __init__(self, bootstrap: str, txn_id: str, topic: str) -> None:
        classpath = f"{kafka_jars_dir(kafka_version_under_test())}/*"
        self.process = subprocess.Popen(
            [require_java(), "-Xmx128m", "-cp", classpath, str(JAVA_CLIENT), bootstrap, txn_id, topic],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "JAVA_TOOL_OPTIONS": ""})
        assert self._answer() == "ok", "the Java producer did not initialize"

    def _answer(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def __call__(self, command: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._answer()

    def close(self) -> None:
        self.process.kill()
        self.process.wait(30)


@pytest.fixture
def java_producers() -> Iterator[list[JavaProducer]]:
    started: list[JavaProducer] = []
    try:
        yield started
    finally:
        for producer in started:
            producer.close()


def _protocol(bootstrap: str) -> BrokerProtocol:
    with ta.admin_client({"bootstrap.servers": bootstrap}) as admin:
        return read_broker_protocol(admin)


def _settled(bootstrap: str, txn_id: str) -> Transaction:
    """The coordinator's view of ``txn_id`` once no transaction of it is in flight (markers written)."""
    deadline = time.monotonic() + 30
    with ta.admin_client({"bootstrap.servers": bootstrap}) as admin:
        while True:
            found = ta.describe_transactions(admin, [txn_id])[txn_id]
            assert found is not None, f"the coordinator does not know {txn_id}"
            if found.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
                return found
            assert time.monotonic() < deadline, f"{txn_id} stayed {found.state}"
            time.sleep(0.2)


def _fence(bootstrap: str, txn_id: str) -> Producer:
    """What recovery's abort does to a transactional id: librdkafka's ``init_transactions`` on it."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    return producer


def _epochs(bootstrap: str, txn_id: str, run: Callable[[str], object]) -> list[Transaction]:
    seen = [_settled(bootstrap, txn_id)]
    for end in ("commit", "abort", "commit"):
        run(end)
        seen.append(_settled(bootstrap, txn_id))
    return seen


def _stable(bootstrap: str, topic: str) -> bool:
    return end_offsets(bootstrap, topic, 1, committed=True)[0] == end_offsets(bootstrap, topic, 1, committed=False)[0]


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


@pytest.mark.compat
def test_the_products_librdkafka_producers_run_v1_on_every_broker(bootstrap, topic_factory):
    protocol, topic, txn_id = _protocol(bootstrap), topic_factory("tv1"), f"tv1-{uuid.uuid4().hex[:8]}"
    producer = _fence(bootstrap, txn_id)

    def end(how: str) -> None:
        producer.begin_transaction()
        producer.produce(topic, b"x")
        producer.commit_transaction(30) if how == "commit" else producer.abort_transaction(30)

    seen = _epochs(bootstrap, txn_id, end)
    # If librdkafka starts negotiating v2, this changes: then re-read this module's docstring.
    assert {(t.producer_id, t.producer_epoch) for t in seen} == {(seen[0].producer_id, seen[0].producer_epoch)}, \
        (protocol.describe(), seen)


@pytest.mark.compat
def test_a_v2_client_has_its_epoch_bumped_per_transaction_and_recovery_still_fences_it(bootstrap, topic_factory,
                                                                                      java_producers):
    protocol, topic, txn_id = _protocol(bootstrap), topic_factory("tv2"), f"tv2-{uuid.uuid4().hex[:8]}"
    zombie = JavaProducer(bootstrap, txn_id, topic)
    java_producers.append(zombie)
    seen = _epochs(bootstrap, txn_id, lambda how: zombie(how) == "ok" or pytest.fail(f"{how} failed"))
    step = 1 if protocol.transactions_v2 and kafka_version_under_test() >= "4" else 0
    first = seen[0].producer_epoch
    assert [t.producer_epoch for t in seen] == [first + step * i for i in range(4)], (protocol.describe(), seen)

    # A zombie writer with a transaction open; recovery's init_transactions aborts it and fences the writer.
    assert zombie("open") == "ok"
    assert not _stable(bootstrap, topic)
    _fence(bootstrap, txn_id)
    _wait(lambda: _stable(bootstrap, topic), "the zombie's open transaction was not aborted")
    assert zombie("end") == "fenced"


@pytest.mark.long  # ~32,800 transactions, 16 ms each here (9 min): `make compat` runs it on every broker
@pytest.mark.compat
@pytest.mark.timeout(1800)
def test_a_v2_epoch_at_its_limit_rolls_into_a_new_producer_id_which_recovery_still_fences(bootstrap, topic_factory,
                                                                                         java_producers):
    protocol = _protocol(bootstrap)
    if not (protocol.transactions_v2 and kafka_version_under_test() >= "4"):
        pytest.skip(f"{protocol.describe()}: no v2 client and broker, no epoch bump per transaction")
    topic, txn_id = topic_factory("tv2-roll"), f"tv2-roll-{uuid.uuid4().hex[:8]}"
    producer = JavaProducer(bootstrap, txn_id, topic)
    java_producers.append(producer)
    start = _settled(bootstrap, txn_id)
    assert producer(f"aborts {EPOCH_LIMIT - start.producer_epoch + 2}") == "ok"
    rolled = _settled(bootstrap, txn_id)
    assert rolled.producer_id != start.producer_id and rolled.producer_epoch < 10, (start, rolled)

    # After the rollover, a transaction left open as a crashed writer leaves it: recovery aborts it the same way.
    assert producer("open") == "ok"
    _fence(bootstrap, txn_id)
    _wait(lambda: _stable(bootstrap, topic), "the open transaction after the rollover was not aborted")
    assert producer("end") == "fenced"
