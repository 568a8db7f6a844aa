"""The soak's input: keyed JSON events with a sequence number per key, produced in transactions with
aborted ones interleaved.

``json_enrich`` keeps only ``id``, ``user``, ``amount`` and ``ts`` of an event, so the per-key
sequence number travels in the id (``e<index>-<seq>``): the index (position in the phase's stream)
counts duplicates and losses, the seq checks per-key order. Each key goes to one input partition
(chosen here, not by the client's partitioner), so per-key order is order within that partition.
"""

from __future__ import annotations

import json
import random
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: Distinct keys of a phase: few enough that each repeats thousands of times in a million records.
KEYS = 97
#: Every this-many-th record is malformed (not JSON): it must reach the dead-letter topic, once.
MALFORMED_EVERY = 1009
#: An aborted transaction of junk records follows every this-many-th committed input transaction.
ABORTED_EVERY = 5
#: Records per committed input transaction.
INPUT_CHUNK = 1000


def input_partition(key: str, partitions: int) -> int:
    """The input partition of ``key``: fixed, so the order check knows it without asking Kafka."""
    return zlib.crc32(key.encode()) % partitions


def is_malformed(index: int) -> bool:
    return index % MALFORMED_EVERY == MALFORMED_EVERY - 1


def malformed_value(index: int) -> bytes:
    return b"not json {%d" % index


def parse_id(event_id: str) -> tuple[int, int] | None:
    """``e<index>-<seq>`` -> (index, seq); None for anything else (junk of aborted transactions)."""
    if not event_id.startswith("e"):
        return None
    index, sep, seq = event_id[1:].partition("-")
    if not sep or not index.isdigit() or not seq.isdigit():
        return None
    return int(index), int(seq)


@dataclass
class EventStream:
    """The phase's records in order, deterministic in ``seed``; slices are taken one after another."""

    seed: str
    keys: int = KEYS
    produced: int = 0
    _rng: random.Random = field(init=False, repr=False)
    _seq: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def take(self, count: int) -> list[tuple[str, bytes]]:
        """The next ``count`` records as (key, value)."""
        out = []
        for index in range(self.produced, self.produced + count):
            user = f"user{self._rng.randrange(self.keys)}"
            if is_malformed(index):
                out.append((user, malformed_value(index)))
                continue
            seq = self._seq.get(user, 0)
            self._seq[user] = seq + 1
            value = {"id": f"e{index}-{seq}", "user": user, "seq": seq, "amount": index % 1500 + 0.5,
                     "ts": "2026-11-01T00:00:00Z"}
            out.append((user, json.dumps(value, separators=(",", ":")).encode()))
        self.produced += count
        return out


def expected_malformed(records: int) -> list[bytes]:
    return [malformed_value(i) for i in range(records) if is_malformed(i)]


class InputProducer:
    """Produces slices to the phase's input topic: committed transactions of :data:`INPUT_CHUNK`
    records, an aborted one of junk after every :data:`ABORTED_EVERY`-th (offsets the job must skip)."""

    def __init__(self, settings: dict[str, Any], topic: str, partitions: int, transactional_id: str) -> None:
        from confluent_kafka import Producer

        self.topic, self.partitions = topic, partitions
        # log_level 2: the brokers this soak kills would fill its output with librdkafka's connection
        # errors; a failure that matters surfaces as an exception of the transaction calls.
        self.producer = Producer({**settings, "transactional.id": transactional_id, "linger.ms": 5,
                                  "transaction.timeout.ms": 120_000, "log_level": 2})
        self.producer.init_transactions(60)
        self.transactions = self.aborted = 0

    def produce(self, records: list[tuple[str, bytes]]) -> None:
        for start in range(0, len(records), INPUT_CHUNK):
            self._committed(records[start:start + INPUT_CHUNK])
            if self.transactions % ABORTED_EVERY == 0:
                self._aborted()

    def _committed(self, chunk: list[tuple[str, bytes]]) -> None:
        from confluent_kafka import KafkaException

        while True:
            self.producer.begin_transaction()
            for key, value in chunk:
                self._send(key, value)
            try:
                self._commit()
                break
            except KafkaException as exc:
                # Abortable (e.g. a broker of the transaction went away): nothing of the chunk is
                # visible, so aborting and sending it again cannot duplicate input.
                if not exc.args[0].txn_requires_abort():
                    raise
                self.producer.abort_transaction(120)
        self.transactions += 1

    def _commit(self) -> None:
        from confluent_kafka import KafkaException

        for _ in range(10):
            try:
                self.producer.commit_transaction(120)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable():  # a retried commit is librdkafka's documented way
                    raise
                time.sleep(1)
        self.producer.commit_transaction(120)

    def _aborted(self) -> None:
        self.producer.begin_transaction()
        for i in range(5):
            self._send("junk", b'{"id":"ABORTED-%d","user":"junk","amount":1.0}' % i)
        self.producer.flush(60)
        self.producer.abort_transaction(60)
        self.aborted += 1

    def _send(self, key: str, value: bytes) -> None:
        while True:
            try:
                self.producer.produce(self.topic, value=value, key=key.encode(),
                                      partition=input_partition(key, self.partitions))
                return
            except BufferError:  # the local queue is full: let deliveries drain
                self.producer.poll(0.05)


def iter_slices(stream: EventStream, sizes: tuple[int, ...]) -> Iterator[list[tuple[str, bytes]]]:
    for size in sizes:
        yield stream.take(size)
