"""The bench reads the real broker's request meters: a transaction's requests are counted by type."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from bench.broker_requests import BrokerRequests, served
from bench.process_tree import listener_pid

pytestmark = pytest.mark.integration


def test_a_transactions_requests_are_counted_by_type(bootstrap, topic_factory, tmp_path) -> None:
    topic = topic_factory(partitions=2)
    pid = listener_pid(bootstrap)
    assert pid is not None, f"no process listens on {bootstrap}"
    requests = BrokerRequests.attach(pid, tmp_path)
    assert BrokerRequests.attach(pid, tmp_path).port == requests.port  # the running agent is reused
    before = requests.counts()
    compiled = requests.compilation_ms()
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-requests-{uuid.uuid4()}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, key=b"k%d" % i, value=b"v", partition=i % 2)
    producer.commit_transaction(30)
    during = served(before, requests.counts())
    assert during.get("Produce", 0) >= 1, during
    for kind in ("InitProducerId", "AddPartitionsToTxn", "EndTxn", "WriteTxnMarkers"):
        assert during.get(kind, 0) >= 1, (kind, during)
    # A type is counted only when served. Not "AddOffsetsToTxn is absent": the broker is shared with the other
    # test worker, whose transactions send offsets at the same time (CI met it once).
    assert during and all(count > 0 for count in during.values()), during
    # A broker that has served requests has compiled code, and its total only grows.
    assert 0 < compiled <= requests.compilation_ms()
