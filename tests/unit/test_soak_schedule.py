"""The soak's pure parts: the seeded schedule, the input stream, the exactly-once and order checks, the report."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from soak.checks import OutputCheck, dlq_check, exactly_once_holds, parse_verdict, verdict_ok
from soak.data import EventStream, expected_malformed, input_partition, is_malformed, parse_id
from soak.output import progress_points, rate_series
from soak.schedule import (
    DEFAULT_EXECUTOR_WRITER,
    EXECUTOR_WRITERS,
    KINDS,
    MIN_PER_KIND,
    build,
    choose,
    deal,
    kind_multiset,
    phase_kind,
    split,
)

# -- schedule -------------------------------------------------------------------------------------


def test_the_same_seed_replays_the_same_schedule() -> None:
    first = build(7, records=1_000_000, faults=100)
    assert first == build(7, records=1_000_000, faults=100)
    assert first.to_dict() == build(7, records=1_000_000, faults=100).to_dict()
    assert [e.kind for e in first.events()] != [e.kind for e in build(8, records=1_000_000, faults=100).events()]


def test_a_full_schedule_has_every_kind_at_least_five_times_over_both_writers() -> None:
    # The Python executor writer runs every kind as drawn.
    schedule = build(20261125, records=1_000_000, faults=100, executor_writer="python")
    counts = schedule.counts()
    assert sum(counts.values()) == 100
    assert all(counts[k] >= MIN_PER_KIND for k in KINDS), counts
    assert [p.writers for p in schedule.phases] == ["driver", "executors"]
    assert [len(p.events) for p in schedule.phases] == [50, 50]
    for kind in KINDS:  # each kind shared between the writers, not all under one
        per_phase = [sum(e.kind == kind for e in p.events) for p in schedule.phases]
        assert abs(per_phase[0] - per_phase[1]) <= 1, (kind, per_phase)


def test_indexes_run_through_the_phases_and_jitters_and_picks_are_in_range() -> None:
    schedule = build(3, records=10_000, faults=50)
    assert [e.index for e in schedule.events()] == list(range(50))
    assert all(0 <= e.jitter_s <= 4 and 0 <= e.pick < 1 for e in schedule.events())
    assert all(e.phase == p.writers for p in schedule.phases for e in p.events)


def test_a_smoke_schedule_of_nine_faults_has_each_kind_once() -> None:
    schedule = build(1, records=30_000, faults=9, executor_writer="python")
    assert schedule.counts() == dict.fromkeys(KINDS, 1)
    assert [len(p.events) for p in schedule.phases] == [5, 4]


def test_slices_cover_the_records_with_one_more_slice_than_faults() -> None:
    schedule = build(1, records=30_000, faults=9)
    for phase in schedule.phases:
        assert phase.records == 30_000
        assert len(phase.slices) == len(phase.events) + 1
        assert max(phase.slices) - min(phase.slices) <= 1


@pytest.mark.parametrize("total", [1, 8, 9, 10, 44, 45, 46, 100, 250])
def test_kind_multiset(total: int) -> None:
    kinds = kind_multiset(total, random.Random(total))
    counts = Counter(kinds)
    assert len(kinds) == total
    if total >= MIN_PER_KIND * len(KINDS):
        assert min(counts[k] for k in KINDS) >= MIN_PER_KIND
    else:
        assert max(counts.values()) - min(counts.get(k, 0) for k in KINDS) <= 1


def test_deal_keeps_phase_sizes_within_one() -> None:
    hands = deal(["kill_driver"] * 7 + ["pause_broker"] * 4, 2)
    assert sorted(len(h) for h in hands) == [5, 6]
    assert [h.count("kill_driver") for h in hands] == [4, 3]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="writers"):
        build(1, records=100, faults=4, writers=("yarn",))
    with pytest.raises(ValueError, match="phase"):
        build(1, records=100, faults=1)
    with pytest.raises(ValueError, match="slices"):
        split(3, 5)


# -- the executor writer ---------------------------------------------------------------------------


def test_the_jvm_writer_is_the_default_as_in_the_product() -> None:
    assert DEFAULT_EXECUTOR_WRITER == "jvm" and EXECUTOR_WRITERS == ("jvm", "python")
    assert build(5, records=10_000, faults=20) == build(5, records=10_000, faults=20, executor_writer="jvm")


def test_phase_kind_replaces_only_the_python_worker_kill_of_a_jvm_phase() -> None:
    assert phase_kind("kill_python_worker", "executors", "jvm") == "kill_executor"
    assert phase_kind("kill_python_worker", "executors", "python") == "kill_python_worker"
    # The driver writer's spill tasks run in the executor JVM too (design note 43).
    assert phase_kind("kill_python_worker", "driver", "jvm") == "kill_executor"
    assert phase_kind("kill_python_worker", "driver", "python") == "kill_python_worker"
    for kind in set(KINDS) - {"kill_python_worker"}:
        assert phase_kind(kind, "executors", "jvm") == kind


@pytest.mark.parametrize("seed", [1, 7, 20261125])
def test_a_jvm_phase_kills_an_executor_where_the_python_writer_kills_a_python_worker(seed: int) -> None:
    jvm = build(seed, records=1_000_000, faults=100, executor_writer="jvm")
    python = build(seed, records=1_000_000, faults=100, executor_writer="python")
    assert (jvm.executor_writer, python.executor_writer) == ("jvm", "python")
    # Both phases (the driver writer's spill tasks and the executor writers' tasks run in the executor JVM): the
    # same events, slices and input; only the drawn Python worker kills differ.
    replaced = 0
    for phase_jvm, phase_python in zip(jvm.phases, python.phases, strict=True):
        assert (phase_jvm.slices, phase_jvm.record_seed) == (phase_python.slices, phase_python.record_seed)
        assert not any(e.kind == "kill_python_worker" for e in phase_jvm.events)
        for on_jvm, on_python in zip(phase_jvm.events, phase_python.events, strict=True):
            assert (on_jvm.index, on_jvm.jitter_s, on_jvm.pick) == (on_python.index, on_python.jitter_s,
                                                                    on_python.pick)
            assert on_python.replaces is None
            if on_python.kind == "kill_python_worker":
                assert (on_jvm.kind, on_jvm.replaces) == ("kill_executor", "kill_python_worker")
                replaced += 1
            else:
                assert on_jvm == on_python
    assert replaced >= 5  # 100 faults: at least five drawn
    counts, drawn = jvm.counts(), python.counts()
    assert sum(counts.values()) == 100
    assert counts["kill_executor"] == drawn["kill_executor"] + replaced
    assert counts["kill_python_worker"] == drawn["kill_python_worker"] - replaced
    assert jvm.to_dict()["replaced"] == {"kill_python_worker->kill_executor": replaced}
    assert python.to_dict()["replaced"] == {}


def test_an_executors_only_jvm_soak_has_no_python_worker_kill_but_the_same_fault_count() -> None:
    schedule = build(1, records=30_000, faults=9, writers=("executors",))
    counts = schedule.counts()
    assert sum(counts.values()) == 9 and counts["kill_python_worker"] == 0 and counts["kill_executor"] == 2
    assert {k for k, n in counts.items() if n} == set(KINDS) - {"kill_python_worker"}
    assert schedule.to_dict()["executor_writer"] == "jvm"
    python = build(1, records=30_000, faults=9, writers=("executors",), executor_writer="python")
    assert python.counts() == dict.fromkeys(KINDS, 1)


def test_an_unknown_executor_writer_is_refused() -> None:
    with pytest.raises(ValueError, match="executor_writer"):
        build(1, records=100, faults=2, executor_writer="scala")


def test_the_reproduce_command_names_the_executor_writer_and_replays_the_schedule() -> None:
    from soak.__main__ import _args, reproduce_command

    for argv in (["--seed", "3", "--records", "5000", "--faults", "4"],
                 ["--seed", "3", "--records", "5000", "--faults", "4", "--executor-writer", "python", "--no-control",
                  "--writers", "executors", "--batch", "700"]):
        args = _args(argv)
        writers = tuple(args.writers.split(","))
        command = reproduce_command(args, 3, writers)
        assert f"--executor-writer {args.executor_writer} " in command
        again = _args(command.split()[3:])  # after "python -m soak"
        assert vars(again) == vars(args)
    assert _args([]).executor_writer == "jvm"
    with pytest.raises(SystemExit):
        _args(["--executor-writer", "scala"])


def test_settings_for_another_executor_writer_than_the_schedule_s_are_refused(tmp_path: Path) -> None:
    from soak.run import Settings, run_schedule

    schedule = build(1, records=100, faults=2, executor_writer="jvm")
    with pytest.raises(ValueError, match="executor_writer"):  # before any broker or Spark starts
        run_schedule(schedule, Settings(batch=100, executor_writer="python"), tmp_path, {"phases": []})


def test_choose_is_independent_of_candidate_order() -> None:
    assert choose([3, 1, 2], 0.0) == 1
    assert choose([3, 1, 2], 0.99) == 3
    assert choose([2, 3, 1], 0.5) == choose([1, 2, 3], 0.5) == 2


# -- input ----------------------------------------------------------------------------------------


def test_the_stream_is_deterministic_and_numbers_each_key_in_order() -> None:
    records = EventStream("1-driver").take(3000)
    again = EventStream("1-driver")
    assert again.take(1000) + again.take(2000) == records
    last: dict[str, int] = {}
    for index, (key, value) in enumerate(records):
        if is_malformed(index):
            assert value.startswith(b"not json")
            continue
        event = json.loads(value)
        assert event["user"] == key
        assert parse_id(event["id"]) == (index, event["seq"])
        assert event["seq"] == last.get(key, -1) + 1
        last[key] = event["seq"]
    assert len(last) > 50, "keys repeat over a few dozen users"


def test_keys_have_one_input_partition_and_junk_ids_do_not_parse() -> None:
    assert {input_partition("user7", 3) for _ in range(5)} == {input_partition("user7", 3)}
    assert parse_id("ABORTED-3") is None
    assert parse_id("e12") is None
    assert parse_id("e12-4") == (12, 4)


# -- checks ---------------------------------------------------------------------------------------


def _output(records: int) -> list[tuple[str, bytes]]:
    return [(k, v) for i, (k, v) in enumerate(EventStream("s").take(records)) if not is_malformed(i)]


def _check(records: int, feed: list[tuple[str, bytes]]) -> dict:
    check = OutputCheck(records)
    for key, value in feed:
        check.add(input_partition(key, 3), value)
    return check.result()


def test_exact_output_passes() -> None:
    result = _check(2500, _output(2500))
    assert (result["duplicates"], result["lost"], result["unexpected"], result["order_violations"]) == (0, 0, 0, 0)
    assert result["expected_records"] == result["output_records"] == 2500 - 2


def test_duplicates_losses_junk_and_reordering_are_counted() -> None:
    feed = _output(2500)
    same_key = [i for i, (k, _) in enumerate(feed) if k == feed[0][0]]
    a, b = same_key[0], same_key[1]
    swapped = list(feed)
    swapped[a], swapped[b] = swapped[b], swapped[a]
    replayed = swapped + feed[100:110]  # an at-least-once replay: duplicates, and seqs going back
    lost = [r for r in replayed if r != feed[200]]
    junk = [*lost, ("junk", b'{"id":"ABORTED-0","user":"junk","amount":1.0}'), ("x", b"not json")]
    result = _check(2500, junk)
    assert result["duplicates"] == 10 and result["duplicated_ids"] == 10
    assert result["lost"] == 1 and result["lost_examples"] == [json.loads(feed[200][1])["id"].split("-")[0]]
    assert result["unexpected"] == 2
    assert result["order_violations"] >= 2


def test_malformed_and_out_of_range_ids_are_unexpected() -> None:
    check = OutputCheck(2000)
    check.add(0, b'{"id":"e1008-0","user":"user1"}')  # index 1008 is a malformed record's
    check.add(0, b'{"id":"e5000-0","user":"user1"}')
    assert check.result()["unexpected"] == 2


def test_dlq_check() -> None:
    malformed = expected_malformed(5000)
    assert len(malformed) == 4
    assert dlq_check(malformed, malformed)["exact"]
    twice = dlq_check([*malformed, malformed[0]], malformed)
    assert not twice["exact"] and (twice["duplicates"], twice["unexpected"]) == (1, 0)
    assert dlq_check([*malformed, b"junk"], malformed)["unexpected"] == 1
    assert dlq_check(malformed[1:], malformed)["missing"] == 1


def test_exactly_once_holds_only_when_everything_is_zero() -> None:
    clean = {"duplicates": 0, "lost": 0, "unexpected": 0, "order_violations": 0}
    assert exactly_once_holds(clean, {"exact": True})
    assert not exactly_once_holds({**clean, "order_violations": 1}, {"exact": True})
    assert not exactly_once_holds(clean, {"exact": False})


def test_verdicts() -> None:
    text = ("Verification: KAFKA_AHEAD_SAFE (query q1, last committed batch 7, last planned batch 8)\n"
            "Writers: driver\n")
    assert parse_verdict(text) == "KAFKA_AHEAD_SAFE"
    assert parse_verdict("Verification: IN_SYNC (query -, last committed batch -, last planned batch -)") \
        == "NOTHING_COMMITTED"
    assert parse_verdict("error: unreachable") == "UNKNOWN"
    assert verdict_ok("IN_SYNC") and verdict_ok("KAFKA_AHEAD_SAFE") and not verdict_ok("KAFKA_BEHIND")


# -- timeline and report --------------------------------------------------------------------------


def test_progress_lines_become_a_rate_series() -> None:
    lines = [
        '2026-11-25 10:00:00,500 INFO airflow_provider_eos.spark.job EOS-PROGRESS {"batch_id": 0, "rows_in": 10, '
        '"rows_out": 9, "rows_dlq": 1}',
        '2026-11-25 10:00:03,000 INFO airflow_provider_eos.spark.job EOS-PROGRESS {"batch_id": 1, "rows_in": 10, '
        '"replay_skipped": true, "rows_out": 0}',
        '2026-11-25 10:00:04,000 INFO x EOS-PROGRESS {"batch_id": 2, "rows_in": 40, "rows_out": 0}',
        "unrelated line",
    ]
    points = progress_points(lines)
    assert [rows for _, rows in points] == [10, 0, 40]
    start = points[0][0] - 0.5
    assert rate_series(points, start, start + 5.9, 2.0) == [5.0, 0.0, 20.0]


def test_report_files(tmp_path: Path) -> None:
    from soak.report import write

    schedule = build(1, records=2500, faults=2, writers=("driver", "executors"))
    feed = _output(2500)
    ok = _check(2500, feed)
    dup = _check(2500, feed + feed[:5])
    phases = []
    for phase, mode, output in [(p, "exactly-once", ok) for p in schedule.phases] + [
            (schedule.phases[0], "at-least-once", dup)]:
        checks = {"output": output, "dlq": {"exact": True}}
        if mode == "exactly-once":
            checks.update(passed=True, lingering={"clean": True, "ongoing": []})
        phases.append({"label": phase.writers if mode == "exactly-once" else f"control-{phase.writers}",
                       "mode": mode, "wall_s": 60, "progress": [(1.0, 100), (30.0, 400)], "checks": checks,
                       "runs": [{}], "recoveries": [{"verdict": "IN_SYNC", "ok": True}],
                       "faults": [{"index": e.index, "kind": e.kind, "fault_s": 10.0, "target": "broker 1",
                                   "applied": True, "open_transaction": True, "ongoing": ["p-txn-0@1"],
                                   "seen_ms_before_fault": 40} for e in phase.events]})
    results = {"seed": 1, "schedule": schedule.to_dict(), "phases": phases, "wall_s": 180,
               "meta": {"command": "python -m soak --seed 1", "started": "now", "git_commit": "abc",
                        "machine": "m", "batch": 500, "transaction_timeout_ms": 15000, "trigger": "1 second",
                        "input_note": "n", "executor_writer": "jvm"}}
    paths = write(results, tmp_path, "stem")
    assert results["verdict"] == "PASS"
    summary = results["summary"]
    assert summary["control_duplicates"] == 5 and summary["hit_open_transaction"] == 2
    assert sum(v["scheduled"] for v in summary["by_kind"].values()) == 2
    text = (tmp_path / "stem.md").read_text()
    assert "seed 1" in text and "**5 duplicates**" in text and "| 2 | driver" not in text
    assert "- Executor writer (the tasks' runtime): `jvm` (the executor JVM" in text
    assert (tmp_path / "stem.png").read_bytes().startswith(b"\x89PNG")
    assert tmp_path / "LATEST.md" in paths
    assert json.loads((tmp_path / "stem.json").read_text())["summary"]["passed"]


def test_the_report_names_the_executor_writer_or_says_an_old_run_did_not_record_it() -> None:
    from soak.report import markdown

    results = {"seed": 1, "verdict": "PASS", "wall_s": 60, "phases": [],
               "schedule": build(1, records=2500, faults=2).to_dict(),
               "summary": {"passed": True, "faults": 0, "applied": 0, "hit_open_transaction": 0, "verdicts": {},
                           "control_duplicates": None, "by_kind": {}},
               "meta": {"command": "c", "started": "now", "git_commit": "abc", "machine": "m", "batch": 500,
                        "transaction_timeout_ms": 15000, "trigger": "1 second", "input_note": "n"}}
    assert "Executor writer (the tasks' runtime): not recorded" in markdown(results, "stem")
    results["meta"]["executor_writer"] = "python"
    assert "Executor writer (the tasks' runtime): `python` (PySpark's Python workers)" \
        in markdown(results, "stem")


def test_a_replacing_fault_says_in_the_fault_log_what_was_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from soak import faults
    from soak.targets import Window

    killed: list[int] = []
    monkeypatch.setattr(faults, "wait_window", lambda ctx: Window())
    monkeypatch.setattr(faults, "executors", lambda ctx: [types.SimpleNamespace(pid=pid) for pid in (41, 42)])
    monkeypatch.setattr(faults, "_kill_pid", killed.append)
    job = types.SimpleNamespace(mode="exactly-once", started_at=0.0, ensure_running=lambda: False,
                                elapsed=lambda: 1.0, alive=lambda: True)
    event = next(e for e in build(1, records=30_000, faults=9, writers=("executors",)).events() if e.replaces)
    record = faults.apply(event, types.SimpleNamespace(job=job))
    assert (record["kind"], record["replaces"], record["applied"]) == ("kill_executor", "kill_python_worker", True)
    assert record["note"].startswith("drawn as kill_python_worker (the JVM executor writer has no Python worker)")
    assert killed and killed[0] in (41, 42) and record["target"] == f"executor JVM {killed[0]}"
