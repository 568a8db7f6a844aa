"""What a pipeline reads and writes, as lineage: Kafka topics named the way the apache-kafka provider names them.

One owner for both forms Airflow knows: the Asset URI ``kafka://<bootstrap server>/<topic>`` (the
apache-kafka provider's scheme, so Airflow's asset graph joins our topics with its operators') and
the OpenLineage dataset (namespace ``kafka://<bootstrap server>``, name ``<topic>``, the provider's
own conversion of that URI). The first of the spec's bootstrap servers names the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["OUTPUTS_ALIAS", "KafkaTopicDataset", "PipelineLineage", "pipeline_lineage"]

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


def pipeline_lineage(spec: PipelineSpec) -> PipelineLineage:
    """The lineage of ``spec``: its input topics to its output and dead-letter topics."""
    server = str(spec.kafka["bootstrap.servers"]).split(",")[0].strip()
    written = [spec.output_topic, *([spec.dlq_topic] if spec.dlq_topic else [])]
    return PipelineLineage(inputs=tuple(KafkaTopicDataset(server, topic) for topic in spec.input_topics),
                           outputs=tuple(KafkaTopicDataset(server, topic) for topic in written))
