"""The recovery gate reads the driver lease: an idle live stream is refused, whatever else it shows.

An idle processing-time stream commits no batch and opens no transaction: after the quiet period
its checkpoint and its transactions look like a stopped job's, and only the lease its driver
renews says that it runs. The reviewer reproduced a rewind moving checkpoint files under such a
query. Here: a real broker, a checkpoint on disk, and the lease written by the driver's own
:class:`LeaseKeeper` (or :func:`write_driver_lease`), with the use cases rewind, align and abort
executing.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver_lease import DriverLease, write_driver_lease
from airflow_provider_eos.core.errors import UnsafeToActError
from airflow_provider_eos.spark.driver_lease import LeaseKeeper
from airflow_provider_eos.usecases.abort import abort
from airflow_provider_eos.usecases.align import align
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.rewind import rewind
from tests.integration.test_recovery_cli import Pipeline, group_coordinator_ready  # noqa: F401 (autouse fixture)
from tests.integration.test_transactions_recovery import fence_quietly, open_transaction_and_sigkill

pytestmark = pytest.mark.integration

TOKEN = "eos-lease-gate-test"


@pytest.fixture
def pipeline(bootstrap: str, topic_factory, tmp_path: Path) -> Pipeline:
    made = Pipeline(bootstrap, tmp_path, topic_factory("in", partitions=2), topic_factory("out"))
    # An hour-old commit and nothing open under the prefix: without the lease the job looks stopped.
    made.write_checkpoint(planned=2, committed=2)
    return made


def _clients(pipeline: Pipeline) -> PipelineClients:
    return PipelineClients.from_spec_file(pipeline.spec_file)


def _keeper(pipeline: Pipeline) -> LeaseKeeper:
    keeper = LeaseKeeper(CheckpointReader(str(pipeline.checkpoint)), TOKEN, ttl_s=30, app_id="local-idle-stream")
    keeper.acquire()
    return keeper


def _refused_by_the_lease(call) -> str:
    with pytest.raises(UnsafeToActError) as refused:
        call()
    message = str(refused.value)
    assert "driver lease" in message and TOKEN in message and "local-idle-stream" in message, message
    return message


@pytest.mark.parametrize("then", ["released", "expired", "forced"])
def test_rewind_is_refused_while_the_lease_is_fresh(pipeline: Pipeline, then: str) -> None:
    pipeline.commit_group(1)  # KAFKA_BEHIND: the plan rewinds to batch 1
    keeper = _keeper(pipeline)
    try:
        _refused_by_the_lease(lambda: rewind(_clients(pipeline), to_batch=1, execute=True))
        assert (pipeline.checkpoint / "commits" / "2").exists()  # nothing moved
        force = then == "forced"
        if then == "released":
            keeper.release(query_stopped=True)
        elif then == "expired":  # a SIGKILLed driver: its last renewal is older than ttl + 10 s
            keeper.release(query_stopped=False)
            now = dt.datetime.now(dt.UTC)
            write_driver_lease(CheckpointReader(str(pipeline.checkpoint)), DriverLease(
                token=TOKEN, host="worker-7", pid=4242, started_at=now - dt.timedelta(minutes=5),
                renewed_at=now - dt.timedelta(seconds=60), ttl_s=30, sequence=3))
        outcome = rewind(_clients(pipeline), to_batch=1, execute=True, force=force)
    finally:
        keeper.release(query_stopped=True)
    assert outcome.report.executed and not (pipeline.checkpoint / "commits" / "2").exists()
    assert outcome.safety is not None and outcome.safety.forced is force
    if force:
        assert any("driver lease" in reason for reason in outcome.safety.reasons)


def test_align_is_refused_while_the_lease_is_fresh_and_runs_once_released(pipeline: Pipeline) -> None:
    keeper = _keeper(pipeline)  # the group holds no marker: align would commit offsets/2
    try:
        _refused_by_the_lease(lambda: align(_clients(pipeline), execute=True))
        assert pipeline.group_offsets() == {0: None, 1: None}
    finally:
        keeper.release(query_stopped=True)
    outcome = align(_clients(pipeline), execute=True)
    assert outcome.safety is not None and outcome.safety.safe
    assert pipeline.group_offsets()[0] is not None


def test_abort_names_the_fresh_lease_among_the_signs_of_life(pipeline: Pipeline, bootstrap: str) -> None:
    output = json.loads(pipeline.spec_file.read_text())["output_topic"]
    txn_id = f"{pipeline.prefix}-0"
    open_transaction_and_sigkill(bootstrap, txn_id, output, partition=0)
    keeper = _keeper(pipeline)
    try:
        message = _refused_by_the_lease(lambda: abort(_clients(pipeline), execute=True))
        assert txn_id in message
        keeper.release(query_stopped=True)
        # Released: the young transaction alone still refuses, and the lease is no longer named.
        with pytest.raises(UnsafeToActError) as refused:
            abort(_clients(pipeline), execute=True)
        assert txn_id in str(refused.value) and "driver lease" not in str(refused.value)
        forced = abort(_clients(pipeline), execute=True, force=True)
        assert forced.report.executed and forced.report.safety.forced
    finally:
        keeper.release(query_stopped=True)
        fence_quietly(bootstrap, txn_id)
