"""The bench's throughput ratios, scaling and target verdicts (bench/ratios.py), on hand-made runs."""

from __future__ import annotations

import pytest

from bench.measure import summarize
from bench.ratios import (
    label,
    median_ratio,
    mode_key,
    ordered_keys,
    paired_ratio,
    ratios,
    scaling,
    split_key,
    target_verdict,
)


def _runs(*rates: float | None) -> list[dict | None]:
    return [None if r is None else {"records_per_s": r} for r in rates]


def _summary(runs: dict[str, list[dict | None]]) -> dict[str, dict]:
    return {key: {"records_per_s": summarize([r["records_per_s"] for r in items if r], 1)}
            for key, items in runs.items()}


def test_mode_keys_round_trip_and_order() -> None:
    assert mode_key("a") == "a"
    assert mode_key("c_e", 2) == "c_e@2"
    assert split_key("c_e@2") == ("c_e", 2)
    assert split_key("a") == ("a", None)
    assert ordered_keys((1, 2)) == ["a", "b@1", "n@1", "c_d@1", "c_e@1", "c_p@1", "b@2", "n@2", "c_d@2", "c_e@2",
                                    "c_p@2"]
    assert ordered_keys((2,), ("b", "c_e", "c_p")) == ["b@2", "c_e@2", "c_p@2"]
    assert label("c_e@1") == "(c_e) exactly-once, executor writers (in the executor JVM, the default), local[1]"


def test_median_ratio_and_missing_modes() -> None:
    summary = _summary({"c_e@2": _runs(30.0, 40.0, 50.0), "b@2": _runs(20.0, 20.0, 25.0)})
    assert median_ratio(summary, "c_e@2", "b@2") == 2.0
    assert median_ratio(summary, "c_e@2", "n@2") is None
    assert median_ratio(_summary({"x": _runs(), "y": _runs(1.0)}), "x", "y") is None


def test_paired_ratio_pairs_repetitions_and_skips_failed_runs() -> None:
    paired = paired_ratio(_runs(30.0, None, 50.0), _runs(10.0, 20.0, 100.0))
    assert paired["n"] == 2
    assert paired["values"] == [3.0, 0.5]
    assert (paired["min"], paired["max"]) == (0.5, 3.0)


def test_ratios_per_master_including_the_raw_producer() -> None:
    runs = {"a": _runs(200.0, 100.0), "b@1": _runs(10.0, 10.0), "c_e@1": _runs(12.0, 8.0),
            "b@2": _runs(20.0, 20.0), "c_e@2": _runs(20.0, 30.0), "n@2": _runs(25.0, 25.0)}
    found = ratios(_summary(runs), runs, (1, 2))
    medians, paired = found["of_medians"], found["paired"]
    assert medians["c_e/b@1"] == 1.0
    assert paired["c_e/b@1"]["values"] == [1.2, 0.8]
    assert medians["c_e/n@2"] == 1.0
    assert "c_e/n@1" not in medians  # n did not run on local[1]
    # Against the raw producer, each repetition pairs (a) with the job of that repetition.
    assert paired["c_e/a@2"]["values"] == [0.1, 0.3]
    assert medians["c_e/a@2"] == round(25.0 / 150.0, 3)


def test_scaling_is_high_cores_over_low_cores() -> None:
    runs = {"b@1": _runs(10.0, 12.0), "b@2": _runs(15.0, 24.0), "c_e@1": _runs(10.0), "c_e@2": _runs(19.0)}
    found = scaling(_summary(runs), runs, 1, 2)
    assert found["b"]["of_medians"] == pytest.approx(19.5 / 11.0, abs=1e-3)
    assert found["b"]["paired"]["values"] == [1.5, 2.0]
    assert found["c_e"]["of_medians"] == 1.9
    assert "n" not in found


def test_target_verdict_flags_paired_disagreement() -> None:
    assert target_verdict(None, None, 1.0) == (None, "not measured")
    passed, note = target_verdict(1.02, {"n": 3, "min": 0.8, "median": 0.95, "max": 1.1}, 1.0)
    assert passed is True
    assert "disagrees" in note
    passed, note = target_verdict(0.7, {"n": 3, "min": 0.6, "median": 0.7, "max": 0.75}, 0.8)
    assert passed is False
    assert "disagrees" not in note and "0.60 / 0.70 / 0.75" in note


def test_ratios_of_another_field_without_batch_zero() -> None:
    runs = {"b@2": [{"records_per_s": 10.0, "after_first_batch_records_per_s": 20.0}],
            "c_e@2": [{"records_per_s": 5.0, "after_first_batch_records_per_s": 30.0}]}
    summary = {k: {"after_first_batch_records_per_s": summarize([r["after_first_batch_records_per_s"] for r in v], 1)}
               for k, v in runs.items()}
    found = ratios(summary, runs, (2,), "after_first_batch_records_per_s")
    assert found["of_medians"]["c_e/b@2"] == 1.5
    assert found["paired"]["c_e/b@2"]["values"] == [1.5]


def test_a_producer_setting_override_is_typed_as_the_settings_are() -> None:
    import argparse

    import pytest

    from bench.__main__ import _producer_setting

    assert _producer_setting("compression.type=none") == ("compression.type", "none")
    assert _producer_setting("linger.ms=5") == ("linger.ms", 5)
    assert _producer_setting("enable.idempotence=False") == ("enable.idempotence", False)
    with pytest.raises(argparse.ArgumentTypeError, match="'lz4' is not KEY=VALUE"):
        _producer_setting("lz4")
