"""The throughput table's warm-up rounds (bench/throughput.py): run like the repetitions, counted in no figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import throughput
from bench.throughput import ThroughputInput


def _fake_runs(monkeypatch: pytest.MonkeyPatch, rates: dict[str, list[float]]) -> list[tuple[str, int]]:
    """Each mode's runs, in order, at the given records/s; returns the (mode, rep) calls."""
    calls: list[tuple[str, int]] = []

    def outcome(key: str, rep: int) -> dict[str, Any]:
        calls.append((key, rep))
        rate = rates[key][len([c for c in calls if c[0] == key]) - 1]
        return {"seconds": 100 / rate, "records": 100, "loadavg_before": {"1m": 1.0},
                "after_first_batch_records_per_s": rate, "broker_jit_ms": int(rate)}

    monkeypatch.setattr(throughput, "raw_producer", lambda bootstrap, work_dir, data, batch, rep, requests=None:
                        outcome("a", rep))
    monkeypatch.setattr(throughput, "job_run", lambda bootstrap, work_dir, data, key, batch, rep, timeout_s, **kw:
                        outcome(key, rep))
    return calls


def test_warm_up_rounds_run_every_mode_first_and_no_figure_counts_them(monkeypatch, tmp_path: Path) -> None:
    # Warm-up runs far slower (a cold broker), then two measured repetitions.
    calls = _fake_runs(monkeypatch, {"a": [1.0, 2.0, 500.0, 500.0], "b@2": [1.0, 2.0, 100.0, 110.0],
                                     "c_e@2": [9.0, 1.0, 100.0, 99.0]})
    data = ThroughputInput("in", [(b"k", b"v")] * 100, 100)
    result, _ = throughput.run("127.0.0.1:1", tmp_path, records=100, batch=10, repetitions=2, data=data,
                               cores=(2,), letters=("a", "b", "c_e"), warm_up_rounds=2)
    assert calls == [(k, r) for r in (-2, -1, 0, 1) for k in ("a", "b@2", "c_e@2")]
    assert result["warm_up_rounds"] == 2
    assert [(w["mode"], w["round"], w["records_per_s"]) for w in result["warm_up"]] == [
        ("a", 1, 1.0), ("b@2", 1, 1.0), ("c_e@2", 1, 9.0), ("a", 2, 2.0), ("b@2", 2, 2.0), ("c_e@2", 2, 1.0)]
    assert result["modes"]["b@2"]["records_per_s"]["values"] == [100.0, 110.0]
    assert result["modes"]["c_e@2"]["broker_jit_ms"]["values"] == [100, 99]
    assert result["ratios"]["c_e/b@2"] == pytest.approx(99.5 / 105, abs=0.01)
    assert result["paired_ratios"]["c_e/b@2"]["values"] == [1.0, 0.9]
    assert result["failures"] == []


def test_a_failed_warm_up_run_is_recorded_with_its_round_and_is_no_failure_of_the_table(monkeypatch, tmp_path) -> None:
    calls = _fake_runs(monkeypatch, {"b@2": [100.0, 100.0], "c_e@2": [100.0, 100.0]})
    real_job_run = throughput.job_run

    def first_fails(bootstrap, work_dir, data, key, batch, rep, timeout_s, **kw):
        if rep < 0 and key == "c_e@2":
            raise RuntimeError("c_e@2 run x: exit 1")
        return real_job_run(bootstrap, work_dir, data, key, batch, rep, timeout_s, **kw)

    monkeypatch.setattr(throughput, "job_run", first_fails)
    data = ThroughputInput("in", [(b"k", b"v")] * 100, 100)
    result, _ = throughput.run("127.0.0.1:1", tmp_path, records=100, batch=10, repetitions=1, data=data,
                               cores=(2,), letters=("b", "c_e"), warm_up_rounds=1)
    assert result["warm_up"][1] == {"mode": "c_e@2", "round": 1, "failed": "c_e@2 run x: exit 1"}
    assert result["failures"] == []
    assert result["modes"]["c_e@2"]["records_per_s"]["n"] == 1
    assert ("c_e@2", 0) in calls
