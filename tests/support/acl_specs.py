"""The spec the ACL tests derive their sets from: two input topics, an output and a dead-letter topic."""

from __future__ import annotations

from typing import Any

from airflow_provider_eos.core.spec import PipelineSpec


def orders_spec(**overrides: Any) -> PipelineSpec:
    """Pipeline ``orders`` with ``overrides`` applied to its fields."""
    fields: dict[str, Any] = {
        "name": "orders",
        "kafka": {"bootstrap.servers": "b1:9092"},
        "input_topics": ["orders-in", "refunds-in"],
        "output_topic": "orders-out",
        "dlq_topic": "orders-dlq",
        "group_id": "orders-sink",
        "transactional_id_prefix": "orders-eos",
        "checkpoint_location": "/tmp/checkpoints/orders",
    }
    return PipelineSpec.from_dict({**fields, **overrides})
