"""``watch_stream`` -> ``stop_stream`` inside ``dag.test()`` while the checkpoint's storage fails, on the real broker.

The DAG runs in a child Python process (this module run as ``python -m
tests.dags.test_health_storage_failure <builder> <args> <result file>``, :mod:`tests.support.built_dags`);
``dag.test()`` runs the deferred sensor's trigger inline. The storage failure is put into that
process's fsspec local filesystem once the sensor's first check has read the checkpoint, so it
meets the trigger's samples: a trigger that raised used to fail the task with no ``watch_outcome``,
and ``stop_stream`` then stopped the running driver of a stream nobody found unhealthy.
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

#: Reads of eos/writers.json the sensor's first check makes (verification's and the probe's) before the storage fails.
_READS_BEFORE_FAILING = 2


def _fail_the_writers_record_after_the_first_check() -> None:
    """From the third read on, the writers record fails as fsspec's WebHDFS fails for an untyped RemoteException."""
    from fsspec.implementations.local import LocalFileSystem

    real = LocalFileSystem.cat_file
    reads = {"count": 0}

    def cat_file(self: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        if str(path).endswith("eos/writers.json"):
            reads["count"] += 1
            if reads["count"] > _READS_BEFORE_FAILING:
                raise RuntimeError(f"Block could not be located. Path={path}, offset=0")
        return real(self, path, *args, **kwargs)

    LocalFileSystem.cat_file = cat_file  # type: ignore[method-assign]  # the child process's own, for its life


def build_watch_while_storage_fails(spec_path: str, pipeline: str, token: str):
    _fail_the_writers_record_after_the_first_check()
    return watch_then_stop_dag(spec_path, pipeline, token, timeout=120, max_probe_failures=2)


def test_a_watch_whose_checkpoint_storage_fails_records_error_and_leaves_the_stream_running(
        tmp_path: Path, airflow_home: Path, bootstrap: str, topic_factory) -> None:
    from airflow_provider_eos.core.spec import Writers

    pipeline = checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="storage", trigger="10 seconds")
    pipeline.produce_input_of(LAST_COMMITTED)
    pipeline.commit_group(LAST_COMMITTED)
    pipeline.record_writers(Writers.EXECUTORS)
    token = f"eos-storage-test-{uuid.uuid4().hex[:8]}"
    # The running driver, as the process table sees it: a process carrying the run's token.
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                              env={**os.environ, "EOS_DRIVER_TOKEN": token})
    try:
        run = start_in_airflow(__name__, "watch_while_storage_fails", tmp_path, spec_path=str(pipeline.spec_path),
                               pipeline=pipeline.spec.name, token=token).finish(timeout_s=300)
        assert run.states == {"submit_stream": "success", "watch_stream": "failed", "stop_stream": "skipped"}, (
            run.log[-8000:])
        log = task_log(run, "watch_stream")
        # The first check read the checkpoint whole and deferred; the trigger's samples met the failure.
        assert "Deferring: watching" in log and "running trigger in line" in log, log[-4000:]
        assert "2 health samples in a row failed" in log and "Block could not be located" in log, log[-4000:]
        assert f"reading the checkpoint at {str(pipeline.checkpoint)!r} failed" in log, log[-4000:]
        assert "not unhealthy or driver_failed" in task_log(run, "stop_stream")
        assert driver.poll() is None, "the driver of a stream nobody found unhealthy was stopped"
    finally:
        driver.kill()
        driver.wait(30)


if __name__ == "__main__":
    child_main(globals())
