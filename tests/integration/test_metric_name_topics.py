"""The task metrics' names keep two topics apart: Kafka refuses a topic that differs from another only by ``.``/``_``.

A per-partition lag's name holds the topic with its ``.`` as ``_`` (one StatsD level,
``core/metrics/task_metrics.py``), so ``a.b`` and ``a_b`` would share one name; a pipeline reads
one cluster, and the real broker refuses to hold both (design note 73).
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eos.core.metrics.task_metrics import name_part
from tests.support.kafka import create_topic

pytestmark = [pytest.mark.integration]


def test_the_broker_refuses_a_topic_whose_name_differs_only_by_dot_against_underscore(bootstrap: str) -> None:
    suffix = uuid.uuid4().hex[:8]
    dotted, underscored = f"eu.orders-{suffix}", f"eu_orders-{suffix}"
    assert name_part(dotted) == name_part(underscored)  # the one pair that sanitises alike
    create_topic(bootstrap, dotted)
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held until the answer
    with pytest.raises(KafkaException, match="collides") as refused:
        admin.create_topics([NewTopic(underscored, 1, -1)])[underscored].result(30)
    # The broker's InvalidTopicException, not TOPIC_ALREADY_EXISTS: the names differ.
    assert refused.value.args[0].name() == "TOPIC_EXCEPTION", refused.value
    assert underscored not in admin.list_topics(timeout=10).topics
