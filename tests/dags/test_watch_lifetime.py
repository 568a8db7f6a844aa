"""How long a pipeline DAG's ``watch_stream`` lasts, inside ``dag.test()`` against the real broker.

A watch beside its driver's task (``driver_task_id``) lasts as long as that task (design note 67):

- while the driver's task has not ended, its ``timeout`` does not end it: the pipelines' DAGs gave it
  7 days, after which it succeeded with ``timeout``, ``stop_stream`` skipped, and the stream ran on
  unwatched while the open run kept any new one (``max_active_runs=1``) from watching it;
- once the driver's task succeeded (the driver stopped cleanly: it exited 0 after a SIGTERM), the watch
  succeeds with ``driver_stopped`` and ``stop_stream`` skips: the run ends, with no recovery.

Each DAG runs in a child process (:mod:`tests.support.built_dags`). ``dag.test()`` runs one task at a
time, so a streaming driver's task cannot run beside the watch: the first DAG places its stand-in
after the watch, where its state is not ended while the watch runs, as a streaming driver's task's is.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.support.built_dags import child_main, new_dag, start_in_airflow, task_log, watch_then_stop_dag
from tests.support.checkpointed_pipeline import LAST_COMMITTED, PARTITIONS, CheckpointedPipeline, checkpointed_pipeline

pytestmark = [pytest.mark.airflow, pytest.mark.integration]

#: The watch gives the driver this long to commit its first batch (it is a restart after a long downtime).
STOP_AFTER_S = 20
#: The thresholds both watches judge by: stop_after well past the first watch's timeout.
THRESHOLDS = {"warn_after_ms": STOP_AFTER_S * 500, "stop_after_ms": STOP_AFTER_S * 1000}
#: The first watch's timeout: the old watch ended here, successfully, while the driver's task still ran.
TIMEOUT_S = 6


# -- the DAGs, built in the child process ----------------------------------------------------------


def build_watch_beside_a_running_driver(spec_path: str):
    from airflow.sdk import task
    from airflow.task.trigger_rule import TriggerRule

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def submit_stream() -> None:
        """Stands for the streaming driver's task: not ended (no state) while the watch runs."""

    with new_dag("eos_watch_lifetime") as dag:
        watch = StreamingQueryHealthSensor(task_id="watch_stream", spec_path=spec_path, watch="watch",
                                           poke_interval=1, timeout=TIMEOUT_S, thresholds=THRESHOLDS,
                                           driver_task_id="submit_stream")
        watch >> submit_stream()
    return dag


def build_watch_after_a_clean_stop(spec_path: str, token: str):
    # submit_stream (a stand-in that succeeds: its driver exited 0) -> watch_stream -> stop_stream.
    return watch_then_stop_dag(spec_path, "stopped", token, timeout=300, thresholds=THRESHOLDS,
                               driver_task_id="submit_stream")


# -- the tests ------------------------------------------------------------------------------------------


@pytest.fixture
def restarted(tmp_path: Path, bootstrap: str, topic_factory) -> CheckpointedPipeline:
    """A pipeline down for an hour with input waiting for half of it: UNHEALTHY by commit age from the first
    sample, until its driver commits (none does here)."""
    pipeline = checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="eos", trigger="1 second")
    pipeline.commit_group(LAST_COMMITTED)
    pipeline.produce_input(dict.fromkeys(range(PARTITIONS), 100), created_s_ago=1800)
    pipeline.age_commits(3600)
    return pipeline


def test_a_watch_outlasts_its_timeout_while_the_drivers_task_runs(
    restarted: CheckpointedPipeline, tmp_path: Path, airflow_home: Path
) -> None:
    # The driver commits nothing: once stop_after has passed since the watch started, it is stuck. The watch
    # must still be there to say so: before, it had succeeded at its timeout (6 s here, 7 days in the DAGs).
    started = time.monotonic()
    run = start_in_airflow(__name__, "watch_beside_a_running_driver", tmp_path,
                           spec_path=str(restarted.spec_path)).finish(timeout_s=300)
    elapsed = time.monotonic() - started

    assert run.states["watch_stream"] == "failed", run.log[-8000:]
    log = task_log(run, "watch_stream")
    assert "Deferring: watching every 1.0s until submit_stream ends" in log, log[-4000:]
    assert "is UNHEALTHY" in log and "timed out" not in log, log[-4000:]
    assert run.xcoms["watch_stream"]["status"] == "UNHEALTHY"
    assert elapsed > STOP_AFTER_S > TIMEOUT_S


def test_a_watch_ends_without_recovery_once_the_driver_stopped_cleanly(
    restarted: CheckpointedPipeline, tmp_path: Path, airflow_home: Path
) -> None:
    # The driver was stopped (SIGTERM) and exited 0 with input waiting: lag and commit age read as a
    # stopped job. Before, the watch went on: it failed UNHEALTHY once stop_after passed, stop_stream ran,
    # recovery and a failed run followed; with idle input it stayed open until its timeout.
    token = f"eos-watch-test-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    run = start_in_airflow(__name__, "watch_after_a_clean_stop", tmp_path, spec_path=str(restarted.spec_path),
                           token=token).finish(timeout_s=300)
    elapsed = time.monotonic() - started

    assert run.states == {"submit_stream": "success", "watch_stream": "success", "stop_stream": "skipped"}, (
        run.log[-8000:])
    log = task_log(run, "watch_stream")
    assert "succeeded: the driver stopped cleanly" in log, log[-4000:]
    assert "[commit_age]" in log, "the stopped pipeline's report was UNHEALTHY by commit age"
    assert elapsed < STOP_AFTER_S + 60, "the watch waited for stop_after instead of ending with the driver"


def test_the_pipeline_dags_watch_has_no_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real DAG's watch_stream is a watch beside submit_stream: ends_at_timeout says no deadline applies."""
    import yaml

    from airflow_provider_eos.core.health import WatchMode, ends_at_timeout
    from airflow_provider_eos.dags import pipeline_dags

    monkeypatch.delenv("EOS_SPECS_DIR", raising=False)
    (tmp_path / "orders.yaml").write_text(yaml.safe_dump({
        "name": "orders", "kafka": {"bootstrap.servers": "127.0.0.1:1"}, "input_topics": ["orders-in"],
        "output_topic": "orders-out", "group_id": "orders-sink", "transactional_id_prefix": "orders-eos",
        "checkpoint_location": str(tmp_path / "checkpoint"), "trigger": "1 second",
    }))
    watch = pipeline_dags(tmp_path)["eos_pipeline__orders"].get_task("watch_stream")
    assert watch.watch == "watch" and watch.driver_task_id == "submit_stream"
    assert not ends_at_timeout(WatchMode(watch.watch), driver_watched=bool(watch.driver_task_id))


if __name__ == "__main__":
    child_main(globals())
