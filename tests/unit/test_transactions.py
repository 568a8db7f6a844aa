"""The Kafka-free parts of :mod:`airflow_provider_eos.kafka.transactions_admin`.

The pure transaction logic (lingering, hanging, safety, the abort plan and report) is tested in
``tests/unit/transactions/``. The translation of the spec's Kafka settings for kafka-python is
tested with its owner in ``tests/unit/test_kafka_settings_kafka_python.py``.
"""

from __future__ import annotations

import pytest


def test_fence_refuses_an_id_outside_the_prefix_before_touching_kafka() -> None:
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.core.transactional_ids import TransactionalIdError
    from airflow_provider_eos.kafka.transaction_actions import fence

    spec = PipelineSpec(
        name="p",
        kafka={"bootstrap.servers": "127.0.0.1:1"},
        input_topics=["in"],
        output_topic="out",
        group_id="g",
        transactional_id_prefix="pfx",
        checkpoint_location="/tmp/ckpt",
    )
    for foreign in ("pfx2-0", "pfx-extra-0", "other-0", "pfx-01"):
        with pytest.raises(TransactionalIdError) as raised:
            fence(spec, foreign)
        assert foreign in str(raised.value)
