"""stop_stream and a new submit on another worker than the driver's: the lease decides (issue 26, note 37).

From another host the process table says nothing. stop_stream succeeds only once the lease shows
the driver ended, and fails as soon as the lease is renewed (a running driver it cannot signal);
a new submission waits while the lease is alive, and goes ahead once it is released.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver import (
    DriverHandle,
    EvidenceSource,
    HostIdentity,
    Liveness,
    driver_token,
)
from airflow_provider_eos.core.driver_lease import DriverLease, lease_holder, write_driver_lease
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.spark.driver_processes import this_host_identity
from airflow_provider_eos.usecases.driver_liveness import (
    earlier_driver,
    observe_driver_anywhere,
    wait_while_driver_alive,
)
from tests.support.task_instances import SubmittedDriverTI

RUN_ID = "manual__2026-11-27"
TOKEN = driver_token("orders", "eos_pipeline__orders", RUN_ID)
ELSEWHERE = HostIdentity(host="another-worker")


def _handle(now: dt.datetime) -> DriverHandle:
    # Submitted from another worker: its process table is nothing this one can read.
    return DriverHandle(pipeline="orders", token=TOKEN, host="celery-worker-7", submitted_at=now - dt.timedelta(
        minutes=5), boot_id="another-boot", pid_namespace=1, uid=50000)


def _lease(now: dt.datetime, *, sequence: int, released: bool = False, age_s: float = 1) -> DriverLease:
    return DriverLease(token=TOKEN, host="celery-worker-7", pid=4242, started_at=now - dt.timedelta(minutes=4),
                       renewed_at=now - dt.timedelta(seconds=age_s), ttl_s=30, sequence=sequence, released=released)


def _stop_stream(tmp_path: Path) -> tuple[Any, dict, CheckpointReader, dt.datetime]:
    from airflow_provider_eos.operators.driver import StopPipelineDriverOperator

    spec = PipelineSpec(name="orders", kafka={"bootstrap.servers": "b:9092"}, input_topics=["in"],
                        output_topic="out", group_id="g", transactional_id_prefix="orders",
                        checkpoint_location=str(tmp_path / "checkpoint"))
    spec_file = tmp_path / "orders.yaml"
    spec_file.write_text(yaml.safe_dump(spec.to_dict()))
    now = dt.datetime.now(dt.UTC)
    operator = StopPipelineDriverOperator(task_id="stop_stream", spec_path=str(spec_file),
                                          submit_task_ids=["submit_stream"], grace_period_s=20)
    context = {"ti": SubmittedDriverTI(_handle(now)), "run_id": RUN_ID}
    return operator, context, CheckpointReader(spec.checkpoint_location), now


@pytest.mark.airflow
def test_stop_stream_elsewhere_succeeds_on_a_released_lease(tmp_path: Path) -> None:
    operator, context, checkpoint, now = _stop_stream(tmp_path)
    write_driver_lease(checkpoint, _lease(now, sequence=9, released=True))
    seen = operator.execute(context)
    assert seen["liveness"] == "GONE" and "driver lease: GONE" in seen["evidence"], seen["evidence"]


@pytest.mark.airflow
def test_stop_stream_elsewhere_refuses_as_soon_as_the_lease_is_renewed(tmp_path: Path) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    operator, context, checkpoint, now = _stop_stream(tmp_path)
    write_driver_lease(checkpoint, _lease(now, sequence=9))
    renewal = threading.Timer(0.5, lambda: write_driver_lease(checkpoint, _lease(dt.datetime.now(dt.UTC),
                                                                                  sequence=10, age_s=0)))
    renewal.start()
    began = time.monotonic()
    with pytest.raises(AirflowFailException) as failed:
        operator.execute(context)
    assert time.monotonic() - began < 10, "it waited for the grace period instead of the renewal"
    message = str(failed.value)
    assert "could not be stopped from" in message and "it runs on celery-worker-7" in message, message
    assert "the lease was renewed while this host waited" in message, message


def test_a_new_submission_waits_while_the_lease_lives_and_goes_ahead_once_it_is_released(tmp_path: Path) -> None:
    checkpoint = CheckpointReader(str(tmp_path / "checkpoint"))
    now = dt.datetime.now(dt.UTC)
    write_driver_lease(checkpoint, _lease(now, sequence=3))
    handle = _handle(now)
    assert wait_while_driver_alive(handle, checkpoint, 0.5, 0.1, here=ELSEWHERE).liveness is Liveness.ALIVE
    threading.Timer(0.3, lambda: write_driver_lease(checkpoint, _lease(now, sequence=4, released=True))).start()
    seen = wait_while_driver_alive(handle, checkpoint, 5, 0.1, here=ELSEWHERE)
    assert seen.liveness is Liveness.GONE, seen.evidence
    # Nothing known of any driver (a first attempt): nothing to wait for.
    empty = CheckpointReader(str(tmp_path / "empty"))
    assert wait_while_driver_alive(handle, empty, 5, 0.1, here=ELSEWHERE).liveness is Liveness.UNKNOWN


def test_a_retry_on_a_new_host_of_the_same_name_judges_the_earlier_driver_where_its_lease_says_it_runs(
        tmp_path: Path) -> None:
    # The retry's own handle: the run's token, this host's identity. The earlier driver wrote its lease from
    # another pid namespace of a host with the same name (a worker started anew), where it still runs.
    here = this_host_identity()
    checkpoint = CheckpointReader(str(tmp_path / "checkpoint"))
    now = dt.datetime.now(dt.UTC)
    own = DriverHandle(pipeline="orders", token=TOKEN, submitted_at=now, **here.model_dump())
    elsewhere = here.model_copy(update={"pid_namespace": (here.pid_namespace or 0) + 1})
    write_driver_lease(checkpoint, _lease(now, sequence=3).model_copy(update=elsewhere.model_dump()))

    earlier = earlier_driver(own, checkpoint)
    assert earlier.identity == elsewhere and earlier.token == TOKEN
    seen = observe_driver_anywhere(earlier, checkpoint, here=here)
    said = {each.source: each.says for each in seen.sources}
    # Not GONE: no process here carries the token, but this process table cannot see that pid namespace.
    assert said[EvidenceSource.PROCESS_TABLE] is Liveness.UNKNOWN, seen.evidence
    assert said[EvidenceSource.LEASE] is Liveness.ALIVE and seen.liveness is Liveness.ALIVE, seen.evidence
    # Judged with its own handle, this host's process table would have claimed the driver gone.
    mistaken = {each.source: each.says for each in observe_driver_anywhere(own, checkpoint, here=here).sources}
    assert mistaken[EvidenceSource.PROCESS_TABLE] is Liveness.GONE


def test_a_lease_of_another_run_or_none_leaves_the_retrys_handle_as_it_is(tmp_path: Path) -> None:
    now = dt.datetime.now(dt.UTC)
    own = _handle(now)
    assert lease_holder(own, None) is own
    other_token = driver_token("orders", "eos_pipeline__orders", "other")
    other_run = _lease(now, sequence=1).model_copy(update={"token": other_token, "host": "elsewhere"})
    assert lease_holder(own, other_run) is own
    # A lease written before it recorded more than the host name: judged by the name alone, as then.
    old = DriverLease.model_validate_json(_lease(now, sequence=2).model_dump_json(
        exclude={"boot_id", "pid_namespace", "uid"}))
    assert lease_holder(own, old).identity == HostIdentity(host="celery-worker-7")
    # An unreadable lease: its own evidence says what is wrong; the handle stays.
    broken = CheckpointReader(str(tmp_path / "checkpoint"))
    broken.fs.makedirs(broken.path("eos"), exist_ok=True)
    broken.fs.pipe(broken.path("eos", "driver-lease.json"), b"{not json")
    assert earlier_driver(own, broken) is own
