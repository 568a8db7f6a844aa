"""Spark partition -> Kafka range map of a batch scan, and its cross-check against the checkpoint WAL."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.errors import PlanNotAlignedError, ScanRangeMismatchError
from airflow_provider_eos.core.plan_alignment import InputRange, cross_check, map_input_partitions
from airflow_provider_eos.core.topic_partition import TopicPartition

T = "in"


def tp(partition: int) -> TopicPartition:
    return TopicPartition(T, partition)


def rng(index: int, partition: int, start: int, end: int) -> InputRange:
    return InputRange(spark_partition=index, topic=T, partition=partition, from_offset=start, until_offset=end)


START = {tp(0): 10, tp(1): 20, tp(2): 30}
END = {tp(0): 15, tp(1): 25, tp(2): 35}


def three_partitions() -> list[InputRange]:
    # Spark orders the scan by its own plan, not by Kafka partition.
    return [rng(2, 0, 10, 15), rng(0, 2, 30, 35), rng(1, 1, 20, 25)]


def test_map_indexes_ranges_by_spark_partition() -> None:
    mapping = map_input_partitions(4, three_partitions())

    assert [r.spark_partition for r in mapping.ranges] == [0, 1, 2]
    assert mapping.for_spark_partition(0).tp == tp(2)
    assert mapping.for_spark_partition(2).describe() == "in-0 [10, 15)"
    assert set(mapping.by_partition()) == {tp(0), tp(1), tp(2)}


def test_lookup_of_a_partition_the_scan_does_not_have_fails() -> None:
    mapping = map_input_partitions(4, three_partitions())

    with pytest.raises(ScanRangeMismatchError, match="Spark partition 3 is not one of the Kafka scan's 3"):
        mapping.for_spark_partition(3)


def test_gap_in_spark_partition_indexes_is_refused() -> None:
    with pytest.raises(ScanRangeMismatchError, match=r"indexes \[0, 2\], expected 0..1"):
        map_input_partitions(4, [rng(0, 0, 10, 15), rng(2, 1, 20, 25)])


def test_kafka_partition_split_over_spark_partitions_is_not_aligned() -> None:
    split = [rng(0, 0, 10, 12), rng(1, 0, 12, 15), rng(2, 1, 20, 25)]

    with pytest.raises(PlanNotAlignedError) as caught:
        map_input_partitions(4, split)

    assert "in-0 by Spark partitions [0, 1]" in caught.value.message
    assert "minPartitions" in caught.value.fix and "writers: driver" in caught.value.fix


def test_backwards_range_is_refused() -> None:
    with pytest.raises(ScanRangeMismatchError, match=r"in-0 \[15, 10\)"):
        map_input_partitions(4, [rng(0, 0, 15, 10)])


def test_partitions_without_new_input_have_no_task() -> None:
    mapping = map_input_partitions(4, [rng(0, 2, 30, 35)])

    assert mapping.partitions_without_task(END) == [tp(0), tp(1)]


def test_ranges_equal_to_the_wal_pass() -> None:
    cross_check(map_input_partitions(4, three_partitions()), start=START, end=END)


def test_partition_without_new_input_and_without_task_passes() -> None:
    idle_end = {**END, tp(1): 20}

    cross_check(map_input_partitions(4, [rng(0, 0, 10, 15), rng(1, 2, 30, 35)]), start=START, end=idle_end)


def test_end_mismatch_names_partition_both_ranges_and_the_fix() -> None:
    ranges = [rng(0, 0, 10, 15), rng(1, 1, 20, 27), rng(2, 2, 30, 35)]

    with pytest.raises(ScanRangeMismatchError) as caught:
        cross_check(map_input_partitions(4, ranges), start=START, end=END)

    message = caught.value.message
    assert "batch 4" in message and "offsets/3..offsets/4" in message
    assert "in-1: Spark partition 1 reads [20, 27), the WAL plans [20, 25)" in message
    assert "in-0" not in message and "in-2" not in message
    assert "eos verify" in caught.value.fix and "checkpoint_location" in caught.value.fix


def test_start_mismatch_is_refused() -> None:
    ranges = [rng(0, 0, 11, 15), rng(1, 1, 20, 25), rng(2, 2, 30, 35)]

    expected = r"in-0: Spark partition 0 reads \[11, 15\), the WAL plans \[10, 15\)"
    with pytest.raises(ScanRangeMismatchError, match=expected):
        cross_check(map_input_partitions(4, ranges), start=START, end=END)


def test_range_of_a_partition_the_wal_does_not_plan_is_refused() -> None:
    ranges = [*three_partitions(), InputRange(spark_partition=3, topic="other", partition=0, from_offset=0,
                                              until_offset=5)]

    expected = r"other-0: Spark partition 3 reads \[0, 5\) but the WAL plans nothing"
    with pytest.raises(ScanRangeMismatchError, match=expected):
        cross_check(map_input_partitions(4, ranges), start=START, end=END)


def test_planned_input_no_spark_partition_reads_is_refused() -> None:
    with pytest.raises(ScanRangeMismatchError, match=r"in-1: the WAL plans \[20, 25\) but no Spark partition reads it"):
        cross_check(map_input_partitions(4, [rng(0, 0, 10, 15), rng(1, 2, 30, 35)]), start=START, end=END)


def test_partition_new_in_the_batch_is_checked_by_its_end_only() -> None:
    start = {tp(0): 10, tp(1): 20}  # partition 2 was added to the topic during batch 4
    mapping = map_input_partitions(4, [rng(0, 0, 10, 15), rng(1, 1, 20, 25), rng(2, 2, 0, 35)])

    cross_check(mapping, start=start, end=END)
    expected = r"in-2: Spark partition 2 reads \[0, 34\), the WAL plans \[\?, 35\)"
    with pytest.raises(ScanRangeMismatchError, match=expected):
        cross_check(map_input_partitions(4, [rng(0, 0, 10, 15), rng(1, 1, 20, 25), rng(2, 2, 0, 34)]),
                    start=start, end=END)


def test_every_problem_is_listed_in_one_error() -> None:
    ranges = [rng(0, 0, 9, 15), rng(1, 2, 30, 36)]

    with pytest.raises(ScanRangeMismatchError) as caught:
        cross_check(map_input_partitions(0, ranges), start=START, end=END)

    message = caught.value.message
    assert "offsets/initial..offsets/0" in message
    assert "in-0: Spark partition 0 reads [9, 15)" in message
    assert "in-2: Spark partition 1 reads [30, 36)" in message
    assert "in-1: the WAL plans [20, 25) but no Spark partition reads it" in message
