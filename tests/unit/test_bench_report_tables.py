"""The report's profile table (bench/report_tables.py): its rows come out in the same order on every render."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.report_tables import profile_section

REPO = Path(__file__).resolve().parents[2]
#: Tied shares (the table prints whole percents, and the JSON holds them rounded): only the order seen decides.
TIED = ("network I/O", "compression", "JSON (Jackson)", "Spark Kafka source/writer", "task (de)serialization")


def _profile() -> dict:
    def mode(categories: dict[str, float]) -> dict:
        return {"records_per_s": 10_000.0, "loadavg_before": {"1m": 1.0},
                "phases": {"seconds": {"triggerExecution": 10.0},
                           "share": dict.fromkeys(("addBatch", "queryPlanning", "walCommit", "commitOffsets",
                                                   "latestOffset"), 0.2)},
                "jvm": {"executor_task_categories": categories, "executor_task_samples": 1_000}}

    first = {"Kafka consumer": 0.4, **dict.fromkeys(TIED, 0.02)}
    return {"records": 100_000, "max_offsets_per_trigger": 10_000, "note": "",
            "modes": {"at-least-once": mode(first), "exactly-once": mode({"Kafka producer": 0.1, **first})}}


def _category_rows(lines: list[str]) -> list[str]:
    start = lines.index("| category | at-least-once | exactly-once |") + 2
    return [line.split(" | ")[0].removeprefix("| ") for line in lines[start:] if line.startswith("| ")][:-1]


def test_categories_are_ordered_by_their_largest_share_and_ties_keep_the_order_they_were_recorded_in() -> None:
    assert _category_rows(profile_section(_profile())) == ["Kafka consumer", "Kafka producer", *TIED]


def test_two_processes_with_different_hash_seeds_render_the_same_rows() -> None:
    # The categories were once gathered in a set: the rows of tied shares then changed with the hash seed,
    # so re-rendering a committed results JSON reordered its table.
    script = ("import json, sys; from bench.report_tables import profile_section; "
              "print(json.dumps(profile_section(json.loads(sys.stdin.read()))))")
    rendered = {subprocess.run([sys.executable, "-c", script], input=json.dumps(_profile()), text=True, cwd=REPO,
                               env={**os.environ, "PYTHONHASHSEED": str(seed)}, capture_output=True,
                               check=True).stdout
                for seed in range(6)}
    assert len(rendered) == 1, rendered
