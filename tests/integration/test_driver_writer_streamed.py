"""The driver writer without a collect (docs/architecture.md, docs/design-notes.md item 12), real broker and real Spark.

The tasks spill the output as Arrow files under the checkpoint and the driver produces from them:
the end-to-end job on ``writers: driver`` stays exact, the spill folder is gone after the batch,
and a killed task attempt's complete file is never read. (What a driver killed after producing or
after its Kafka commit left in the spill is removed by the restart: test_crash_points, driver writer.)
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.integration import test_exactly_once_job as job_tests
from tests.integration.test_executor_writers import writers_lines
from tests.support.pipeline import JobResult, PipelineHarness, assert_exactly_once, json_events

pytestmark = [pytest.mark.integration, pytest.mark.spark]

#: Task retries inside one query run: a killed Python worker fails its task attempt, not the query.
RETRYING_MASTER = "local[2,4]"


def spill_files(checkpoint_location: str | Path) -> list[Path]:
    root = Path(checkpoint_location) / "eos" / "spill"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def spill_lines(result: JobResult) -> list[dict]:
    return result.batch_lines("EOS-SPILL")


@pytest.mark.long  # CI: the driver writer end to end in test_fraud_alerts_stateful_with_no_data_batches
def test_json_enrich_end_to_end_on_the_driver_writer(bootstrap, tmp_path, monkeypatch):
    """test_exactly_once_job's end-to-end test, every assertion of it, with the spec forced to the driver writer."""
    monkeypatch.setattr(job_tests, "PipelineHarness", functools.partial(PipelineHarness, writers="driver"))
    job_tests.test_json_enrich_end_to_end_exact_output_dlq_and_group_offsets(bootstrap, tmp_path)

    first = JobResult(0, (tmp_path / "run-1.log").read_text(errors="replace"))
    assert [line.split()[0] for line in writers_lines(first)] == ["driver"], writers_lines(first)
    batches = first.batch_lines()
    assert all(b["extra"]["writers"] == "driver" and b["extra"]["spill_files"] >= 1 for b in batches), batches
    # Every batch's tasks wrote their files and reported them; the driver read what they reported.
    spilled = spill_lines(first)
    for batch in batches:
        own = [s for s in spilled if s["batch_id"] == batch["batch_id"]]
        assert sum(s["rows"] for s in own) == batch["rows_out"] + batch["rows_dlq"], (batch, own)
        assert len({s["spark_partition"] for s in own}) == len(own), "one attempt per partition, no retry"
    assert spill_files(tmp_path / "checkpoint") == [], "the spill of every batch is removed after it"


# The spill's two runtimes (design note 43): the executor JVM (the default) and PySpark's Python workers.
@pytest.mark.parametrize("executor_writer", ["jvm", "python"])
def test_a_killed_task_attempts_file_is_never_read(bootstrap, tmp_path, executor_writer):
    harness = PipelineHarness(bootstrap, tmp_path, writers="driver", master=RETRYING_MASTER,
                              executor_writer=executor_writer)
    records, valid_ids, malformed = json_events(1500, malformed_every=41)
    harness.produce_input(records, aborted_every=3)

    # Spark partition 0's task of batch 1 completes its file, then the attempt dies: the JVM task crashes
    # (its file left as it is), or its Python worker is SIGKILLed.
    result = harness.run(fault="task_after_produce@1:0")
    assert result.returncode == 0, result.log[-3000:]
    how = {"jvm": "crashing the task attempt in executor JVM", "python": "killing Python worker"}[executor_writer]
    fired = f"EOS-FAULT fired: task_after_produce batch 1 partition 0, {how}"
    assert fired in result.log, result.log[-3000:]
    assert_exactly_once(harness, valid_ids, malformed)  # reading the killed attempt's file would duplicate it

    attempts = [s for s in spill_lines(result) if (s["batch_id"], s["spark_partition"]) == (1, 0)]
    killed = [s for s in attempts if s["attempt"] == 0]
    assert len(killed) == 1 and killed[0]["file"] and killed[0]["rows"] > 0, attempts
    retries = [s for s in attempts if s["attempt"] >= 1]
    assert retries and all(s["file"] != killed[0]["file"] for s in retries), attempts
    batch = next(b for b in result.batch_lines() if b["batch_id"] == 1)
    # The driver read the file of the attempt that succeeded, never attempt 0's.
    assert batch["extra"]["spill_retried"] == {"0": retries[-1]["attempt"]}, batch
    assert spill_files(harness.spec.checkpoint_location) == []
