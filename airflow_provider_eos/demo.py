"""``eos demo``: the embedded default end to end on this machine, then everything stopped."""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path


def transactional_round_trip(bootstrap: str, records: int = 1000) -> dict[str, int]:
    """Commit ``records`` in one transaction and abort as many in another; read back committed."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"eos-demo-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the future it returns
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-0"})
    producer.init_transactions(30)
    for commit in (True, False):
        producer.begin_transaction()
        for i in range(records):
            producer.produce(topic, key=str(i).encode(), value=f"{commit}-{i}".encode())
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    seen: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(seen) < records and time.monotonic() < deadline:
        seen.extend(m.value() for m in consumer.consume(1000, 1.0) if not m.error())
    consumer.close()
    return {"committed": records, "aborted": records, "read_committed_saw": len(seen),
            "aborted_seen": sum(v.startswith(b"False") for v in seen)}


def run_demo() -> int:
    from airflow_provider_eos.devstack.broker import LocalKafka

    with tempfile.TemporaryDirectory(prefix="eos-demo-") as workdir:
        kafka = LocalKafka(Path(workdir) / "kafka")
        started = time.monotonic()
        info = kafka.up()
        print(f"Kafka up at {info.bootstrap_servers} in {time.monotonic() - started:.1f}s")
        try:
            report = transactional_round_trip(info.bootstrap_servers)
        finally:
            kafka.down()
            print("Kafka stopped")
    print(" ".join(f"{k}={v}" for k, v in report.items()))
    ok = report["read_committed_saw"] == report["committed"] and report["aborted_seen"] == 0
    print("RESULT: exactly the committed records are visible" if ok else "RESULT: MISMATCH")
    return 0 if ok else 1
