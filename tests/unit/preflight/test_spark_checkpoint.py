"""EOS3xx: Spark settings and the checkpoint pass on good facts and fail naming the values."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.preflight import CheckpointFacts
from tests.unit.preflight.builders import (
    OTHER_QUERY,
    QUERY,
    Case,
    Mutation,
    assert_fails,
    assert_passes,
    case_id,
    facts_,
    group_offsets,
    spec,
    unchanged,
)

RETAIN = "spark.sql.streaming.minBatchesToRetain"


def retain(value: str) -> Mutation:
    return spec(spark_conf={RETAIN: value})


PASSES: list[Case] = [
    *unchanged("EOS3"),
    ("EOS301", spec(kafka={"bootstrap.servers": "b:1", "isolation.level": "read_committed"}), []),
    ("EOS302", spec(spark_conf={"failOnDataLoss": "true"}), []),
    ("EOS303", spec(spark_conf={"asyncProgressTrackingEnabled": "false"}), []),
    ("EOS305", facts_(master="local[2]"), ["local[2]"]),
    # A local path is fine when driver and checkpoint share the host.
    ("EOS305", lambda f: facts_(master="local[*]")(spec(checkpoint_location="/data/checkpoints/orders")(f)), []),
    ("EOS305", facts_(master="yarn"), ["shared storage"]),
    ("EOS307", spec(checkpoint_location="/var/lib/eos/checkpoints/orders"), []),
    ("EOS308", facts_(checkpoint=CheckpointFacts("s3a://x", False), group_offsets={}), ["first run"]),
    # A checkpoint that has committed nothing yet (batch 0 planned or not): the group has nothing to hold.
    ("EOS308", lambda f: facts_(checkpoint=CheckpointFacts("s3a://x", True, QUERY, None, 0))(group_offsets("", "")(f)),
     ["no batch committed yet", "no batch markers"]),
    ("EOS308", lambda f: facts_(checkpoint=CheckpointFacts("s3a://x", True, QUERY))(facts_(group_offsets={})(f)),
     ["no batch committed yet"]),
    # At-least-once writes no markers: nothing to compare.
    ("EOS308", lambda f: spec(mode="at-least-once")(group_offsets("", "")(f)), ["at-least-once"]),
    # Spark's default 100, with the trigger of the good spec (10 s): 98 batches, 980 s.
    ("EOS311", lambda f: f, ["default", "=100", "offsets/C-1"]),
    ("EOS312", lambda f: f, ["default", "98 batch", "16m20s"]),
    ("EOS311", retain("2"), [f"{RETAIN}']='2'", "offsets/P-2..P"]),
    ("EOS312", retain("10"), ["'10'", "at most 8 batch"]),
    ("EOS312", lambda f: retain("10")(spec(trigger="available_now")(f)), ["at most 8 batch"]),
]

FAILS: list[Case] = [
    ("EOS301", spec(kafka={"bootstrap.servers": "b:1", "isolation.level": "read_uncommitted"}), ["read_uncommitted"]),
    ("EOS301", spec(spark_conf={"spark.kafka.isolation.level": "read_uncommitted"}), ["spark_conf"]),
    ("EOS302", spec(spark_conf={"failOnDataLoss": "false"}), ["failOnDataLoss"]),
    ("EOS302", spec(kafka={"bootstrap.servers": "b:1", "failOnDataLoss": False}), ["kafka"]),
    ("EOS303", spec(spark_conf={"asyncProgressTrackingEnabled": "true"}), ["asyncProgressTrackingEnabled"]),
    ("EOS304", spec(max_offsets_per_trigger=None), ["null"]),
    ("EOS305", spec(checkpoint_location="/data/checkpoints/orders"), ["/data/checkpoints/orders", "spark://"]),
    ("EOS305", spec(checkpoint_location="file:///data/checkpoints/orders"), ["file:///data"]),
    ("EOS306", spec(checkpoint_location="memory://checkpoints/orders"), ["memory://"]),
    ("EOS307", spec(checkpoint_location="/tmp/checkpoints/orders"), ["/tmp/checkpoints/orders"]),
    ("EOS307", spec(checkpoint_location="file:///var/tmp/orders"), ["/var/tmp/orders"]),
    ("EOS308", group_offsets(BatchMarker(OTHER_QUERY, 9).encode()), [OTHER_QUERY, QUERY, "batch 9"]),
    ("EOS308", facts_(checkpoint=CheckpointFacts("s3a://x", False)), ["no checkpoint", QUERY]),
    # The checkpoint committed batch 3 but the group lost (or never had) the markers: the next batch stops the job.
    ("EOS308", group_offsets("", ""), ["committed batch 3", "holds no batch markers", "InconsistentOffsetsError"]),
    ("EOS308", facts_(group_offsets={}), ["committed batch 3", "holds no batch markers"]),
    ("EOS309", spec(mode="at-least-once"), ["at-least-once"]),
    ("EOS310", facts_(checkpoint=CheckpointFacts("s3a://x", True, QUERY, 3, 4)), ["batch 4", "3"]),
    ("EOS310", facts_(checkpoint=CheckpointFacts("s3a://x", False)), ["startingOffsets"]),
    ("EOS311", retain("1"), ["'1'", "offsets/C-1 is gone", "at least 2"]),
    ("EOS311", retain("0"), ["'0'", "has to be positive"]),
    ("EOS311", retain("-5"), ["'-5'", "has to be positive"]),
    ("EOS311", retain("ten"), ["'ten'", "not a 32-bit integer"]),
    ("EOS311", retain("3000000000"), ["'3000000000'", "not a 32-bit integer"]),
    ("EOS312", retain("9"), ["'9'", "offsets/K-1", "at most 7 batch", "1m10s", "10 leaves room for 8"]),
    ("EOS312", retain("2"), ["'2'", "no rewind is possible"]),
    ("EOS312", retain("0"), ["'0'", "EOS311"]),
]


@pytest.mark.parametrize("case", PASSES, ids=case_id)
def test_rule_passes(case: Case) -> None:
    assert_passes(case)


@pytest.mark.parametrize("case", FAILS, ids=case_id)
def test_rule_fails_naming_the_values(case: Case) -> None:
    assert_fails(case)
