"""A pipeline's lineage: its topics as the apache-kafka provider's Asset URIs and OpenLineage datasets."""

from __future__ import annotations

from airflow_provider_eos.core.lineage import KafkaTopicDataset, cluster_server, pipeline_lineage
from airflow_provider_eos.core.spec import PipelineSpec


def _spec(**fields: object) -> PipelineSpec:
    return PipelineSpec.from_dict({
        "name": "orders", "kafka": {"bootstrap.servers": "k1:9092, k2:9092"}, "input_topics": ["a", "b"],
        "output_topic": "out", "group_id": "g", "transactional_id_prefix": "t", "checkpoint_location": "/tmp/c",
        **fields})


def test_inputs_are_the_input_topics_and_outputs_the_output_then_the_dead_letter_topic() -> None:
    lineage = pipeline_lineage(_spec(dlq_topic="dead"))
    assert [d.uri for d in lineage.inputs] == ["kafka://k1:9092/a", "kafka://k1:9092/b"]
    assert [d.uri for d in lineage.outputs] == ["kafka://k1:9092/out", "kafka://k1:9092/dead"]
    assert [(d.namespace, d.topic) for d in lineage.outputs] == [
        ("kafka://k1:9092", "out"), ("kafka://k1:9092", "dead")]


def test_without_a_dead_letter_topic_the_output_topic_alone() -> None:
    assert pipeline_lineage(_spec()).outputs == (KafkaTopicDataset("k1:9092", "out"),)


def test_the_uri_is_what_the_apache_kafka_providers_asset_handler_accepts() -> None:
    from urllib.parse import urlsplit

    from airflow.providers.apache.kafka.assets.kafka import convert_asset_to_openlineage, sanitize_uri
    from airflow.sdk import Asset

    dataset = pipeline_lineage(_spec()).inputs[0]
    assert sanitize_uri(urlsplit(dataset.uri)).geturl() == dataset.uri
    converted = convert_asset_to_openlineage(Asset(uri=dataset.uri), None)
    assert (converted.namespace, converted.name) == (dataset.namespace, dataset.topic)


def test_a_security_protocol_prefix_is_not_part_of_the_namespace() -> None:
    lineage = pipeline_lineage(_spec(kafka={"bootstrap.servers": "SASL_SSL://k1:9093,SASL_SSL://k2:9093"}))
    assert [(d.namespace, d.uri) for d in lineage.inputs] == [
        ("kafka://k1:9093", "kafka://k1:9093/a"), ("kafka://k1:9093", "kafka://k1:9093/b")]


def test_the_cluster_server_is_the_first_entry_as_host_and_port() -> None:
    assert cluster_server(" k1:9092 , k2:9092") == "k1:9092"
    assert cluster_server("ssl://[::1]:9093") == "[::1]:9093"
    assert cluster_server("PLAINTEXT://k1:9092") == "k1:9092"
