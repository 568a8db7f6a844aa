"""Partition alignment of a micro-batch plan with its Kafka source (docs/architecture.md), without Spark.

- :mod:`.plan`: the plan as plain values (:class:`PlanNode`, :class:`InputRange`, :class:`BatchPlan`),
  read from Spark by :mod:`airflow_provider_eos.spark.plan_reader`;
- :mod:`.rules`: :func:`decide_alignment`, whether executor writers may run the plan, naming the
  operator that forbids it and the fix;
- :mod:`.ranges`: :func:`map_input_partitions` (Spark partition index -> Kafka range) and
  :func:`cross_check` of those ranges against the checkpoint's write-ahead log.
"""

from __future__ import annotations

from airflow_provider_eos.core.plan_alignment.plan import KAFKA_SCAN, KAFKA_STREAM, BatchPlan, InputRange, PlanNode
from airflow_provider_eos.core.plan_alignment.ranges import InputPartitionMap, cross_check, map_input_partitions
from airflow_provider_eos.core.plan_alignment.rules import (
    NARROW_OPERATORS,
    SPLITTING_OPTIONS,
    WRAPPERS,
    Breach,
    Offender,
    PlanAlignment,
    decide_alignment,
)

__all__ = [
    "KAFKA_SCAN",
    "KAFKA_STREAM",
    "NARROW_OPERATORS",
    "SPLITTING_OPTIONS",
    "WRAPPERS",
    "BatchPlan",
    "Breach",
    "InputPartitionMap",
    "InputRange",
    "Offender",
    "PlanAlignment",
    "PlanNode",
    "cross_check",
    "decide_alignment",
    "map_input_partitions",
]
