"""Marker counting of the control-record bench (bench/control_records.py) and its report rows."""

from __future__ import annotations

import pytest

from bench.control_records import count_markers, marker_cost, summarize_runs


def test_markers_are_offsets_minus_records() -> None:
    # 4 output partitions; 3 transactions each touching every partition: 12 markers.
    assert count_markers({0: 103, 1: 53, 2: 3, 3: 43}, 190) == 12
    assert count_markers({0: 10}, 10) == 0


def test_fewer_offsets_than_records_is_an_error() -> None:
    with pytest.raises(ValueError, match="fewer than the 11 records"):
        count_markers({0: 10}, 11)


def test_marker_cost_per_batch_and_bound() -> None:
    cost = marker_cost(markers=512, batches=2, records=20_000, transactions=32, input_partitions=16,
                       output_partitions=16)
    assert cost["markers_per_batch"] == 256.0
    assert cost["bound_per_batch"] == 256
    assert cost["share_of_bound"] == 1.0
    assert cost["transactions_per_batch"] == 16.0
    assert cost["markers_per_1000_records"] == 25.6
    assert cost["marker_share_of_offsets"] == round(512 / 20_512, 4)


def test_marker_cost_without_batches() -> None:
    cost = marker_cost(markers=0, batches=0, records=0, transactions=0, input_partitions=4, output_partitions=4)
    assert cost["markers_per_batch"] == 0.0
    assert cost["markers_per_1000_records"] is None


def test_summarize_runs_keeps_bound_and_medians() -> None:
    runs = [{"records_per_s": 100.0, "markers_per_batch": 16.0, "transactions_per_batch": 4.0,
             "markers_per_1000_records": 4.0, "batches": 10, "bound_per_batch": 16},
            {"records_per_s": 300.0, "markers_per_batch": 15.0, "transactions_per_batch": 4.0,
             "markers_per_1000_records": 3.75, "batches": 10, "bound_per_batch": 16}]
    summary = summarize_runs(runs)
    assert summary["records_per_s"]["median"] == 200.0
    assert summary["markers_per_batch"]["min"] == 15.0
    assert summary["bound_per_batch"] == 16
    assert summary["runs"] == runs
