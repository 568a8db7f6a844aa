"""Run the real job (spark-submit subprocess) on topics and a checkpoint of a test's own."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from confluent_kafka import Producer

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.spec import PipelineSpec
from tests.support.faults import arming_env, disarmed
from tests.support.kafka import Cluster, client_settings, consume_all, create_topic

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The tests' JVMs (Spark drivers and executors, Kafka nodes, Spark's standalone daemons) live seconds to
#: minutes on light loads: HotSpot's C1 compiler alone, since C2's compiling costs them more than it earns.
TEST_JIT = "-XX:TieredStopAtLevel=1"
#: A test's job runs seconds on a few thousand records: its driver JVM (local mode: the executor too)
#: spends most of its CPU compiling. C1 alone and the serial collector cut a run's CPU by about a
#: quarter (measured on test_json_enrich_end_to_end_...: 43 s -> 31 s user) at the same wall time,
#: which is what two test workers on two cores compete for. The soak and the bench set their own.
TEST_SPARK_CONF = {
    "spark.driver.memory": "768m",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.extraJavaOptions": f"{TEST_JIT} -XX:+UseSerialGC",
    "spark.executor.extraJavaOptions": f"{TEST_JIT} -XX:+UseSerialGC",
}


@dataclass
class JobResult:
    returncode: int
    log: str

    @property
    def killed(self) -> bool:
        return self.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL)

    def batch_lines(self, tag: str = "EOS-BATCH") -> list[dict]:
        return [json.loads(line.split(f"{tag} ", 1)[1]) for line in self.log.splitlines() if f"{tag} " in line]


@dataclass
class PipelineHarness:
    """Topics, a spec file and a checkpoint for one test; starts and kills the real job.

    :param bootstrap: the cluster as the test's own clients reach it (topics, input, reading
        back): a bootstrap string or a librdkafka settings dict (a secured devstack's admin).
    :param spec_kafka: the spec's ``kafka`` settings (e.g. a job principal's); by default the same.
    """

    bootstrap: Cluster
    work_dir: Path
    transform: str | None = "spark_jobs.transforms.json_enrich:transform"
    partitions: int = 2
    max_offsets_per_trigger: int = 300
    transaction_timeout_ms: int = 60_000
    trigger: str = "available_now"
    writers: str = "auto"
    #: What runs the executor writers' tasks: ``jvm`` (the jvm/ module, the product's default) or
    #: ``python`` (PySpark workers).
    executor_writer: str = "jvm"
    master: str = "local[2]"
    name: str = field(default_factory=lambda: f"p{uuid.uuid4().hex[:8]}")
    runs: int = 0
    spec_kafka: dict | None = None

    def __post_init__(self) -> None:
        self.input_topic = create_topic(self.bootstrap, f"{self.name}-in", self.partitions)
        self.output_topic = create_topic(self.bootstrap, f"{self.name}-out", self.partitions)
        self.dlq_topic = create_topic(self.bootstrap, f"{self.name}-dlq", 1)
        self.spec = PipelineSpec(
            name=self.name.replace("-", "_"),
            kafka=dict(self.spec_kafka) if self.spec_kafka else client_settings(self.bootstrap),
            input_topics=[self.input_topic], output_topic=self.output_topic, dlq_topic=self.dlq_topic,
            group_id=f"{self.name}-sink", transactional_id_prefix=f"{self.name}-txn",
            checkpoint_location=str(self.work_dir / "checkpoint"), trigger=self.trigger,
            max_offsets_per_trigger=self.max_offsets_per_trigger,
            transaction_timeout_ms=self.transaction_timeout_ms, transform=self.transform, writers=self.writers,
            executor_writer=self.executor_writer, spark_conf=dict(TEST_SPARK_CONF),
        )
        self.spec_file = self.work_dir / "spec.yaml"
        self._write_spec()

    def _write_spec(self) -> None:
        # Owner-only before the first byte: the spec may carry a principal's password.
        self.spec_file.touch(mode=0o600)
        self.spec_file.write_text(yaml.safe_dump(self.spec.to_dict()))

    def with_overrides(self, **overrides: object) -> PipelineHarness:
        """The same pipeline (topics, group, checkpoint) with other settings, e.g. to drain it."""
        self.spec = self.spec.with_overrides(**overrides)
        self._write_spec()
        return self

    # -- input -------------------------------------------------------------------------------

    def produce_input(self, records: list[tuple[bytes | None, bytes]], *, aborted_every: int = 0,
                      chunk: int = 200) -> None:
        """Produce ``records`` in committed transactions; with ``aborted_every=k`` an aborted
        transaction of junk records follows every k-th committed one (offsets the job must skip)."""
        producer = Producer({**client_settings(self.bootstrap), "transactional.id": f"{self.name}-input",
                             "linger.ms": 5})
        producer.init_transactions(30)
        for n, start in enumerate(range(0, len(records), chunk)):
            producer.begin_transaction()
            for key, value in records[start:start + chunk]:
                producer.produce(self.input_topic, value=value, key=key)
            producer.commit_transaction(60)
            if aborted_every and n % aborted_every == 0:
                producer.begin_transaction()
                for i in range(5):
                    producer.produce(self.input_topic, value=b'{"id":"ABORTED-%d"}' % i, key=b"x")
                producer.flush(30)
                producer.abort_transaction(30)

    # -- the job -----------------------------------------------------------------------------

    def _command(self, mode: str) -> list[str]:
        return [sys.executable, "-m", "airflow_provider_eos.cli", "run", "--spec", str(self.spec_file),
                "--master", self.master, "--mode", mode]

    def start(self, *, fault: str | None = None, mode: str = "exactly-once",
              env_extra: dict[str, str] | None = None) -> tuple[subprocess.Popen, Path]:
        self.runs += 1
        log_path = self.work_dir / f"run-{self.runs}.log"
        # The repo root on the path: tests' own transforms (tests/support/transforms.py) import in the job.
        env = disarmed({**os.environ, "EOS_LOG_LEVEL": "INFO", "PYTHONPATH": str(REPO_ROOT), **(env_extra or {})})
        if fault:
            # The tests' fault plug-in (tests/support/faults), armed for this run only.
            env.update(arming_env(fault, log_path.with_suffix(".faults"), pythonpath=env["PYTHONPATH"]))
        with log_path.open("w") as out:
            process = subprocess.Popen(self._command(mode), stdout=out, stderr=subprocess.STDOUT, env=env,
                                       start_new_session=True)
        return process, log_path

    def run(self, *, fault: str | None = None, mode: str = "exactly-once", timeout_s: float = 420,
            env_extra: dict[str, str] | None = None) -> JobResult:
        process, log_path = self.start(fault=fault, mode=mode, env_extra=env_extra)
        try:
            returncode = process.wait(timeout_s)
        finally:
            kill_group(process)
        faults = log_path.with_suffix(".faults")
        text = log_path.read_text(errors="replace") + (faults.read_text() if faults.exists() else "")
        return JobResult(returncode, text)

    # -- output ------------------------------------------------------------------------------

    def output_values(self, isolation: str = "read_committed") -> list[bytes]:
        return [m.value() for m in consume_all(self.bootstrap, self.output_topic, isolation=isolation)]

    def dlq_records(self) -> list:
        return consume_all(self.bootstrap, self.dlq_topic)

    def checkpoint(self) -> CheckpointReader:
        return CheckpointReader(self.spec.checkpoint_location)


def writers_of(label: str) -> dict[str, str]:
    """A test's writers label as harness arguments: ``driver``, ``executors`` (the default executor writer,
    the JVM's) or ``executors/python`` (the PySpark workers' one)."""
    writers, _, executor_writer = label.partition("/")
    return {"writers": writers, "executor_writer": executor_writer or "jvm"}


def kill_group(process: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Kill the job's whole process group (spark-submit's JVM and the Python driver)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(30)


def json_events(count: int, *, malformed_every: int = 0, prefix: str = "e") -> tuple[list, list, list]:
    """Input records with unique ids; returns (records, ids of valid ones, malformed values)."""
    records, valid_ids, malformed = [], [], []
    for i in range(count):
        if malformed_every and i % malformed_every == malformed_every - 1:
            value = b"not json {" + str(i).encode() if i % 2 else json.dumps({"id": f"{prefix}{i}"}).encode()
            records.append((b"bad", value))
            malformed.append(value)
            continue
        event_id = f"{prefix}{i}"
        records.append((f"user{i % 13}".encode(),
                        json.dumps({"id": event_id, "user": f"user{i % 13}", "amount": i % 1500 + 0.5,
                                    "ts": "2026-11-01T00:00:00Z"}).encode()))
        valid_ids.append(event_id)
    return records, valid_ids, malformed


def output_ids(values: list[bytes]) -> Counter:
    return Counter(json.loads(v)["id"] for v in values)


def wait_for(predicate, timeout_s: float, interval_s: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return False


def assert_exactly_once(harness: PipelineHarness, valid_ids: list[str], malformed: list[bytes]) -> None:
    """Output = expected multiset (0 duplicates, 0 lost), DLQ = the malformed ones, and the sink
    group sits at the checkpoint's last committed offsets with that batch's marker."""
    from confluent_kafka.admin import AdminClient

    from airflow_provider_eos.kafka.group_offsets import read_committed_offsets

    produced = output_ids(harness.output_values())
    duplicates = {k: v for k, v in produced.items() if v > 1}
    lost = set(valid_ids) - set(produced)
    unexpected = set(produced) - set(valid_ids)
    assert not duplicates and not lost and not unexpected, (
        f"duplicates={len(duplicates)} lost={len(lost)} unexpected={len(unexpected)} "
        f"e.g. {list(duplicates.items())[:3]} {sorted(lost)[:3]} {sorted(unexpected)[:3]}"
    )
    assert Counter(m.value() for m in harness.dlq_records()) == Counter(malformed)
    checkpoint = harness.checkpoint()
    last = checkpoint.latest_committed_batch()
    assert last is not None
    expected = checkpoint.planned_offsets(last)
    admin = AdminClient(client_settings(harness.bootstrap))
    committed = read_committed_offsets(admin, harness.spec.group_id, expected,
                                       transaction_timeout_ms=harness.spec.transaction_timeout_ms)
    for tp, offset in expected.items():
        found = committed[tp]
        assert found is not None, f"group has nothing for {tp}"
        assert found.offset == offset, (tp, found, offset)
        assert found.marker is not None
        assert (found.marker.query_id, found.marker.batch_id) == (checkpoint.query_id(), last)
