"""Pre-flight against real brokers: the facts come from the live admin API, not from fixtures.

A broker of its own, started with a low ``transaction.max.timeout.ms``, shows the timeout rule
reading the broker's value; the shared session broker serves the other cases (a good spec,
missing topics, a topic whose ``min.insync.replicas`` exceeds its replication factor, a live
member in the sink group, a lingering transaction under the prefix, a checkpoint of another
query) and ``eos preflight``'s exit codes and JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.preflight import PreflightReport, Status
from airflow_provider_eos.core.presentation import preflight_text
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.cluster_facts import gather_facts
from airflow_provider_eos.kafka.group_offsets import write_committed_offsets
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.preflight import preflight
from tests.integration.test_recovery_cli import group_coordinator_ready  # noqa: F401  (autouse warm-up)
from tests.support.checkpoints import batch_end_offsets, write_checkpoint
from tests.support.kafka import create_topic

pytestmark = pytest.mark.integration

EOS = Path(sys.executable).with_name("eos")
# LocalKafka's readiness probe opens a transaction with librdkafka's default
# transaction.timeout.ms (60000), so a broker whose maximum is lower never comes up; 60000 is
# the lowest maximum the devstack can start with today.
LOW_MAX_TIMEOUT_MS = 30_000


def write_spec(directory: Path, bootstrap: str, **overrides: Any) -> tuple[PipelineSpec, Path]:
    """A spec file (JSON) in ``directory``; the name, group, prefix and checkpoint are unique."""
    name = f"pf{uuid.uuid4().hex[:8]}"
    fields: dict[str, Any] = {
        "name": name,
        "kafka": {"bootstrap.servers": bootstrap},
        "input_topics": [f"{name}-in"],
        "output_topic": f"{name}-out",
        "group_id": f"{name}-sink",
        "transactional_id_prefix": f"{name}-eos",
        "checkpoint_location": str(directory / "checkpoints" / name),
        "trigger": "10 seconds",
        "batch_budget_ms": 20_000,
        "transaction_timeout_ms": 60_000,
        "max_offsets_per_trigger": 1000,
        **overrides,
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(fields))
    return PipelineSpec.load(path), path


def eos_preflight(*args: str) -> subprocess.CompletedProcess[str]:
    assert EOS.exists(), f"the eos entry point is not installed next to {sys.executable}; run `make install`"
    return subprocess.run([str(EOS), "preflight", *args], capture_output=True, text=True, timeout=300, check=False)


def status(report: PreflightReport, code: str) -> Status:
    return report.finding(code).status


@pytest.fixture
def good(tmp_path: Path, bootstrap: str, topic_factory) -> tuple[PipelineSpec, Path]:
    """A pipeline whose topics exist with sound settings, in a specs folder with another pipeline."""
    specs = tmp_path / "specs"
    inp, out, dlq = topic_factory("pf-in", partitions=2), topic_factory("pf-out", 2), topic_factory("pf-dlq")
    spec, path = write_spec(specs, bootstrap, input_topics=[inp], output_topic=out, dlq_topic=dlq)
    write_spec(specs, bootstrap)  # another pipeline, sharing nothing
    return spec, path


def test_a_low_broker_transaction_max_timeout_fires_the_timeout_rule_with_the_brokers_value(tmp_path: Path) -> None:
    from airflow_provider_eos.devstack.broker import LocalKafka

    kafka = LocalKafka(tmp_path / "low-timeout-broker")
    try:
        bootstrap = kafka.up(transaction_max_timeout_ms=LOW_MAX_TIMEOUT_MS, stop_with_pid=os.getpid()).bootstrap_servers
        inp, out = create_topic(bootstrap, "low-in"), create_topic(bootstrap, "low-out")
        spec, path = write_spec(
            tmp_path,
            bootstrap,
            input_topics=[inp],
            output_topic=out,
            transaction_timeout_ms=90_000,
            batch_budget_ms=None,
        )

        result = eos_preflight("--spec", str(path), "--json", "--master", "local[2]")
        assert result.returncode == 1, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert report["ok"] is False and report["errors"] == ["EOS104"], report
        finding = next(f for f in report["findings"] if f["code"] == "EOS104")
        assert f"transaction.max.timeout.ms {LOW_MAX_TIMEOUT_MS} ms" in finding["message"]
        assert "transaction_timeout_ms 90000 ms" in finding["message"] and "broker 1" in finding["message"]
        assert f"set transaction_timeout_ms to {LOW_MAX_TIMEOUT_MS} or less" in finding["fix"]

        # Started anyway, the sink's producer is refused by the broker with the same cause, as a typed error.
        from airflow_provider_eos.core.errors import SinkKafkaError
        from airflow_provider_eos.spark.transactional_producer import TransactionalProducer

        with pytest.raises(SinkKafkaError) as refused:
            TransactionalProducer(spec, spec.transactional_id()).producer(0)
        assert "INVALID_TRANSACTION_TIMEOUT" in refused.value.message, refused.value.message
        assert "transaction.timeout.ms=90000" in refused.value.message and "EOS104" in (refused.value.fix or "")

        # The same broker with a timeout within its maximum: the rule passes, on the broker's real value.
        lowered = spec.with_overrides(transaction_timeout_ms=LOW_MAX_TIMEOUT_MS)
        fixed = preflight(PipelineClients(lowered), master="local[2]").report
        assert status(fixed, "EOS104") is Status.PASS, preflight_text(fixed)
        assert fixed.ok, preflight_text(fixed)
    finally:
        kafka.down()


@pytest.mark.compat
def test_a_good_spec_passes_with_the_clusters_real_configs(good: tuple[PipelineSpec, Path]) -> None:
    spec, path = good
    facts = gather_facts(spec, specs_dir=path.parent, master="local[2]")
    assert facts.live_brokers == 1 and facts.unavailable == {}
    assert facts.topics is not None and facts.topics[spec.input_topics[0]].partitions == 2
    assert facts.topics[spec.output_topic].replication_factor == 1
    assert facts.topics[spec.output_topic].cleanup_policy == "delete"
    assert facts.topics[spec.input_topics[0]].retention_bytes == -1  # Kafka's default: no size limit
    assert facts.group_members == () and facts.transactions == ()
    assert facts.other_specs is not None and len(facts.other_specs) == 2

    report = preflight(PipelineClients(spec), specs_dir=path.parent, master="local[2]").report

    assert report.ok and report.errors == (), preflight_text(report)
    assert report.not_checked == (), preflight_text(report)
    # The test's checkpoint lives under /tmp; the first run has no checkpoint yet.
    assert [f.code for f in report.warnings] == ["EOS307"], preflight_text(report)
    assert [f.code for f in report.infos] == ["EOS310"]
    assert "transaction.max.timeout.ms 900000 ms" in report.finding("EOS104").message
    # The broker reports offsets.retention.minutes itself (Kafka's default, 7 days), not a default filled in here.
    assert facts.broker_configs is not None and facts.broker_configs[1]["offsets.retention.minutes"] == "10080"
    retention = report.finding("EOS108").message
    assert retention.startswith("offsets.retention.minutes 10080 (604800000 ms (7d") and "broker 1 >" in retention
    assert "a single broker" in report.finding("EOS203").message
    assert "is not used by the 1 other pipeline(s)" in report.finding("EOS403").message


def test_missing_topics_and_min_isr_above_replication_fire_their_rules(tmp_path: Path, bootstrap: str) -> None:
    out = create_topic(bootstrap, f"pf-isr-{uuid.uuid4().hex[:8]}", config={"min.insync.replicas": "2"})
    spec, _ = write_spec(tmp_path, bootstrap, output_topic=out, dlq_topic=f"pf-no-dlq-{uuid.uuid4().hex[:8]}")

    report = preflight(PipelineClients(spec), other_specs=(), master="local[2]").report

    assert not report.ok
    assert {"EOS205", "EOS206", "EOS207", "EOS208"} <= {f.code for f in report.errors}, preflight_text(report)
    assert f"input topic {spec.input_topics[0]!r} does not exist" in report.finding("EOS205").message
    assert f"dead-letter topic {spec.dlq_topic!r} does not exist" in report.finding("EOS206").message
    isr = report.finding("EOS207").message
    assert f"output topic {out!r} has min.insync.replicas 2 > replication factor 1" in isr
    assert "1 live broker" in report.finding("EOS208").message


def test_an_input_topic_deleting_by_size_fires_the_retention_rule(tmp_path: Path, bootstrap: str) -> None:
    inp = create_topic(bootstrap, f"pf-bytes-{uuid.uuid4().hex[:8]}",
                       config={"retention.ms": "-1", "retention.bytes": "1048576"})
    spec, _ = write_spec(tmp_path, bootstrap, input_topics=[inp])

    report = preflight(PipelineClients(spec), other_specs=(), master="local[2]").report

    finding = report.finding("EOS212")
    assert finding.status is Status.FAIL and finding in report.warnings, preflight_text(report)
    assert f"input topic {inp!r} has retention.bytes 1048576" in finding.message
    assert "retention.ms" not in finding.message  # -1: unlimited, only the size limit deletes


@pytest.fixture
def member_in_group(good: tuple[PipelineSpec, Path], bootstrap: str) -> Iterator[str]:
    """A consumer that joined the sink group and polls; yields its client id."""
    spec, _ = good
    client_id = f"intruder-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": spec.group_id,
            "client.id": client_id,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([spec.input_topics[0]])
    try:
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the consumer never joined its group"
            consumer.poll(0.5)
        yield client_id
    finally:
        consumer.close()


def test_a_live_member_in_the_sink_group_fires(good: tuple[PipelineSpec, Path], member_in_group: str) -> None:
    spec, path = good

    report = preflight(PipelineClients(spec), specs_dir=path.parent, master="local[2]").report

    finding = report.finding("EOS401")
    assert finding.status is Status.FAIL and not report.ok
    assert member_in_group in finding.message and "STABLE" in finding.message
    assert [f.code for f in report.errors] == ["EOS401"], preflight_text(report)


def test_a_lingering_transaction_under_the_prefix_fires(good: tuple[PipelineSpec, Path], bootstrap: str) -> None:
    spec, path = good
    txn_id = spec.transactional_id(0)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": 60_000})
    producer.init_transactions(60)
    producer.begin_transaction()
    try:
        producer.produce(spec.output_topic, b"never committed", partition=1)
        assert producer.flush(30) == 0

        report = preflight(PipelineClients(spec), specs_dir=path.parent, master="local[2]").report

        finding = report.finding("EOS402")
        assert finding.status is Status.FAIL, preflight_text(report)
        assert txn_id in finding.message and f"{spec.output_topic}-1" in finding.message
        assert "eos abort" in (finding.fix or "")
        # A warning: aborting it is the task after pre-flight, which an error would keep from running.
        assert report.ok
    finally:
        producer.abort_transaction(30)


def test_a_checkpoint_of_another_query_fires(good: tuple[PipelineSpec, Path], bootstrap: str) -> None:
    spec, path = good
    topic = spec.input_topics[0]
    write_checkpoint(
        Path(spec.checkpoint_location),
        topic=topic,
        partitions=2,
        query_id=str(uuid.uuid4()),
        offsets=range(3),
        commits=range(3),
    )
    group_query = str(uuid.uuid4())
    marker = BatchMarker(group_query, 2).encode()
    write_committed_offsets(
        AdminClient({"bootstrap.servers": bootstrap}),
        spec.group_id,
        {tp: (offset, marker) for tp, offset in batch_end_offsets(topic, 2, 2).items()},
    )

    report = preflight(PipelineClients(spec), specs_dir=path.parent, master="local[2]").report

    finding = report.finding("EOS308")
    assert finding.status is Status.FAIL and not report.ok, preflight_text(report)
    assert group_query in finding.message and "up to batch 2" in finding.message
    assert report.finding("EOS407").status is Status.PASS
    assert "last committed batch 2" in report.finding("EOS310").message


def test_eos_preflight_exit_codes_and_json(good: tuple[PipelineSpec, Path], tmp_path: Path, bootstrap: str) -> None:
    spec, path = good

    ok = eos_preflight("--spec", str(path), "--json", "--specs-dir", str(path.parent), "--master", "local[2]")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    data = json.loads(ok.stdout)
    assert data["ok"] is True and data["errors"] == [] and data["pipeline"] == spec.name
    assert {f["code"] for f in data["findings"]} >= {"EOS104", "EOS205", "EOS401", "EOS403"}

    text = eos_preflight("--spec", str(path))
    assert text.returncode == 0, text.stdout + text.stderr
    assert text.stdout.startswith(f"Pre-flight of pipeline {spec.name!r}: PASSED")
    assert "not checked" in text.stdout  # no --specs-dir, no master: those rules say so

    _, missing = write_spec(tmp_path / "bad", bootstrap)
    bad = eos_preflight("--spec", str(missing), "--json")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert {"EOS205", "EOS206"} <= set(json.loads(bad.stdout)["errors"])
    bad_text = eos_preflight("--spec", str(missing))
    assert bad_text.returncode == 1 and "FAILED" in bad_text.stdout and "Fixes:" in bad_text.stdout

    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps({"name": "x"}))
    broken = eos_preflight("--spec", str(invalid), "--json")
    assert broken.returncode == 2
    assert json.loads(broken.stdout)["error"] == "SpecError"
    assert eos_preflight("--spec", str(invalid)).returncode == 2


def test_eos_preflight_refuses_a_prefix_nested_in_another_pipelines(tmp_path: Path, bootstrap: str,
                                                                   topic_factory) -> None:
    """Two spec files in one folder: prefix ``<x>`` and ``<x>-eu``. Kafka's PREFIXED ACL on ``<x>-`` also
    covers ``<x>-eu-0``, so the first pipeline's job principal could fence the second's transactions."""
    specs = tmp_path / "specs"
    inp, out = topic_factory("nest-in", partitions=2), topic_factory("nest-out", 2)
    spec, path = write_spec(specs, bootstrap, input_topics=[inp], output_topic=out)
    nested_prefix = f"{spec.transactional_id_prefix}-eu"
    other, _ = write_spec(specs, bootstrap, transactional_id_prefix=nested_prefix)

    result = eos_preflight("--spec", str(path), "--json", "--specs-dir", str(specs), "--master", "local[2]")

    assert result.returncode == 1, result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert data["errors"] == ["EOS408"], data["errors"]
    finding = next(f for f in data["findings"] if f["code"] == "EOS408")
    assert f"'{spec.transactional_id_prefix}-'" in finding["message"] and other.name in finding["message"]
    assert f"'{nested_prefix}-'" in finding["message"]
    assert {f["code"]: f["status"] for f in data["findings"]}["EOS403"] == "pass"  # not shared, nested

    # The other pipeline's pre-flight refuses it too: its ids are covered by this one's ACL.
    reverse = eos_preflight("--spec", str(specs / f"{other.name}.json"), "--json", "--specs-dir", str(specs))
    assert "EOS408" in json.loads(reverse.stdout)["errors"], reverse.stdout + reverse.stderr
