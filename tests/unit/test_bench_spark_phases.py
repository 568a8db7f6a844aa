"""The bench's table of Spark's phases per steady batch, from the job's EOS-PROGRESS ``spark_ms``."""

from __future__ import annotations

from bench.spark_phases import PHASES, median_phase_ms, phase_lines, steady_phase_ms


def _batch(add: int, wal: int) -> dict:
    return {"batch_ms": add + wal, "spark_ms": {"addBatch": add, "walCommit": wal}}


def test_a_runs_phases_are_its_mean_per_batch_and_a_missing_phase_counts_zero() -> None:
    phases = steady_phase_ms([_batch(300, 60), _batch(500, 80)])
    assert phases["addBatch"] == 400 and phases["walCommit"] == 70
    assert phases["commitOffsets"] == 0 and list(phases) == list(PHASES)


def test_a_job_that_logged_no_phases_has_none() -> None:
    assert steady_phase_ms([{"batch_ms": 500}]) == {}
    assert median_phase_ms([{"seconds": 1.0}, {}]) == {}


def test_the_table_shows_each_mode_with_its_median_and_the_time_outside_the_writer() -> None:
    runs = [{"spark_phase_ms": steady_phase_ms([_batch(a, 50)])} for a in (300, 400, 900)]
    mode = {"label": "(b) at-least-once", "spark_phase_ms": median_phase_ms(runs)}
    assert mode["spark_phase_ms"]["addBatch"] == 400
    lines = phase_lines({"modes": {"b@2": mode, "a": {"label": "(a) raw producer"}}})
    (row,) = [line for line in lines if line.startswith("| (b)")]
    assert row.split(" | ")[-1] == "50 |", "outside addBatch: the WAL's 50 ms"
    assert not any(line.startswith("| (a)") for line in lines), "a mode without Spark has no row"
    assert phase_lines({"modes": {"a": {"label": "(a)"}}}) == []
