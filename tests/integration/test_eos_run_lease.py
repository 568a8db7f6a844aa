"""An ``eos run`` driver holds the pipeline's lease, and no second driver starts beside a live holder.

A reviewer's suspicion, reproduced with the real parts: ``eos run`` started its driver with no
driver token, so it took no lease, and no liveness check saw an idle ``eos run`` stream (the
recovery gate's, the submit operator's check for a running driver); and the lease keeper wrote
its lease over a live holder's, so a DAG's driver started beside it, two writers on the same
transactional ids and two queries on one checkpoint. Here: a real broker, local Spark, a plain
``eos run`` stream, then a driver tagged as the submit operator tags it.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from airflow_provider_eos.core.dag_ids import pipeline_dag_id
from airflow_provider_eos.core.driver import (
    DRIVER_OWNER_PID_ENV,
    DRIVER_TOKEN_ENV,
    DriverHandle,
    Liveness,
    driver_token,
    is_driver_token,
)
from airflow_provider_eos.core.driver_lease import read_driver_lease
from airflow_provider_eos.core.submit_environment import submit_environment
from airflow_provider_eos.spark.driver_processes import this_host_identity
from airflow_provider_eos.spark.submit_command import plan_submit, spark_submit_executable
from airflow_provider_eos.usecases.driver_liveness import observe_driver_anywhere
from airflow_provider_eos.usecases.liveness import lease_signs_of_life
from tests.support.observers import another_worker
from tests.support.pipeline import (
    PipelineHarness,
    assert_exactly_once,
    json_events,
    kill_group,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _dag_token(harness: PipelineHarness) -> str:
    """The token a new run of the pipeline's DAG gives its driver (the submit operator's)."""
    return driver_token(harness.spec.name, pipeline_dag_id(harness.spec.name), f"manual__{time.time()}")


def _refused_beside(harness: PipelineHarness, holder: str, env_extra: dict[str, str] | None = None) -> str:
    """Start a second driver on the harness's checkpoint: it must end at once, refused by the lease ``holder``
    holds (exit 2; the lease's own refusal, not any failure: its class does not contain "DriverLeaseError").
    Returns its log."""
    refused = harness.run(timeout_s=300, env_extra=env_extra)
    assert refused.returncode == 2, f"a second driver ran beside the holder (exit {refused.returncode}):\n" + \
        refused.log[-4000:]
    assert "another driver holds the pipeline's lease" in refused.log and holder in refused.log, refused.log[-4000:]
    return refused.log


def test_a_dag_driver_is_refused_beside_a_live_eos_run_stream_which_releases_the_lease_when_it_stops(
    bootstrap: str, tmp_path: Path
) -> None:
    harness = PipelineHarness(bootstrap, tmp_path, trigger="2 seconds", max_offsets_per_trigger=100,
                              writers="driver", transform=None, master="local[1]")
    records, valid, malformed = json_events(200)
    harness.produce_input(records)
    checkpoint = harness.checkpoint()

    stream, stream_log = harness.start()  # plain `eos run`: no token in its environment
    try:
        drained = wait_for(lambda: stream.poll() is not None or (checkpoint.latest_committed_batch() or 0) >= 1, 240)
        assert drained and stream.poll() is None, stream_log.read_text(errors="replace")[-4000:]
        # Idle now: no batch, no transaction. Only its lease says that it runs.
        held = read_driver_lease(checkpoint)
        assert held is not None and not held.released, f"`eos run` took no lease: {held}"
        assert is_driver_token(held.token) and held.app_id, held
        assert lease_signs_of_life(checkpoint), "the recovery gate sees no sign of the idle `eos run` stream"
        now = dt.datetime.now(dt.UTC)
        dag_driver = DriverHandle(pipeline=harness.spec.name, token=_dag_token(harness), master="local[2]",
                                  submitted_at=now, earliest_start=now, **this_host_identity().model_dump())
        seen = observe_driver_anywhere(dag_driver, checkpoint, here=another_worker())
        assert seen.liveness is Liveness.ALIVE, f"the submit's check sees no driver running: {seen.evidence}"

        # A driver of the DAG, tagged as the submit operator tags it, must not start beside the stream.
        refusal = _refused_beside(harness, held.token, env_extra={DRIVER_TOKEN_ENV: dag_driver.token})
        assert f"pid {held.pid}" in refusal and "Fix:" in refusal, refusal[-4000:]
        assert stream.poll() is None, "the refused driver stopped the stream"
        still = read_driver_lease(checkpoint)
        assert still is not None and still.token == held.token and not still.released, still

        # The stream's clean end (SIGTERM to `eos run`, forwarded to its driver) releases its lease.
        stream.send_signal(signal.SIGTERM)
        assert stream.wait(120) == 0, stream_log.read_text(errors="replace")[-4000:]
    finally:
        kill_group(stream)
    released = read_driver_lease(checkpoint)
    assert released is not None and released.token == held.token and released.released, released
    assert not lease_signs_of_life(checkpoint)

    # Now the DAG's driver starts, drains what is left and ends; exactly once across the two drivers.
    harness.produce_input(json_events(50, prefix="late")[0])
    harness.with_overrides(trigger="available_now")
    third, third_log = harness.start(env_extra={DRIVER_TOKEN_ENV: dag_driver.token})
    try:
        assert third.wait(300) == 0, third_log.read_text(errors="replace")[-4000:]
    finally:
        kill_group(third)
    ended = read_driver_lease(checkpoint)
    assert ended is not None and ended.token == dag_driver.token and ended.released, ended
    late = json_events(50, prefix="late")
    assert_exactly_once(harness, valid + late[1], malformed + late[2])


def test_a_driver_spark_submitted_by_hand_holds_the_lease_and_no_eos_run_starts_beside_it(
    bootstrap: str, tmp_path: Path
) -> None:
    """spark-submit of the job without a driver token (what no operator or ``eos run`` does): the driver
    names itself and takes the lease, so the recovery gate sees it and a second driver is refused."""
    harness = PipelineHarness(bootstrap, tmp_path, trigger="2 seconds", max_offsets_per_trigger=100,
                              writers="driver", transform=None, master="local[1]")
    records, valid, malformed = json_events(200)
    harness.produce_input(records)
    checkpoint = harness.checkpoint()
    (tmp_path / "submit").mkdir(mode=0o700)
    plan = plan_submit(harness.spec_file, harness.spec, mode="exactly-once", work_dir=tmp_path / "submit")
    shell = {k: v for k, v in os.environ.items() if k not in (DRIVER_TOKEN_ENV, DRIVER_OWNER_PID_ENV)}
    hand_log = tmp_path / "by-hand.log"
    with hand_log.open("w") as out:
        by_hand = subprocess.Popen(plan.command(spark_submit_executable(), "local[1]"), stdout=out,
                                   stderr=subprocess.STDOUT, env=submit_environment(shell, plan.environment()),
                                   start_new_session=True)
    try:
        drained = wait_for(lambda: by_hand.poll() is not None or (checkpoint.latest_committed_batch() or 0) >= 1, 240)
        assert drained and by_hand.poll() is None, hand_log.read_text(errors="replace")[-4000:]
        held = read_driver_lease(checkpoint)
        assert held is not None and not held.released, f"the driver submitted by hand took no lease: {held}"
        assert is_driver_token(held.token) and held.host == this_host_identity().host, held
        assert f"it holds the lease as {held.token}" in hand_log.read_text(errors="replace")
        assert lease_signs_of_life(checkpoint), "the recovery gate sees no sign of the driver submitted by hand"

        _refused_beside(harness, held.token)  # a plain `eos run` on the same checkpoint
        assert by_hand.poll() is None, "the refused driver stopped the one submitted by hand"

        # SIGTERM to its Python driver (the lease names it) stops it between batches and releases the lease.
        os.kill(held.pid, signal.SIGTERM)
        assert by_hand.wait(120) == 0, hand_log.read_text(errors="replace")[-4000:]
    finally:
        kill_group(by_hand)
    released = read_driver_lease(checkpoint)
    assert released is not None and released.token == held.token and released.released, released

    # `eos run` takes over, drains what is left; exactly once across the two drivers.
    harness.with_overrides(trigger="available_now")
    drained = harness.run(timeout_s=300)
    assert drained.returncode == 0, drained.log[-4000:]
    assert_exactly_once(harness, valid, malformed)
