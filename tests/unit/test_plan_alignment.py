"""Partition alignment of a micro-batch plan (docs/architecture.md, executor writers): each rule on plain plan trees."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.errors import PlanNotAlignedError
from airflow_provider_eos.core.plan_alignment import (
    KAFKA_SCAN,
    KAFKA_STREAM,
    NARROW_OPERATORS,
    Breach,
    PlanNode,
    decide_alignment,
)


def kafka_scan(**options: str) -> PlanNode:
    return PlanNode(
        name=KAFKA_SCAN,
        description="MicroBatchScan[key#7, value#8, topic#9, partition#10, offset#11L] KafkaV2[Subscribe[in]]",
        details={"stream": KAFKA_STREAM, **options},
    )


def node(name: str, *children: PlanNode, description: str = "") -> PlanNode:
    return PlanNode(name=name, description=description, children=children)


def narrow(child: PlanNode) -> PlanNode:
    """The shape Spark gives a projection and a filter: WholeStageCodegen over codegen'd operators."""
    return node("WholeStageCodegenExec", node("ProjectExec", node("FilterExec", node("InputAdapter", child))))


def test_narrow_plan_is_aligned() -> None:
    decision = decide_alignment(narrow(kafka_scan()))

    assert decision.aligned
    assert decision.operator is None and decision.fix is None and decision.offenders == ()
    assert "aligned" in decision.reason
    decision.require_aligned()


@pytest.mark.parametrize("name", sorted(NARROW_OPERATORS - {KAFKA_SCAN}))
def test_every_known_narrow_operator_keeps_alignment(name: str) -> None:
    assert decide_alignment(node(name, kafka_scan())).aligned


@pytest.mark.parametrize(
    "name",
    [
        "StateStoreRestoreExec", "StateStoreSaveExec", "SessionWindowStateStoreSaveExec",
        "SessionWindowStateStoreRestoreExec", "StreamingDeduplicateExec", "StreamingDeduplicateWithinWatermarkExec",
        "FlatMapGroupsWithStateExec", "FlatMapGroupsInPandasWithStateExec", "TransformWithStateExec",
        "TransformWithStateInPySparkExec", "StreamingSymmetricHashJoinExec", "StreamingGlobalLimitExec",
    ],
)
def test_stateful_operator_is_not_aligned(name: str) -> None:
    decision = decide_alignment(narrow(node(name, kafka_scan(), description=name.removesuffix("Exec"))))

    assert not decision.aligned
    assert decision.offenders[0].breach is Breach.STATEFUL
    assert name in decision.operator
    assert "stateful" in decision.reason
    assert "writers: driver" in decision.fix


def test_shuffle_exchange_is_named_with_its_partitioning() -> None:
    exchange = node("ShuffleExchangeExec", narrow(kafka_scan()),
                    description="Exchange RoundRobinPartitioning(4), REPARTITION_BY_NUM, [plan_id=12]")

    decision = decide_alignment(narrow(exchange))

    assert [o.breach for o in decision.offenders] == [Breach.EXCHANGE]
    assert decision.operator == (
        "Exchange RoundRobinPartitioning(4), REPARTITION_BY_NUM, [plan_id=12] (ShuffleExchangeExec)"
    )
    assert "moves rows between Spark partitions" in decision.reason
    assert "writers: driver" in decision.fix


@pytest.mark.parametrize("name", ["BroadcastExchangeExec", "AQEShuffleReadExec"])
def test_other_exchanges_are_not_aligned(name: str) -> None:
    assert decide_alignment(node(name, kafka_scan())).offenders[0].breach is Breach.EXCHANGE


def test_adaptive_wrappers_are_judged_by_what_they_wrap() -> None:
    # Spark 4.2 runs a stateless micro-batch with a shuffle adaptively: the exchange sits in a query stage.
    exchange = node("ShuffleExchangeExec", narrow(kafka_scan()), description="Exchange RoundRobinPartitioning(4)")
    adaptive = node("AdaptiveSparkPlanExec", node("ShuffleQueryStageExec", exchange, description="ShuffleQueryStage 0"),
                    description="AdaptiveSparkPlan isFinalPlan=true")

    decision = decide_alignment(adaptive)

    assert [o.breach for o in decision.offenders] == [Breach.EXCHANGE]
    assert decision.operator == "Exchange RoundRobinPartitioning(4) (ShuffleExchangeExec)"
    assert decide_alignment(node("AdaptiveSparkPlanExec", narrow(kafka_scan()))).aligned


def test_coalesce_is_not_aligned() -> None:
    decision = decide_alignment(node("CoalesceExec", kafka_scan(), description="Coalesce 1"))

    assert decision.offenders[0].breach is Breach.COALESCE
    assert decision.operator == "Coalesce 1 (CoalesceExec)"


def test_union_of_two_branches_of_one_source_is_not_aligned() -> None:
    decision = decide_alignment(node("UnionExec", narrow(kafka_scan()), narrow(kafka_scan()), description="Union"))

    assert [o.breach for o in decision.offenders] == [Breach.SOURCE, Breach.UNION]
    assert "2 micro-batch scans" in decision.operator
    assert any("two tasks" in o.why for o in decision.offenders)


def test_union_is_named_when_it_is_the_only_breach() -> None:
    decision = decide_alignment(node("UnionExec", narrow(kafka_scan()), description="Union"))

    assert decision.operator == "Union (UnionExec)"
    assert "F.when" in decision.fix


@pytest.mark.parametrize("name", ["BroadcastHashJoinExec", "SortMergeJoinExec", "CartesianProductExec"])
def test_join_is_not_aligned(name: str) -> None:
    decision = decide_alignment(node(name, kafka_scan(), node("LocalTableScanExec")))

    assert decision.offenders[0].breach is Breach.JOIN
    # The static side's scan is an operator not known to be narrow, listed after the join.
    assert decision.offenders[-1].breach is Breach.UNKNOWN


@pytest.mark.parametrize("name", ["CollectLimitExec", "GlobalLimitExec", "TakeOrderedAndProjectExec"])
def test_limit_that_gathers_partitions_is_not_aligned(name: str) -> None:
    assert decide_alignment(node(name, kafka_scan())).offenders[0].breach is Breach.LIMIT


@pytest.mark.parametrize(("option", "value"), [("minPartitions", "6"), ("maxRecordsPerPartition", "1000")])
def test_source_option_that_splits_partitions_is_not_aligned(option: str, value: str) -> None:
    decision = decide_alignment(narrow(kafka_scan(**{option: value})))

    assert decision.offenders[0].breach is Breach.SOURCE_SPLIT
    assert decision.operator == f"Kafka source option {option}={value}"
    assert f"remove the Kafka source option {option}" in decision.fix
    assert "writers: driver" in decision.fix


def test_plan_without_a_kafka_scan_is_not_aligned() -> None:
    decision = decide_alignment(node("LocalTableScanExec"))

    assert Breach.SOURCE in [o.breach for o in decision.offenders]
    assert "0 micro-batch scans" in decision.reason


def test_micro_batch_scan_of_another_source_is_not_aligned() -> None:
    rate = PlanNode(name=KAFKA_SCAN, description="MicroBatchScan[timestamp#0, value#1L] RateStream",
                    details={"stream": "RateStreamMicroBatchStream"})

    decision = decide_alignment(rate)

    assert decision.offenders[0].breach is Breach.SOURCE
    assert "RateStreamMicroBatchStream, not Kafka" in decision.reason


def test_unknown_operator_is_not_aligned_until_known_narrow() -> None:
    decision = decide_alignment(node("SomeFutureExec", kafka_scan(), description="SomeFuture"))

    assert decision.offenders[0].breach is Breach.UNKNOWN
    assert decision.operator == "SomeFuture (SomeFutureExec)"
    assert "not known to keep every row" in decision.reason


def test_stateful_is_named_first_when_several_operators_break_alignment() -> None:
    # The shape of fraud_alerts: a windowed aggregation unioned with the dead letters.
    aggregation = node("StateStoreSaveExec", node("ShuffleExchangeExec", narrow(kafka_scan()),
                                                  description="Exchange hashpartitioning(window#1, user#2, 2)"),
                       description="StateStoreSave")
    plan = node("UnionExec", narrow(aggregation), narrow(kafka_scan()), description="Union")

    decision = decide_alignment(plan)

    assert decision.operator == "StateStoreSave (StateStoreSaveExec)"
    assert [o.breach for o in decision.offenders] == [Breach.STATEFUL, Breach.SOURCE, Breach.EXCHANGE, Breach.UNION]
    assert "stateful plans always need it" in decision.fix


def test_long_renderings_are_cut_short_and_keep_the_class() -> None:
    state_info = "StateStoreSave [window#82-T30000ms, user#74], state info [ checkpoint = file:/tmp/x/state, " * 3

    decision = decide_alignment(node("StateStoreSaveExec", kafka_scan(), description=state_info))

    assert decision.operator.startswith("StateStoreSave [window#82-T30000ms, user#74]")
    assert decision.operator.endswith("... (StateStoreSaveExec)")
    assert len(decision.operator) == 100 + len(" (StateStoreSaveExec)")


def test_require_aligned_raises_naming_operator_and_fix() -> None:
    decision = decide_alignment(node("CoalesceExec", kafka_scan(), description="Coalesce 1"))

    with pytest.raises(PlanNotAlignedError) as caught:
        decision.require_aligned()

    assert "writers: executors cannot run this query" in caught.value.message
    assert "Coalesce 1 (CoalesceExec)" in caught.value.message
    assert "writers: driver" in caught.value.fix


def test_decision_round_trips_as_json() -> None:
    decision = decide_alignment(narrow(kafka_scan(minPartitions="6")))

    assert type(decision).model_validate(decision.to_dict()) == decision
