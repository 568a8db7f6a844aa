"""The sliding window (core/health/window.py) and the JSON form of the samples the health trigger carries."""

from __future__ import annotations

import json

import pytest

from airflow_provider_eos.core.health import HealthError, HealthSample, LagWindow
from tests.support.health_samples import OUT0, PREFIX, SECOND, T0, rich_sample, run

# -- the window --------------------------------------------------------------------------------


def test_window_round_trips_through_json() -> None:
    window = LagWindow([rich_sample(0), rich_sample(5)], max_samples=4)
    data = json.loads(json.dumps(window.to_dict()))
    restored = LagWindow.from_dict(data)
    assert restored == window
    assert restored.samples[0].transactions[0].partitions == frozenset({OUT0})
    assert restored.max_samples == 4 and len(restored) == 2 and restored.span_ms == 5 * SECOND
    # Evaluation of the restored window is the same report.
    assert run(restored.samples) == run(window.samples)


def test_window_keeps_the_newest_samples() -> None:
    window = LagWindow([rich_sample(t) for t in range(5)], max_samples=3)
    assert [s.taken_at_ms for s in window.samples] == [T0 + t * SECOND for t in (2, 3, 4)]
    window.add(rich_sample(9))
    assert window.latest is not None and window.latest.taken_at_ms == T0 + 9 * SECOND and len(window) == 3
    smaller = LagWindow.from_dict(window.to_dict(), max_samples=2)
    assert [s.taken_at_ms for s in smaller.samples] == [T0 + 4 * SECOND, T0 + 9 * SECOND]


def test_window_refuses_samples_given_out_of_order_and_bad_sizes() -> None:
    with pytest.raises(HealthError, match="older than the window's newest"):
        LagWindow([rich_sample(5), rich_sample(4)])
    with pytest.raises(HealthError, match="at least one sample"):
        LagWindow(max_samples=0)


def test_a_sample_whose_clock_went_back_drops_the_samples_it_places_in_its_future() -> None:
    # The sensor's check on a worker whose clock runs 60 s ahead, then the triggerer's samples: design note 65.
    window = LagWindow([rich_sample(0), rich_sample(10), rich_sample(70)])
    assert window.add(rich_sample(40)) == 1
    assert [s.taken_at_ms for s in window.samples] == [T0, T0 + 10 * SECOND, T0 + 40 * SECOND]
    note = window.samples[-1].notes[-1]
    assert "30s before the window's newest" in note and "1 newer sample(s) dropped" in note and "NTP" in note
    # The samples that follow come from the new clock: nothing more is dropped, no note.
    assert window.add(rich_sample(41)) == 0 and window.samples[-1].notes == rich_sample(41).notes
    # Still a window in order: it crosses the trigger's serialization and is evaluated.
    assert LagWindow.from_dict(json.loads(json.dumps(window.to_dict()))) == window
    assert run(window.samples).evaluated_at_ms == T0 + 41 * SECOND


def test_a_sample_earlier_than_every_held_one_starts_the_window_again() -> None:
    window = LagWindow([rich_sample(50), rich_sample(60)])
    assert window.add(rich_sample(5)) == 2
    assert [s.taken_at_ms for s in window.samples] == [T0 + 5 * SECOND]
    assert "2 newer sample(s) dropped" in window.samples[0].notes[-1]
    # A sample of the same millisecond is in order: nothing dropped.
    assert window.add(rich_sample(5)) == 0 and len(window) == 2


def test_window_from_dict_rejects_foreign_data_and_accepts_none() -> None:
    assert len(LagWindow.from_dict(None)) == 0
    with pytest.raises(HealthError, match="format 1"):
        LagWindow.from_dict({"samples": []})
    with pytest.raises(HealthError, match="no list of samples"):
        LagWindow.from_dict({"format": 1, "samples": "x"})
    with pytest.raises(HealthError, match="malformed"):
        LagWindow.from_dict({"format": 1, "samples": [{"inputs": []}]})


def test_sample_json_keeps_its_keys() -> None:
    data = json.loads(json.dumps(rich_sample(0).model_dump(mode="json")))
    assert set(data) == {
        "taken_at_ms", "inputs", "outputs", "checkpoint_exists", "query_id", "last_committed",
        "last_commit_time_ms", "verification", "transactions", "notes", "writers", "broker_protocol",
        "transaction_max_timeout_ms", "transaction_max_timeout_unread", "run_active", "run_started_at_ms",
        "in_flight",
    }
    assert data["inputs"][1] == {
        "topic": "orders-eu", "partition": 0, "lso": 7, "hwm": 9, "log_start": 2, "committed": None,
        "marker_batch": None, "waiting_ms": None,
    }
    assert data["outputs"][1] == {"topic": "dlq-x", "partition": 0, "role": "dlq", "lso": 1, "hwm": 1}
    assert data["verification"] == {"verdict": "KAFKA_BEHIND", "ok": False, "next_step": "Rewind", "note": None}
    assert set(data["transactions"][0]) == {
        "transactional_id", "state", "producer_id", "producer_epoch", "start_time_ms", "timeout_ms", "partitions",
        "coordinator_id",
    }
    assert data["notes"] == ["topic 'x' does not exist"]
    assert HealthSample.model_validate(data) == rich_sample(0)


def test_a_window_serialized_before_the_pydantic_models_still_reads() -> None:
    # A triggerer may hold a window written by the previous release: partitions as [topic, n] pairs.
    old_sample = {
        "taken_at_ms": T0,
        "inputs": [{"topic": "orders", "partition": 0, "lso": 100, "hwm": 100, "log_start": 0, "committed": 40,
                    "marker_batch": 3}],
        "outputs": [{"topic": "orders-out", "partition": 0, "role": "output", "lso": 5, "hwm": 9}],
        "checkpoint_exists": True, "query_id": "q1", "last_committed": 3, "last_commit_time_ms": T0,
        "verification": {"verdict": "IN_SYNC", "ok": True, "next_step": None, "note": None},
        "transactions": [{"transactional_id": f"{PREFIX}-0", "state": "Ongoing", "producer_id": 7,
                          "producer_epoch": 0, "start_time_ms": T0, "timeout_ms": 60_000,
                          "partitions": [["orders-out", 0]], "coordinator_id": None}],
        "notes": [],
    }
    window = LagWindow.from_dict({"format": 1, "max_samples": 10, "samples": [old_sample]})
    (restored,) = window.samples
    assert restored.inputs[0].committed == 40 and restored.outputs[0].tp == OUT0
    assert restored.transactions[0].partitions == frozenset({OUT0})


def test_a_malformed_sample_names_where_it_is_malformed() -> None:
    with pytest.raises(HealthError, match=r"samples\.0\.inputs\.0\.lso"):
        LagWindow.from_dict({"format": 1, "samples": [{"taken_at_ms": T0, "inputs": [{"topic": "t", "partition": 0}]}]})


def test_window_repr_names_its_size_and_span() -> None:
    window = LagWindow([rich_sample(0), rich_sample(5)], max_samples=4)
    assert repr(window) == str(window) == "LagWindow(2 of 4 samples, span 5s)"
    assert len(run(window.samples).partitions) == 2
