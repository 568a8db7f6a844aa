"""``watch_stream`` -> ``stop_stream`` inside ``dag.test()`` when the worker's clock runs ahead of the triggerer's.

The health sensor checks once on the worker and defers; the trigger continues the worker's window with
samples of its own clock. A worker 60 s ahead dates the first sample later than the trigger's next ones:
the window used to refuse them with a non-retryable ``HealthError``, so the watch of a healthy stream
ended with outcome ``error`` (the task failed without retry and the stream ran unwatched). The DAG runs in
a child Python process (:mod:`tests.support.built_dags`), where ``dag.test()`` runs the trigger inline on
the real broker; the sensor's first sample, and only it, is dated by a clock 60 s ahead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.built_dags import child_main, start_in_airflow, task_log, watch_then_stop_dag
from tests.support.checkpointed_pipeline import LAST_COMMITTED, checkpointed_pipeline

pytestmark = [pytest.mark.airflow, pytest.mark.integration]

#: How far the worker's clock runs ahead of the triggerer's (more than the trigger's first poke interval).
_WORKER_AHEAD_MS = 60_000


def _date_the_first_sample_by_a_clock_ahead() -> None:
    """The first sample (the sensor's check on the worker) is dated ``_WORKER_AHEAD_MS`` later; the rest are not."""
    import airflow_provider_eos.usecases.health as health

    real = health.probe
    taken = {"count": 0}

    def probe(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        taken["count"] += 1
        if taken["count"] > 1:
            return found
        return found.model_copy(update={"taken_at_ms": found.taken_at_ms + _WORKER_AHEAD_MS})

    health.probe = probe  # the child process's own, for its life


def build_watch_across_skewed_clocks(spec_path: str, pipeline: str, token: str):
    _date_the_first_sample_by_a_clock_ahead()
    return watch_then_stop_dag(spec_path, pipeline, token, timeout=12, max_probe_failures=2)


def test_a_watch_continued_by_a_triggerer_whose_clock_is_behind_the_workers_keeps_watching(
        tmp_path: Path, airflow_home: Path, bootstrap: str, topic_factory) -> None:
    from airflow_provider_eos.core.spec import Writers

    pipeline = checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="skew", trigger="10 seconds")
    pipeline.produce_input_of(LAST_COMMITTED)
    pipeline.commit_group(LAST_COMMITTED)
    pipeline.record_writers(Writers.EXECUTORS)
    token = f"eos-skew-test-{uuid.uuid4().hex[:8]}"
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                              env={**os.environ, "EOS_DRIVER_TOKEN": token})
    try:
        run = start_in_airflow(__name__, "watch_across_skewed_clocks", tmp_path, spec_path=str(pipeline.spec_path),
                               pipeline=pipeline.spec.name, token=token).finish(timeout_s=300)
        log = task_log(run, "watch_stream")
        # The watch of a healthy stream lasts its whole period and succeeds; stop_stream (on failure only) skips.
        assert run.states == {"submit_stream": "success", "watch_stream": "success", "stop_stream": "skipped"}, (
            log[-6000:])
        assert "Deferring: watching" in log and "running trigger in line" in log, log[-4000:]
        assert "older than the window's newest" not in log, log[-4000:]
        # The trigger's first sample dropped the worker's and said why; the watch went on to its end.
        assert "newer sample(s) dropped" in log and "NTP" in log, log[-4000:]
        assert "the watch ended without an unhealthy report" in log, log[-4000:]
        assert driver.poll() is None
    finally:
        driver.kill()
        driver.wait(30)


if __name__ == "__main__":
    child_main(globals())
