"""The reachability probe against the real broker: it answers at once, and the use cases then run as before.

Its failures (a closed port, a port that never answers) are tests/unit/test_kafka_unreachable.py;
here the other side: a real broker passes the probe well within the default wait, ``eos verify``
runs against it, and a host name that does not resolve is the same sentence with the resolver's
words.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from airflow_provider_eos.core.errors import KafkaUnreachableError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.reachability import DEFAULT_CONNECT_TIMEOUT_S, reachable_admin
from airflow_provider_eos.usecases.clients import PipelineClients


def spec_of(bootstrap: str, tmp_path: Path, input_topic: str) -> PipelineSpec:
    return PipelineSpec(
        name="reach", kafka={"bootstrap.servers": bootstrap}, input_topics=[input_topic],
        output_topic=f"reach-out-{uuid.uuid4().hex[:8]}", group_id=f"reach-{uuid.uuid4().hex[:8]}",
        transactional_id_prefix=f"reach-{uuid.uuid4().hex[:8]}", checkpoint_location=str(tmp_path / "checkpoint"),
    )


def test_a_real_broker_answers_the_probe_at_once(bootstrap: str) -> None:
    started = time.monotonic()
    admin = reachable_admin("admin", {"bootstrap.servers": bootstrap})
    assert time.monotonic() - started < DEFAULT_CONNECT_TIMEOUT_S
    assert admin.describe_cluster(request_timeout=10).result(10).nodes, "the probe's client serves requests"


def test_eos_verify_against_the_real_broker_runs_past_the_probe(bootstrap: str, topic_factory, tmp_path: Path) -> None:
    spec = spec_of(bootstrap, tmp_path, topic_factory("reach-in", partitions=2))
    spec_file = tmp_path / "reach.json"
    spec_file.write_text(spec.to_json())
    done = subprocess.run([sys.executable, "-m", "airflow_provider_eos.cli", "verify", "--spec", str(spec_file),
                           "--json"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["overall"] == "IN_SYNC"  # nothing committed yet: a first run passes

    clients = PipelineClients(spec)
    clients.require_kafka()
    assert clients.admin is clients.admin, "one probe, one admin client for the use case's requests"


def test_a_host_that_does_not_resolve_is_the_same_sentence(tmp_path: Path) -> None:
    spec = spec_of("no-such-broker.invalid:9092", tmp_path, "in")
    with pytest.raises(KafkaUnreachableError) as unreachable:
        PipelineClients(spec, connect_timeout_s=2).require_kafka()
    assert unreachable.value.message.startswith("no Kafka broker answered at no-such-broker.invalid:9092 within 2 s")
    assert "resolve" in unreachable.value.message.lower(), unreachable.value.message
