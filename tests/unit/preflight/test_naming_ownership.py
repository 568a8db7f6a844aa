"""EOS4xx: naming and ownership pass on good facts and fail naming the values."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import TxnState
from tests.unit.preflight.builders import (
    MARKER_3,
    Case,
    assert_fails,
    assert_passes,
    case_id,
    facts_,
    good_spec,
    group_offsets,
    other_spec,
    transaction,
    unchanged,
)

PASSES: list[Case] = [
    *unchanged("EOS4"),
    ("EOS401", facts_(group_state="DEAD"), ["DEAD"]),
    ("EOS402", transaction("orders-eos2-0"), []),  # another prefix's id
    ("EOS402", transaction("orders-eos-0", TxnState.PREPARE_COMMIT), []),  # completing on its own
    ("EOS403", facts_(other_specs=()), ["0 other"]),
    ("EOS405", other_spec(checkpoint_location="s3a://bucket/checkpoints/orders-old"), []),
    ("EOS406", facts_(other_specs=(good_spec(kafka={"bootstrap.servers": "elsewhere:9092"}),)), []),
    ("EOS407", facts_(group_offsets={TopicPartition("orders-in", 0): None}), ["no committed offsets"]),
    # 'orders-eos2-' does not begin with 'orders-eos-': no '-' boundary, no overlap.
    ("EOS408", other_spec(transactional_id_prefix="orders-eos2"), ["'orders-eos-'", "other pipeline"]),
    ("EOS408", other_spec(transactional_id_prefix="orders-eo"), []),  # 'orders-eo-' begins no id of 'orders-eos'
    ("EOS408", other_spec(transactional_id_prefix="orders-eos"), []),  # shared, not nested: EOS403 says so
    ("EOS408", facts_(other_specs=()), ["0 other"]),
]

FAILS: list[Case] = [
    ("EOS401", facts_(group_state="STABLE", group_members=("probe on 10.0.0.7 (member m-1)",)), ["probe", "STABLE"]),
    ("EOS402", transaction("orders-eos-0"), ["orders-eos-0", "4001", "orders-out-1"]),
    ("EOS403", other_spec(transactional_id_prefix="orders-eos"), ["orders-eos", "billing"]),
    ("EOS404", other_spec(group_id="orders-sink"), ["orders-sink", "billing"]),
    ("EOS405", other_spec(checkpoint_location="s3://bucket/checkpoints/orders/"), ["billing"]),
    ("EOS406", other_spec(name="orders"), ["orders", "billing-sink"]),
    ("EOS407", group_offsets(MARKER_3, ""), ["orders-in-1", "no marker"]),
    ("EOS407", group_offsets(MARKER_3, "spark-app"), ["spark-app"]),
    # Their ACL on 'orders-' also covers this pipeline's 'orders-eos-0', and the other way round.
    ("EOS408", other_spec(transactional_id_prefix="orders"), ["'orders-'", "'orders-eos-'", "billing"]),
    ("EOS408", other_spec(transactional_id_prefix="orders-eos-eu"), ["'orders-eos-'", "'orders-eos-eu-'", "billing"]),
]


@pytest.mark.parametrize("case", PASSES, ids=case_id)
def test_rule_passes(case: Case) -> None:
    assert_passes(case)


@pytest.mark.parametrize("case", FAILS, ids=case_id)
def test_rule_fails_naming_the_values(case: Case) -> None:
    assert_fails(case)
