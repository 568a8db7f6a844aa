"""Whether an Airflow retry is worth it is a property of the error's type, and the operators, the health
sensor and its trigger all read it there.

A missing ACL is the case that went wrong: the trigger ended its watch at once ("no retry grants an
ACL") while the operators retried the task. The trigger runs with a scripted probe (its Kafka and
checkpoint I/O); everything else is the real code.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, ClassVar

import pendulum
import pytest
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

from airflow_provider_eos.core.acls import ResourceType
from airflow_provider_eos.core.acls.denials import acl_missing
from airflow_provider_eos.core.errors import AclMissingError, EosError, RetryExhaustedError, SinkAuthorizationError
from airflow_provider_eos.kafka.health_probe import HealthProbeError
from airflow_provider_eos.operators.use_case import task_failures
from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
from airflow_provider_eos.triggers.health import StreamingQueryHealthTrigger


class NovelFinalError(EosError):
    """An error type no hand-kept list knows: only its own attribute can say it is final."""

    retryable: ClassVar[bool] = False


def refused() -> AclMissingError:
    return acl_missing("OffsetFetch", ResourceType.GROUP, ["orders-sink"], principal="User:health")


def unreachable() -> EosError:
    return HealthProbeError("broker localhost:1 unreachable", fix="start it")


def operator_failure(error: EosError) -> AirflowException:
    with pytest.raises(AirflowException) as raised, task_failures():
        raise error
    return raised.value


@pytest.fixture
def spec_path(tmp_path: Path) -> str:
    path = tmp_path / "orders.json"
    path.write_text(json.dumps({
        "name": "orders", "kafka": {"bootstrap.servers": "localhost:1"}, "input_topics": ["orders"],
        "output_topic": "orders-out", "group_id": "orders-sink", "transactional_id_prefix": "orders-eos",
        "checkpoint_location": str(tmp_path / "checkpoint"), "trigger": "1 second", "transaction_timeout_ms": 60_000,
    }))
    return str(path)


def trigger_event(spec_path: str, monkeypatch: pytest.MonkeyPatch, error: EosError) -> dict[str, Any]:
    calls: list[int] = []

    def sample() -> None:
        calls.append(1)
        raise error

    monkeypatch.setattr(StreamingQueryHealthTrigger, "_sample", staticmethod(sample))
    trigger = StreamingQueryHealthTrigger(spec_path=spec_path, watch="watch", poke_interval=0.01, max_probe_failures=3,
                                          committed_after=pendulum.now("UTC").isoformat())

    async def first() -> dict[str, Any]:
        return (await asyncio.wait_for(anext(trigger.run()), 30)).payload

    payload = asyncio.run(first())
    return {**payload, "samples": len(calls)}


def test_the_error_types_say_whether_a_retry_can_help() -> None:
    assert EosError.retryable is True, "an unforeseen condition (a broker away) is worth a retry"
    assert AclMissingError.retryable is False, "no retry grants an ACL"
    assert SinkAuthorizationError.retryable is False, "a sink refused for an ACL is an ACL missing"
    assert HealthProbeError.retryable is True and RetryExhaustedError.retryable is True


def test_a_missing_acl_fails_the_operator_task_without_retry() -> None:
    assert isinstance(operator_failure(refused()), AirflowFailException)


def test_a_transient_error_is_retried_by_the_operator_task() -> None:
    failure = operator_failure(unreachable())
    assert not isinstance(failure, AirflowFailException) and "unreachable" in str(failure)


def test_the_operator_reads_the_type_not_a_list() -> None:
    assert isinstance(operator_failure(NovelFinalError("final", fix="fix it")), AirflowFailException)


def test_the_trigger_agrees_a_missing_acl_ends_the_watch_at_once_and_the_sensor_does_not_retry(
        spec_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    event = trigger_event(spec_path, monkeypatch, refused())
    assert event["outcome"] == "error" and event["samples"] == 1 and event["retryable"] is False
    sensor = StreamingQueryHealthSensor(task_id="health", spec_path=spec_path, do_xcom_push=False)
    with pytest.raises(AirflowFailException, match="refused"):
        sensor.execute_complete({}, event)


def test_the_trigger_samples_again_after_a_transient_error_and_the_sensor_retries(
        spec_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    event = trigger_event(spec_path, monkeypatch, unreachable())
    assert event["outcome"] == "error" and event["samples"] == 3 and event["retryable"] is True
    sensor = StreamingQueryHealthSensor(task_id="health", spec_path=spec_path, do_xcom_push=False)
    with pytest.raises(AirflowException) as raised:
        sensor.execute_complete({}, event)
    assert not isinstance(raised.value, AirflowFailException)


def test_the_trigger_and_the_sensors_own_check_read_the_type_not_a_list(
        spec_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    event = trigger_event(spec_path, monkeypatch, NovelFinalError("final", fix="fix it"))
    assert event["samples"] == 1 and event["retryable"] is False
    sensor = StreamingQueryHealthSensor(task_id="health", spec_path=spec_path, do_xcom_push=False)

    def sample_refused(*args: object, **kwargs: object) -> None:
        raise refused()

    from airflow_provider_eos.usecases import health as health_usecase

    monkeypatch.setattr(health_usecase, "sample", sample_refused)
    monkeypatch.setattr(StreamingQueryHealthSensor, "_load", lambda self: (None, {}))
    with pytest.raises(AirflowFailException, match="refused"):
        sensor._check({})  # type: ignore[arg-type]  # no task instance: nothing to record the outcome in
