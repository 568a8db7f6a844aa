"""Health's opt-in read of the brokers' configuration, ``eos acls --role health --broker-configs``, end to end.

On a secured broker (SASL/SCRAM over TLS, the StandardAuthorizer) a health principal gets its set
through ``eos acls --apply``; an upstream producer's open transaction pins an input partition, so
health reads the brokers' ``transaction.max.timeout.ms`` (the age above which that partition is
hanging). Without the opt-in the read is refused: the threshold is Kafka's default and ``eos
health`` says so, naming the ``eos acls`` command with ``--broker-configs``. With it, the brokers'
own value is the threshold and nothing is said (design notes 62 and 70).

The broker is this module's own, not the shared ``secured_kafka``: that one keeps Kafka's default
``transaction.max.timeout.ms``, which a value read and the fallback give alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from airflow_provider_eos.core.acls import required_acls
from airflow_provider_eos.core.kafka_defaults import KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from tests.support.checkpointed_pipeline import checkpointed_pipeline
from tests.support.kafka import create_topic

pytestmark = pytest.mark.integration

EOS = Path(sys.executable).with_name("eos")

#: The brokers' transaction.max.timeout.ms: 30 minutes, not Kafka's 15, so a value read is told from the default.
BROKERS_MAX_MS = 1_800_000


@pytest.fixture(scope="module")
def long_transactions_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A secured broker (`eos devstack up --security sasl_ssl --transaction-max-timeout-ms 1800000`)."""
    from airflow_provider_eos.devstack.broker import LocalKafka

    assert BROKERS_MAX_MS != KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
    kafka = LocalKafka(tmp_path_factory.mktemp("secured-long-transactions"), security="sasl_ssl")
    try:
        yield kafka.up(transaction_max_timeout_ms=BROKERS_MAX_MS, stop_with_pid=os.getpid())
    finally:
        kafka.down()


def eos(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(EOS), *args], capture_output=True, text=True, timeout=180, check=False)


def eos_json(*args: str, codes: tuple[int, ...] = (0,)) -> dict[str, Any]:
    done = eos(*args, "--json")
    assert done.returncode in codes, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_the_broker_configs_opt_in_lets_health_judge_by_the_brokers_own_maximum(
    long_transactions_kafka: Any, tmp_path: Path,
) -> None:
    from airflow_provider_eos.devstack.security import add_scram_user

    admin_settings = long_transactions_kafka.client_settings()
    admin_config = str(long_transactions_kafka.client_config)
    pipeline = checkpointed_pipeline(admin_settings, lambda stem, partitions=1: create_topic(
        admin_settings, f"{stem}-{uuid.uuid4().hex[:6]}", partitions), tmp_path, stem="bc")
    user = f"{pipeline.spec.name}-health"
    password = add_scram_user(admin_settings, user)
    principal = f"User:{user}"
    health_spec = tmp_path / "health.json"
    health_spec.write_text(json.dumps({**json.loads(pipeline.spec_path.read_text()),
                                       "kafka": {**admin_settings, "sasl.username": user, "sasl.password": password}}))
    acls = ("acls", "--spec", str(health_spec), "--principal", principal, "--role", "health", "--apply",
            "--admin-config", admin_config)
    health = ("health", "--spec", str(health_spec))

    applied = eos_json(*acls)
    assert len(applied["created"]) == len(required_acls(pipeline.spec, principal, "health")), applied
    # An upstream producer's transaction, open on input partition 0: health reads the brokers' maximum.
    upstream = Producer({**admin_settings, "transactional.id": f"upstream-{uuid.uuid4().hex[:6]}",
                         "transaction.timeout.ms": 120_000})
    upstream.init_transactions(30)
    upstream.begin_transaction()
    upstream.produce(pipeline.input_topic, b"open upstream", partition=0)
    assert upstream.flush(30) == 0
    try:
        without = eos_json(*health, codes=(0, 1))
        text_without = eos(*health).stdout
        opted = eos_json(*acls, "--broker-configs")
        with_grant = eos_json(*health, codes=(0, 1))
        text_with = eos(*health).stdout
    finally:
        upstream.abort_transaction(30)
        upstream.flush(5)
        del upstream  # closed now, before the module's broker stops, not reconnecting to it afterwards

    def input_gaps(report: dict[str, Any]) -> list[tuple[int, str]]:
        return [(g["partition"], g["state"]) for g in report["gaps"] if g["role"] == "input"]

    assert input_gaps(without) == [(0, "pinned"), (1, "ok")], without["gaps"]
    # Without the opt-in: Kafka's default, said so, and the grant is the eos acls command with the opt-in.
    assert without["thresholds"]["input_hang_after_ms"] == KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
    (note,) = [n for n in without["notes"] if n.startswith("input_hang_after_ms is Kafka's default")]
    assert f"Refused: Kafka refused {principal} DescribeConfigs" in note, note
    assert (f"`eos acls --spec FILE --principal User:NAME --role health --broker-configs --apply --admin-config "
            f"ADMIN_CONFIG.json`, FILE being the spec of '{pipeline.spec.name}'") in note, note
    assert "kafka-acls.sh" not in note and "Kafka's default" in text_without, text_without
    # The opt-in adds exactly DESCRIBE_CONFIGS on the cluster to what the set held.
    created = [(a["resource_type"], a["name"], a["operation"]) for a in opted["created"]]
    assert created == [("CLUSTER", "kafka-cluster", "DESCRIBE_CONFIGS")], opted
    assert len(opted["already_present"]) == len(applied["created"]), opted
    # With it: the brokers' own 30 minutes is the threshold, and nothing speaks of Kafka's default.
    assert with_grant["thresholds"]["input_hang_after_ms"] == BROKERS_MAX_MS, with_grant["thresholds"]
    assert input_gaps(with_grant) == [(0, "pinned"), (1, "ok")], with_grant["gaps"]
    assert not [n for n in with_grant["notes"] if "input_hang" in n], with_grant["notes"]
    assert "Kafka's default" not in text_with and "--broker-configs" not in text_with, text_with
