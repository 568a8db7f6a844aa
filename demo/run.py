"""``make demo`` (``python -m demo``): the embedded default end to end, then everything it started stopped.

Starts a local Kafka, creates topics, produces a sample dataset (transactional, with aborted
transactions and malformed events in it), runs the demo pipeline's DAG (``eos_pipeline__orders_enrich_demo``)
through the ``airflow`` CLI with a crash injected mid-run (the driver is SIGKILLed after producing a batch, before its
Kafka commit), shows the recovery path that ran, resumes with a second DAG run, and ends with a
report: records in, out, DLQ, duplicates, lost, and the verification verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pendulum

from airflow_provider_eos.core.dag_ids import pipeline_dag_id
from airflow_provider_eos.core.errors import DevstackError, PrerequisiteError
from airflow_provider_eos.subprocesses import run_bounded

DEMO_EVENTS = 20_000
MALFORMED_EVERY = 250
FAULT = "after_produce@3"
#: The crash comes from the tests' fault plug-in (``tests/support/faults``), through the sink's one
#: extension point (:mod:`airflow_provider_eos.spark.sink_points`): the demo runs from a clone, as the tests do.
FAULT_PLUGIN = "tests.support.faults:plugin"
#: Seconds one ``airflow`` command of the demo may take: a whole DAG run (``dags test``) takes a few minutes.
AIRFLOW_COMMAND_TIMEOUT_S = 1800.0


def _fault_env() -> dict[str, str]:
    """What arms :data:`FAULT` in the crashed run: the plug-in, importable from the clone's root, and its guard."""
    from airflow_provider_eos.spark.sink_points import ACK_ENV, ACK_VALUE, ARMING_ENV, PLUGIN_ENV

    path = os.pathsep.join(filter(None, [str(_dags_folder().parent), os.environ.get("PYTHONPATH")]))
    return {PLUGIN_ENV: FAULT_PLUGIN, ARMING_ENV: FAULT, ACK_ENV: ACK_VALUE, "PYTHONPATH": path}


def _dags_folder() -> Path:
    dags = Path(__file__).resolve().parents[1] / "dags"  # the clone's, beside demo/
    if not (dags / "eos_pipeline.py").exists():
        raise PrerequisiteError(f"no DAGs folder at {dags}", fix="run the demo from a clone of the repository")
    return dags


def _sample_events() -> tuple[list[tuple[bytes, bytes]], set[str], list[bytes]]:
    records, valid, malformed = [], set(), []
    for i in range(DEMO_EVENTS):
        if i % MALFORMED_EVERY == MALFORMED_EVERY - 1:
            value = b'{"id": "broken-%d", "amount": "lots"' % i
            records.append((b"bad", value))
            malformed.append(value)
            continue
        event = {"id": f"order-{i}", "user": f"user-{i % 97}", "amount": round((i * 7.3) % 2000, 2),
                 "ts": pendulum.datetime(2026, 11, 1).add(seconds=i).isoformat()}
        records.append((event["user"].encode(), json.dumps(event).encode()))
        valid.add(event["id"])
    return records, valid, malformed


def _produce_input(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> int:
    """Committed transactions of 500 records, each followed by an aborted one the job must skip."""
    from confluent_kafka import Producer

    from airflow_provider_eos.kafka.settings import with_client_logger

    producer = Producer(with_client_logger("producer", {
        "bootstrap.servers": bootstrap, "transactional.id": f"demo-source-{uuid.uuid4().hex[:6]}", "linger.ms": 10}))
    producer.init_transactions(30)
    aborted = 0
    for start in range(0, len(records), 500):
        producer.begin_transaction()
        for key, value in records[start:start + 500]:
            producer.produce(topic, key=key, value=value)
        producer.commit_transaction(60)
        producer.begin_transaction()
        for n in range(3):
            producer.produce(topic, key=b"x", value=b'{"id": "ABORTED-%d"}' % n)
        producer.flush(30)
        producer.abort_transaction(30)
        aborted += 3
    return aborted


def _create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    from airflow_provider_eos.kafka.settings import with_client_logger

    admin = AdminClient(with_client_logger("admin", {"bootstrap.servers": bootstrap}))
    for future in admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()]).values():
        future.result(30)


def _pinned_partitions(bootstrap: str, topic: str, partitions: int) -> int:
    """How many of the topic's partitions an open transaction still holds below the high watermark."""
    from confluent_kafka.admin import AdminClient

    from airflow_provider_eos.core.topic_partition import TopicPartition
    from airflow_provider_eos.kafka.log_offsets import pinned_partitions
    from airflow_provider_eos.kafka.settings import with_client_logger

    admin = AdminClient(with_client_logger("admin", {"bootstrap.servers": bootstrap}))
    return len(pinned_partitions(admin, [TopicPartition(topic, p) for p in range(partitions)]))


def _read_committed(bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed") -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    from airflow_provider_eos.kafka.settings import with_client_logger

    consumer = Consumer(with_client_logger("consumer", {
        "bootstrap.servers": bootstrap, "group.id": f"demo-reader-{uuid.uuid4().hex[:6]}",
        "isolation.level": isolation, "enable.auto.commit": False, "enable.partition.eof": True}))
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values, eof = [], set()
    deadline = time.monotonic() + 120
    while len(eof) < partitions and time.monotonic() < deadline:
        for message in consumer.consume(2000, 1.0):
            if message.error():
                if message.error().code() == -191:
                    eof.add(message.partition())
                continue
            eof.discard(message.partition())
            values.append(message.value())
    consumer.close()
    return values


class _Airflow:
    """The ``airflow`` CLI against a demo AIRFLOW_HOME (SQLite), the repo's DAGs and the demo's specs."""

    def __init__(self, home: Path, specs_dir: Path, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.env = {
            **os.environ,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(_dags_folder()),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "EOS_SPECS_DIR": str(specs_dir),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        }
        for name in ("EOS_SINK_PLUGIN", "EOS_FAULT_INJECTION"):
            self.env.pop(name, None)
        self.airflow = str(Path(sys.executable).with_name("airflow"))

    def __call__(self, *args: str, log_name: str, extra_env: dict[str, str] | None = None) -> int:
        log = self.log_dir / f"{log_name}.log"
        with log.open("w") as out:
            return run_bounded([self.airflow, *args], timeout_s=AIRFLOW_COMMAND_TIMEOUT_S, error=DevstackError,
                               fix=f"read {log}; the demo stops what it started", env={**self.env, **(extra_env or {})},
                               stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode

    def _json(self, *args: str) -> list[dict[str, Any]]:
        done = run_bounded([self.airflow, *args, "-o", "json"], timeout_s=AIRFLOW_COMMAND_TIMEOUT_S,
                           error=DevstackError, fix="the demo stops what it started; run it again",
                           env=self.env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
        out = done.stdout
        # Airflow may print warnings on stdout before the JSON document.
        start = next(i for i, line in enumerate(out.splitlines()) if line.startswith("["))
        return json.loads("\n".join(out.splitlines()[start:]))

    def task_states(self, dag_id: str) -> tuple[str, dict[str, str]]:
        latest = max(self._json("dags", "list-runs", dag_id), key=lambda r: r.get("start_date") or "")
        states = self._json("tasks", "states-for-dag-run", dag_id, latest["run_id"])
        return latest["state"], {s["task_id"]: s["state"] for s in states}


def run_demo() -> int:
    from airflow_provider_eos.devstack.broker import LocalKafka
    from airflow_provider_eos.devstack.jars import eos_home

    # Absolute: the spec refuses a relative checkpoint_location (an EOS_HOME given as a relative path).
    work = (eos_home() / "demo" / pendulum.now("UTC").format("YYYYMMDDTHHmmss")).absolute()
    (work / "specs").mkdir(parents=True)
    (work / "logs").mkdir()
    print(f"demo folder: {work} (logs in {work / 'logs'})")
    kafka = LocalKafka(work / "kafka")
    started = time.monotonic()
    info = kafka.up(stop_with_pid=os.getpid())
    print(f"[1/6] Kafka (KRaft, single node) up at {info.bootstrap_servers} in {time.monotonic() - started:.1f}s")
    try:
        return _run(info.bootstrap_servers, work)
    finally:
        kafka.down(timeout_s=60)
        print("Kafka stopped; nothing left running.")


def _run(bootstrap: str, work: Path) -> int:
    import yaml

    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.core.verification import verify_checkpoint
    from airflow_provider_eos.usecases.clients import PipelineClients

    spec = PipelineSpec(
        name="orders_enrich_demo", kafka={"bootstrap.servers": bootstrap}, input_topics=["demo-orders"],
        output_topic="demo-orders-enriched", dlq_topic="demo-orders-dlq", group_id="demo-orders-eos",
        transactional_id_prefix="demo-orders", checkpoint_location=str(work / "checkpoint"),
        trigger="available_now", max_offsets_per_trigger=2000, transaction_timeout_ms=60_000,
        batch_budget_ms=30_000, transform="spark_jobs.transforms.json_enrich:transform",
        spark_conf={"spark.driver.memory": "1g"},
    )
    spec_path = work / "specs" / "orders_enrich_demo.yaml"
    spec_path.write_text(yaml.safe_dump(spec.to_dict()))
    _create_topics(bootstrap, {"demo-orders": 4, "demo-orders-enriched": 4, "demo-orders-dlq": 1})
    records, valid_ids, malformed = _sample_events()
    aborted = _produce_input(bootstrap, "demo-orders", records)
    print(f"[2/6] topics created; {len(records)} events produced ({len(malformed)} malformed) "
          f"plus {aborted} in aborted transactions")

    airflow = _Airflow(work / "airflow", work / "specs", work / "logs")
    for step in (("db", "migrate"), ("dags", "reserialize")):
        if airflow(*step, log_name="-".join(step)) != 0:
            print(f"airflow {' '.join(step)} failed: see {work / 'logs'}")
            return 1
    dag_id = pipeline_dag_id(spec.name)  # each pipeline spec has a DAG of its own
    print(f"[3/6] airflow dags test {dag_id}, with the driver killed after producing batch {FAULT[-1]} ...")
    airflow("dags", "test", dag_id, log_name="run-1-crash", extra_env=_fault_env())
    state, tasks = airflow.task_states(dag_id)
    print(f"      run 1: {state}; " + ", ".join(f"{t}={s}" for t, s in sorted(tasks.items())))
    if tasks.get("submit") != "failed" or tasks.get("recover_abort") != "success":
        print("      the crash did not take the expected path; see the logs")
        return 1
    pinned = _pinned_partitions(bootstrap, spec.output_topic, 4)
    print(f"[4/6] recovery path ran: recover_abort={tasks.get('recover_abort')}, "
          f"recover_verify={tasks.get('recover_verify')}; output partitions still pinned by an open "
          f"transaction: {pinned} of 4")

    print(f"[5/6] airflow dags test {dag_id} (resume) ...")
    airflow("dags", "test", dag_id, log_name="run-2-resume")
    state, tasks = airflow.task_states(dag_id)
    print(f"      run 2: {state}; " + ", ".join(f"{t}={s}" for t, s in sorted(tasks.items())))

    output = _read_committed(bootstrap, spec.output_topic, 4)
    attempts = len(_read_committed(bootstrap, spec.output_topic, 4, isolation="read_uncommitted")) - len(output)
    dlq = _read_committed(bootstrap, spec.dlq_topic, 1)
    produced = Counter(json.loads(v)["id"] for v in output)
    duplicates = sum(n - 1 for n in produced.values() if n > 1)
    lost = len(valid_ids - set(produced))
    dlq_ok = Counter(dlq) == Counter(malformed)
    reader = CheckpointReader(spec.checkpoint_location)
    last = reader.latest_committed_batch()
    with PipelineClients(spec) as clients:
        committed = clients.committed_offsets()
    verdict = verify_checkpoint(reader, committed).overall.value
    print("[6/6] report")
    rows = [("records in", len(records)), ("records out", len(output)), ("DLQ", len(dlq)),
            ("duplicates", duplicates), ("lost", lost),
            ("aborted attempt", f"{attempts} records (read_uncommitted only)"), ("DLQ = malformed", dlq_ok),
            ("verdict", verdict),
            ("last batch", last), ("DAG run 2", state)]
    for name, value in rows:
        print(f"      {name:<16} {value}")
    ok = state == "success" and duplicates == 0 and lost == 0 and dlq_ok and verdict == "IN_SYNC"
    print("RESULT: exactly once" if ok else "RESULT: NOT exactly once - see the logs")
    return 0 if ok else 1


