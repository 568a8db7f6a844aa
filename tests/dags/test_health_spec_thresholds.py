"""A spec's ``health_thresholds`` in the repo's scheduled ``eos_health_check`` DAG, through ``dag.test()``.

Against the real broker and checkpoints in Spark's format (:mod:`tests.support.checkpointed_pipeline`):
two pipelines stalled alike, input waiting ten minutes behind a commit as old, one judged by the
thresholds derived from its spec (a stop after four minutes), the other by its spec's own (design
note 72). The DAG takes no thresholds: only the spec can change the verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.checkpointed_pipeline import LAST_COMMITTED, CheckpointedPipeline, checkpointed_pipeline
from tests.support.dag_runner import run_dag

pytestmark = [pytest.mark.airflow, pytest.mark.integration]

#: How long the input has waited, and the newest commit's age: beyond the derived stop (4 x 60 s).
STALLED_S = 600
#: The thresholds of a job whose batches compute for up to an hour before their first row.
PATIENT = {"warn_after_ms": 3_600_000, "stop_after_ms": 7_200_000}


def stalled(pipeline: CheckpointedPipeline) -> CheckpointedPipeline:
    """The sink group at the last committed batch, which read every record then; five more records in each
    input partition, all created ``STALLED_S`` ago (the probe dates waiting input by the brokers' record
    timestamps), and the checkpoint's commits dated as long ago."""
    ends = pipeline.end_offsets(LAST_COMMITTED)
    pipeline.produce_input({tp.partition: end + 5 for tp, end in ends.items()}, created_s_ago=STALLED_S)
    pipeline.commit_group(LAST_COMMITTED)
    pipeline.age_commits(STALLED_S)
    return pipeline


def test_the_scheduled_health_check_judges_each_pipeline_by_its_specs_thresholds(
    tmp_path: Path, bootstrap: str, topic_factory, airflow_home: Path
) -> None:
    # A processing-time trigger: an available_now pipeline without an active run would be idle between runs.
    derived = stalled(checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="hs-derived",
                                            trigger="10 seconds"))
    patient = stalled(checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="hs-patient",
                                            trigger="10 seconds", health_thresholds=PATIENT))
    assert derived.spec_path.parent == patient.spec_path.parent

    run = run_dag("eos_health_check", {}, tmp_path / "health.json",
                  env={"EOS_SPECS_DIR": str(derived.spec_path.parent)}, timeout_s=600)

    reports = {report["pipeline"]: report for key, report in run.xcoms.items() if key.startswith("health_report")}
    # Without the spec's field the patient spec is an invalid file: skipped, and only one pipeline checked.
    assert set(reports) == {derived.spec.name, patient.spec.name}, run.log[-6000:]
    strict, lenient = reports[derived.spec.name], reports[patient.spec.name]
    assert strict["status"] == "UNHEALTHY", strict["findings"]
    assert [f["signal"] for f in strict["findings"] if f["status"] == "UNHEALTHY"] == ["commit_age"], strict
    assert strict["thresholds"]["stop_after_ms"] == 240_000
    assert lenient["status"] == "HEALTHY", lenient["findings"]
    assert {name: lenient["thresholds"][name] for name in PATIENT} == PATIENT
    # The mapped task fails on UNHEALTHY (that is what alerts): the patient pipeline's succeeds.
    assert sorted(state for task, state in run.states.items() if task.startswith("health_report[")) == [
        "failed", "success"], run.states
    assert run.state == "failed"
