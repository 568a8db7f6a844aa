"""The three Kafka client dialects on the secured devstack (SASL/SCRAM-SHA-512 over TLS), from ONE ``kafka`` dict.

The spec's librdkafka settings (security.protocol, sasl.mechanism, sasl.username, sasl.password,
ssl.ca.location), or an Airflow ``kafka`` connection whose extras hold them, drive: the sink's
transactional producer and the admin (confluent-kafka), the transaction admin (kafka-python),
and the Java client under Spark (the Kafka source and Spark's own Kafka writer, the
at-least-once sink). A setting a dialect cannot take fails before anything starts, naming it.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.errors import KafkaConfigError, KafkaLoginError
from airflow_provider_eos.core.markers import CommittedOffset
from airflow_provider_eos.core.spec import Mode, PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka import transactions_admin
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets
from airflow_provider_eos.kafka.settings import (
    admin_config,
    group_metadata_consumer_config,
    spark_sink_options,
    spark_source_options,
)
from airflow_provider_eos.spark.transactional_producer import TransactionalProducer
from tests.support.kafka import consume_all, create_topic, produce

pytestmark = pytest.mark.integration

CONNECTION_ID = "eos_secured"


def pipeline(kafka: dict[str, Any], tmp_path: Path, **topics: str) -> PipelineSpec:
    name = f"secured-{uuid.uuid4().hex[:8]}"
    return PipelineSpec(
        name=name, kafka=kafka, input_topics=[topics.get("input", f"{name}-in")],
        output_topic=topics.get("output", f"{name}-out"), group_id=f"{name}-g", transactional_id_prefix=name,
        checkpoint_location=str(tmp_path / "checkpoint"),
    )


@pytest.fixture(params=["spec", pytest.param("connection", marks=pytest.mark.airflow)])
def secured_spec(request, secured_admin_settings, tmp_path, monkeypatch) -> PipelineSpec:
    """A pipeline whose kafka settings are the admin's: in the spec itself, or in an Airflow ``kafka`` connection."""
    admin = dict(secured_admin_settings)
    topics = {"input": create_topic(admin, f"in-{uuid.uuid4().hex[:8]}"),
              "output": create_topic(admin, f"out-{uuid.uuid4().hex[:8]}")}
    if request.param == "spec":
        return pipeline(admin, tmp_path, **topics)
    request.getfixturevalue("airflow_home")
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONNECTION_ID.upper()}", json.dumps({"conn_type": "kafka", "extra": admin}))
    from airflow_provider_eos.hooks.kafka_admin import EosKafkaHook

    # The spec names another cluster and no credentials: the connection's settings replace them.
    placeholder = pipeline({"bootstrap.servers": "elsewhere:9092", "linger.ms": 7}, tmp_path, **topics)
    spec = EosKafkaHook(CONNECTION_ID).pipeline_spec(placeholder)
    assert spec.kafka == {**admin, "linger.ms": 7}
    return spec


def test_sink_producer_and_admin_librdkafka(secured_spec, secured_admin_settings):
    spec = secured_spec
    producer = TransactionalProducer(spec, spec.transactional_id(0))
    group = Consumer(group_metadata_consumer_config(spec))
    try:
        with producer.transaction(0) as transaction:
            for i in range(3):
                transaction.produce(spec.output_topic, value=f"v{i}".encode())
            producer.send_offsets(transaction, {TopicPartition(spec.input_topics[0], 0): (3, "batch-0")},
                                  group.consumer_group_metadata())
            producer.commit(transaction, 0)
    finally:
        producer.close()
        group.close()
    admin = AdminClient(admin_config(spec))
    assert {spec.input_topics[0], spec.output_topic} <= set(admin.list_topics(timeout=10).topics)
    # The product's reader: require_stable, and UNSTABLE_OFFSET_COMMIT waited out until the commit's
    # marker is applied (a bare read right after the commit found no offset yet: -1001 in CI).
    source = TopicPartition(spec.input_topics[0], 0)
    found = read_committed_offsets(admin, spec.group_id, [source], transaction_timeout_ms=spec.transaction_timeout_ms)
    assert found == {source: CommittedOffset(3, "batch-0")}
    assert [m.value() for m in consume_all(dict(secured_admin_settings), spec.output_topic)] == [b"v0", b"v1", b"v2"]


def test_transaction_admin_kafka_python(secured_spec):
    spec = secured_spec
    producer = TransactionalProducer(spec, spec.transactional_id(0))
    with producer.transaction(0) as transaction:
        transaction.produce(spec.output_topic, value=b"open")
        transaction.flush(30)
        with transactions_admin.admin_client(spec) as admin:
            listed = {t.transactional_id for t in transactions_admin.list_transactions(admin)}
            scanned = transactions_admin.scan_prefix(admin, spec.transactional_id_prefix)
            assert spec.transactional_id(0) in listed
            assert [t.transactional_id for t in scanned] == [spec.transactional_id(0)]
            assert TopicPartition(spec.output_topic, 0) in scanned[0].partitions
            assert transactions_admin.broker_max_transaction_timeout_ms(admin) == 900_000
        producer.commit(transaction, 0)
    producer.close()


def test_a_wrong_password_fails_the_transaction_admin_naming_the_refused_login(secured_admin_settings):
    wrong = {**secured_admin_settings, "sasl.password": "not-the-password"}
    with pytest.raises(KafkaLoginError) as failed, transactions_admin.admin_client(wrong, timeout_ms=30_000):
        pass
    # librdkafka's login answer, not kafka-python's "unable to bootstrap" after the full timeout.
    assert "refused the SASL login of user 'admin' (SCRAM-SHA-512)" in failed.value.message
    assert "invalid credentials" in failed.value.message and "sasl.password" in failed.value.fix
    assert "not-the-password" not in str(failed.value) + failed.value.fix


@pytest.mark.spark
def test_spark_source_and_spark_writer_java_client(secured_spec, secured_admin_settings, spark):
    from airflow_provider_eos.spark.at_least_once import AtLeastOnceKafkaSink

    spec = secured_spec
    admin = dict(secured_admin_settings)
    produce(admin, spec.input_topics[0], [(b"k1", b"a"), (b"k2", b"b")])
    source = spark_source_options(spec)
    assert source["kafka.sasl.mechanism"] == "SCRAM-SHA-512" and source["kafka.ssl.truststore.type"] == "PEM"
    read = (spark.read.format("kafka").options(**source).option("subscribe", spec.input_topics[0])
            .option("startingOffsets", "earliest").option("kafka.isolation.level", "read_committed").load())
    rows = read.select("key", "value").collect()
    assert sorted((bytes(r.key), bytes(r.value)) for r in rows) == [(b"k1", b"a"), (b"k2", b"b")]

    # Spark's own Kafka writer, as the at-least-once sink calls it, and directly with the sink options.
    AtLeastOnceKafkaSink(spec)(read.select("key", "value"), 0)
    frame = spark.createDataFrame([(b"k3", b"c")], "key binary, value binary")
    frame.write.format("kafka").options(**spark_sink_options(spec)).option("topic", spec.output_topic).save()
    written = [(m.key(), m.value()) for m in consume_all(admin, spec.output_topic)]
    assert sorted(written) == [(b"k1", b"a"), (b"k2", b"b"), (b"k3", b"c")]


@pytest.mark.spark
def test_a_wrong_password_fails_the_spark_source_with_the_brokers_reason(secured_admin_settings, spark, tmp_path):
    admin = dict(secured_admin_settings)
    topic = create_topic(admin, f"wrong-{uuid.uuid4().hex[:8]}")
    spec = pipeline({**admin, "sasl.password": "not-the-password"}, tmp_path, input=topic)
    started = time.monotonic()
    with pytest.raises(Exception, match="Authentication failed") as failed:
        (spark.read.format("kafka").options(**spark_source_options(spec)).option("subscribe", topic)
         .option("startingOffsets", "earliest").load().collect())
    assert time.monotonic() - started < 90, "a refused login must fail the read, not hang it"
    assert "not-the-password" not in str(failed.value)


@pytest.mark.spark
@pytest.mark.parametrize(("key", "value", "mode"), [
    # No Java equivalent: the Java client always verifies certificates (the source refuses it).
    ("enable.ssl.certificate.verification", False, Mode.EXACTLY_ONCE),
    # A producer setting only Spark's own Kafka writer (the at-least-once sink) cannot take.
    ("partitioner", "consistent_random", Mode.AT_LEAST_ONCE),
])
def test_an_untranslatable_setting_fails_before_the_query_starts_naming_it(
    secured_admin_settings, spark, tmp_path, key, value, mode
):
    from airflow_provider_eos.spark.job import start_query

    admin = dict(secured_admin_settings)
    spec = pipeline({**admin, key: value}, tmp_path, input=create_topic(admin, f"u-{uuid.uuid4().hex[:8]}"))
    with pytest.raises(KafkaConfigError) as refused:
        start_query(spark, spec, mode)
    assert f"kafka[{key!r}] for the Java client under Spark" in refused.value.message and refused.value.fix
    assert spark.streams.active == [], "nothing started"
    assert not Path(spec.checkpoint_location).exists()


def test_a_setting_kafka_python_cannot_take_fails_before_connecting(secured_admin_settings, tmp_path):
    admin = dict(secured_admin_settings)
    inline_ca = Path(admin.pop("ssl.ca.location")).read_text()
    # librdkafka and the Java client take the CA inline; kafka-python only from a file.
    spec = pipeline({**admin, "ssl.ca.pem": inline_ca}, tmp_path)
    assert spark_source_options(spec)["kafka.ssl.truststore.certificates"].startswith("-----BEGIN CERTIFICATE-----")
    started = time.monotonic()
    with pytest.raises(KafkaConfigError) as refused, transactions_admin.admin_client(spec):
        pass
    assert time.monotonic() - started < 2, "refused by the translation, before any connection attempt"
    assert "kafka['ssl.ca.pem'] for kafka-python" in refused.value.message
    assert "ssl.ca.location" in (refused.value.fix or "")
