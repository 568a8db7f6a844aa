"""What a pipeline reads and writes, as lineage: Kafka topics named the way the apache-kafka provider names them.

One owner for both forms Airflow knows: the Asset URI ``kafka://<bootstrap server>/<topic>`` (the
apache-kafka provider's scheme, so Airflow's asset graph joins our topics with its operators') and
the OpenLineage dataset (namespace ``kafka://<bootstrap server>``, name ``<topic>``, the provider's
own conversion of that URI). The first of the spec's bootstrap servers names the cluster, as its
``host:port`` only: an entry may carry a security protocol (``SASL_SSL://host:9093``, which librdkafka
accepts), which OpenLineage's Kafka naming (``kafka://{host}:{port}``) has no place for.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["OUTPUTS_ALIAS", "KafkaTopicDataset", "PipelineLineage", "cluster_server", "pipeline_lineage"]

#: The Asset alias a submit task declares as its outlet: one DAG runs any pipeline of the folder, so the
#: run's own output topics are attached to it at run time (an event for the pipeline that ran, no other).
OUTPUTS_ALIAS = "eos-pipeline-outputs"


@dataclass(frozen=True)
class KafkaTopicDataset:
    """One topic of one cluster."""

    server: str
    topic: str

    @property
    def namespace(self) -> str:
        """OpenLineage's namespace: the cluster."""
        return f"kafka://{self.server}"

    @property
    def uri(self) -> str:
        """The Asset URI (``kafka://host:port/topic``)."""
        return f"{self.namespace}/{self.topic}"


@dataclass(frozen=True)
class PipelineLineage:
    """The topics a pipeline reads (``inputs``) and writes (``outputs``: the output topic, then the dead-letter one)."""

    inputs: tuple[KafkaTopicDataset, ...]
    outputs: tuple[KafkaTopicDataset, ...]


def cluster_server(bootstrap_servers: str) -> str:
    """The server that names the cluster: the first entry of ``bootstrap_servers``, as ``host:port``.

    A protocol prefix (``SASL_SSL://host:9093``) is dropped: the namespace would otherwise read
    ``kafka://SASL_SSL://host:9093``, which is no URI's authority and joins no other producer's lineage.
    """
    first = bootstrap_servers.split(",")[0].strip()
    return first.split("://", 1)[1] if "://" in first else first


def pipeline_lineage(spec: PipelineSpec) -> PipelineLineage:
    """The lineage of ``spec``: its input topics to its output and dead-letter topics."""
    server = cluster_server(str(spec.kafka["bootstrap.servers"]))
    written = [spec.output_topic, *([spec.dlq_topic] if spec.dlq_topic else [])]
    return PipelineLineage(inputs=tuple(KafkaTopicDataset(server, topic) for topic in spec.input_topics),
                           outputs=tuple(KafkaTopicDataset(server, topic) for topic in written))
