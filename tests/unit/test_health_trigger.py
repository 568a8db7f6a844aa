"""The health trigger's serialization and polling loop, and the sensor's hand-over to it, with a fake probe.

The probe (Kafka and checkpoint I/O) is replaced by a scripted function; the rules are the
real ones. The real broker and a real job are in tests/integration/test_health_live.py and
tests/dags/test_health_sensor.py.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pendulum
import pytest

from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.health import (
    HealthSample,
    InputPartitionSample,
    LagWindow,
    VerificationSample,
)
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.triggers.health import StreamingQueryHealthTrigger

TP = TopicPartition("orders", 0)
CLASSPATH = "airflow_provider_eos.triggers.health.StreamingQueryHealthTrigger"


@pytest.fixture
def spec_path(tmp_path: Path) -> str:
    path = tmp_path / "orders.json"
    path.write_text(json.dumps({
        "name": "orders",
        "kafka": {"bootstrap.servers": "localhost:1"},
        "input_topics": ["orders"],
        "output_topic": "orders-out",
        "group_id": "orders-sink",
        "transactional_id_prefix": "orders-eos",
        "checkpoint_location": str(tmp_path / "checkpoint"),
        "trigger": "1 second",
        "transaction_timeout_ms": 60_000,
    }))
    return str(path)


def now_ms() -> int:
    return int(pendulum.now("UTC").timestamp() * 1000)


def make_sample(
    *, committed: int, lso: int, marker: int, commit_ms: int | None, verdict: str = "IN_SYNC"
) -> HealthSample:
    return HealthSample(
        taken_at_ms=now_ms(),
        inputs=(InputPartitionSample(tp=TP, lso=lso, hwm=lso, log_start=0, committed=committed,
                                     marker_batch=marker),),
        query_id="q1",
        last_committed=None if commit_ms is None else marker,
        last_commit_time_ms=commit_ms,
        verification=VerificationSample(verdict=verdict, ok=verdict in ("IN_SYNC", "KAFKA_AHEAD_SAFE")),
    )


class FakeProbe:
    """Stands in for ``StreamingQueryHealthTrigger._sample``: each call runs the next step."""

    def __init__(self, steps: list[Callable[[], HealthSample]]) -> None:
        self.steps = steps
        self.calls = 0
        self.threads: set[int] = set()

    # Set on the class, an instance is not bound as a method: it is called without the trigger.
    def __call__(self) -> HealthSample:
        self.threads.add(threading.get_ident())
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        return step()


@pytest.fixture
def fake_probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[list[Callable[[], HealthSample]]], FakeProbe]]:
    def install(steps: list[Callable[[], HealthSample]]) -> FakeProbe:
        fake = FakeProbe(steps)
        monkeypatch.setattr(StreamingQueryHealthTrigger, "_sample", fake)
        return fake

    yield install


@pytest.fixture
def kafka_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reachability probe passes (the spec's broker is localhost:1): the tests' fake probe is the sample."""
    from airflow_provider_eos.usecases.clients import PipelineClients

    monkeypatch.setattr(PipelineClients, "require_kafka", lambda self: None)


def first_event(trigger: StreamingQueryHealthTrigger, timeout_s: float = 30) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        event = await asyncio.wait_for(anext(trigger.run()), timeout_s)
        return event.payload

    return asyncio.run(go())


def trigger(spec_path: str, **kwargs: Any) -> StreamingQueryHealthTrigger:
    defaults: dict[str, Any] = {
        "spec_path": spec_path,
        "committed_after": pendulum.now("UTC").isoformat(),
        "poke_interval": 0.05,
    }
    return StreamingQueryHealthTrigger(**{**defaults, **kwargs})


# -- serialization -----------------------------------------------------------------------------


def test_serialize_round_trip_keeps_every_argument_and_the_window(spec_path: str) -> None:
    from airflow.providers.common.compat.module_loading import import_string

    from tests.support.airflow_compat import serde_module

    serialize, deserialize = serde_module().serialize, serde_module().deserialize

    window = LagWindow([make_sample(committed=5, lso=10, marker=1, commit_ms=now_ms())], max_samples=4)
    original = trigger(
        spec_path,
        watch="watch",
        timeout_at="2030-01-01T00:00:00+00:00",
        window=window.to_dict(),
        max_samples=4,
        thresholds={"stop_after_ms": 5000},
        kafka_conn_id="kafka_default",
        checkpoint_conn_id="s3",
        max_probe_failures=5,
        kafka_connect_timeout_s=2.5,
    )
    classpath, kwargs = original.serialize()
    assert classpath == CLASSPATH
    # The way Airflow stores and revives it: serde-encoded kwargs, class imported by path.
    revived = import_string(classpath)(**deserialize(serialize(kwargs)))
    assert revived.serialize() == (classpath, kwargs)
    assert LagWindow.from_dict(revived.window) == window
    assert json.loads(json.dumps(kwargs)) == kwargs


def test_unknown_watch_mode_is_refused(spec_path: str) -> None:
    with pytest.raises(EosError, match="watch mode"):
        trigger(spec_path, watch="poke")


# -- run() -------------------------------------------------------------------------------------


def test_wait_healthy_fires_on_the_first_commit_after_the_start(spec_path: str, fake_probe) -> None:
    started = now_ms()
    fake = fake_probe([
        lambda: make_sample(committed=5, lso=10, marker=1, commit_ms=started - 60_000),  # from before the start
        lambda: make_sample(committed=5, lso=10, marker=1, commit_ms=started - 60_000),
        lambda: make_sample(committed=10, lso=10, marker=2, commit_ms=now_ms()),
    ])
    payload = first_event(trigger(spec_path, committed_after=pendulum.from_timestamp(started / 1000).isoformat()))
    assert payload["outcome"] == "healthy" and payload["watch"] == "wait_healthy"
    assert fake.calls == 3
    assert payload["report"]["last_committed"] == 2 and payload["report"]["status"] == "HEALTHY"
    assert "Health of pipeline 'orders'" in payload["table"]
    # Sampling ran off the event loop's thread.
    assert threading.get_ident() not in fake.threads


def test_wait_healthy_ignores_an_unhealthy_start_and_times_out_with_the_last_report(spec_path: str, fake_probe) -> None:
    fake_probe([lambda: make_sample(committed=5, lso=10, marker=1, commit_ms=None, verdict="DIVERGED")])
    deadline = pendulum.now("UTC").add(seconds=0.5)
    payload = first_event(trigger(spec_path, timeout_at=deadline.isoformat()))
    assert payload["outcome"] == "timeout"
    assert "no batch was committed after" in payload["message"]
    assert payload["report"]["status"] == "UNHEALTHY"


def test_watch_fires_when_the_window_shows_a_stall(spec_path: str, fake_probe) -> None:
    # The sensor's own check is the first sample; two more with the marker advancing and the
    # offset stuck make the STALL rule (3 samples) fire.
    fresh = now_ms()
    window = LagWindow([make_sample(committed=5, lso=10, marker=1, commit_ms=fresh)])
    markers = iter([2, 3, 4, 5])
    fake = fake_probe([lambda: make_sample(committed=5, lso=10, marker=next(markers), commit_ms=now_ms())])
    payload = first_event(trigger(spec_path, watch="watch", window=window.to_dict()))
    assert payload["outcome"] == "unhealthy" and payload["watch"] == "watch"
    assert fake.calls == 2  # the carried sample counted
    (row,) = payload["report"]["partitions"]
    assert row["status"] == "STALL" and row["samples"] == 3
    assert "STALL" in payload["table"]


def test_watch_times_out_quietly_when_healthy(spec_path: str, fake_probe) -> None:
    fake_probe([lambda: make_sample(committed=10, lso=10, marker=1, commit_ms=now_ms())])
    deadline = pendulum.now("UTC").add(seconds=0.4).isoformat()
    payload = first_event(trigger(spec_path, watch="watch", timeout_at=deadline))
    assert payload["outcome"] == "timeout" and "without an unhealthy report" in payload["message"]
    assert payload["report"]["status"] == "HEALTHY"


def test_failing_samples_end_with_an_error_event_after_max_failures(spec_path: str, fake_probe) -> None:
    def broken() -> HealthSample:
        raise EosError("broker localhost:1 unreachable", fix="start it")

    fake = fake_probe([broken])
    payload = first_event(trigger(spec_path, watch="watch", max_probe_failures=3))
    assert payload["outcome"] == "error" and fake.calls == 3
    assert "3 health samples in a row failed" in payload["message"] and "unreachable" in payload["message"]
    assert payload["report"] is None


def test_a_refused_sample_ends_with_an_error_event_at_once_naming_the_acl(spec_path: str, fake_probe) -> None:
    from airflow_provider_eos.core.acls import ResourceType
    from airflow_provider_eos.core.acls.denials import acl_missing

    def refused() -> HealthSample:
        raise acl_missing("OffsetFetch", ResourceType.GROUP, ["orders-sink"], principal="User:health")

    fake = fake_probe([refused])
    payload = first_event(trigger(spec_path, watch="watch", max_probe_failures=3))
    assert payload["outcome"] == "error" and fake.calls == 1
    assert "refused" in payload["message"] and "DESCRIBE on GROUP 'orders-sink'" in payload["message"]


def test_a_failed_sample_between_good_ones_is_tolerated(spec_path: str, fake_probe) -> None:
    def broken() -> HealthSample:
        raise EosError("transient")

    fake = fake_probe([
        lambda: make_sample(committed=5, lso=10, marker=1, commit_ms=None),
        broken,
        broken,
        lambda: make_sample(committed=10, lso=10, marker=2, commit_ms=now_ms()),
    ])
    payload = first_event(trigger(spec_path, max_probe_failures=3))
    assert payload["outcome"] == "healthy" and fake.calls == 4


def test_the_window_is_carried_in_the_trigger_between_polls(spec_path: str, fake_probe) -> None:
    fake_probe([lambda: make_sample(committed=10, lso=10, marker=1, commit_ms=None)])
    t = trigger(spec_path, timeout_at=pendulum.now("UTC").add(seconds=0.4).isoformat(), max_samples=3)
    first_event(t)
    window = LagWindow.from_dict(t.serialize()[1]["window"])
    assert len(window) == 3 and window.max_samples == 3


# -- the sensor's synchronous check and hand-over ----------------------------------------------


def test_sensor_checks_once_then_defers_with_its_sample_in_the_trigger(spec_path: str, monkeypatch,
                                                                      kafka_answers) -> None:
    from airflow.providers.common.compat.sdk import TaskDeferred

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
    from airflow_provider_eos.usecases import health as health_usecase

    calls: list[str] = []

    def fake(spec, **kwargs) -> HealthSample:
        calls.append(spec.name)
        return make_sample(committed=5, lso=10, marker=1, commit_ms=now_ms() - 60_000)

    monkeypatch.setattr(health_usecase, "probe", fake)
    sensor = StreamingQueryHealthSensor(
        task_id="health", spec_path=spec_path, poke_interval=7, timeout=600, thresholds={"stop_after_ms": 9000},
        kafka_connect_timeout_s=3,
    )
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})
    assert calls == ["orders"]
    handed = deferred.value.trigger
    assert isinstance(handed, StreamingQueryHealthTrigger) and deferred.value.method_name == "execute_complete"
    assert handed.watch == "wait_healthy" and handed.poke_interval == 7 and handed.thresholds == {"stop_after_ms": 9000}
    assert handed.kafka_connect_timeout_s == 3, "each of the trigger's samples waits as long for a broker"
    assert len(LagWindow.from_dict(handed.window)) == 1
    assert pendulum.parse(handed.timeout_at) > pendulum.parse(handed.committed_after)
    assert deferred.value.timeout.total_seconds() > 600


def test_sensor_thresholds_rendered_from_templates_count_as_integers(spec_path: str, monkeypatch,
                                                                      kafka_answers) -> None:
    """Jinja renders ``"{{ var.value.warn_ms }}"`` as the string ``"5000"``: the check and the trigger get 5000."""
    from airflow.providers.common.compat.sdk import TaskDeferred

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
    from airflow_provider_eos.usecases import health as health_usecase

    monkeypatch.setattr(health_usecase, "probe",
                        lambda spec, **kw: make_sample(committed=5, lso=10, marker=1, commit_ms=now_ms() - 60_000))
    sensor = StreamingQueryHealthSensor(
        task_id="health", spec_path=spec_path,
        thresholds={"warn_after_ms": "{{ params.warn_ms }}", "stop_after_ms": 90_000, "min_samples": "{{ params.n }}"},
    )
    sensor.render_template_fields({"params": {"warn_ms": 5000, "n": " 4 "}})
    assert sensor.thresholds == {"warn_after_ms": "5000", "stop_after_ms": 90_000, "min_samples": " 4 "}
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})
    assert deferred.value.trigger.thresholds == {"warn_after_ms": 5000, "stop_after_ms": 90_000, "min_samples": 4}


@pytest.mark.parametrize(("thresholds", "named"), [
    ({"warn_after_ms": "5s"}, "health threshold warn_after_ms is '5s'"),
    ({"warn_after_ms": "-5000"}, "health threshold warn_after_ms is '-5000'"),
    ({"stop_after_ms": "0"}, "health threshold stop_after_ms is 0"),
    ("{'warn_after_ms': 5000}", "thresholds is \"{'warn_after_ms': 5000}\", not a dict"),
])
def test_sensor_thresholds_that_render_as_no_integer_fail_naming_the_field(
    spec_path: str, monkeypatch, kafka_answers, thresholds: Any, named: str
) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
    from airflow_provider_eos.usecases import health as health_usecase

    monkeypatch.setattr(health_usecase, "probe",
                        lambda spec, **kw: make_sample(committed=5, lso=10, marker=1, commit_ms=now_ms()))
    for deferrable in (True, False):
        sensor = StreamingQueryHealthSensor(task_id="health", spec_path=spec_path, thresholds=thresholds,
                                            deferrable=deferrable, poke_interval=0, do_xcom_push=False)
        with pytest.raises(AirflowFailException) as failed:
            sensor.execute({})
        assert named in str(failed.value), deferrable


def test_sensor_finishes_without_deferring_when_the_first_check_settles_it(spec_path: str, monkeypatch,
                                                                          kafka_answers) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
    from airflow_provider_eos.usecases import health as health_usecase

    monkeypatch.setattr(
        health_usecase, "probe", lambda spec, **kw: make_sample(committed=5, lso=10, marker=1, commit_ms=now_ms(),
                                                             verdict="KAFKA_BEHIND")
    )
    sensor = StreamingQueryHealthSensor(task_id="watch", spec_path=spec_path, watch="watch", do_xcom_push=False)
    with pytest.raises(AirflowFailException, match="UNHEALTHY"):
        sensor.execute({})


def _unhealthy_first_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_eos.usecases import health as health_usecase

    monkeypatch.setattr(
        health_usecase, "probe", lambda spec, **kw: make_sample(committed=5, lso=10, marker=1, commit_ms=now_ms(),
                                                             verdict="KAFKA_BEHIND")
    )


def _unreachable_first_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_eos.core.errors import KafkaUnreachableError
    from airflow_provider_eos.usecases import health as health_usecase

    def unreachable(spec, **kw) -> HealthSample:
        raise KafkaUnreachableError("localhost:1", 5)

    monkeypatch.setattr(health_usecase, "probe", unreachable)


def _raised(call: Callable[[], Any]) -> BaseException:
    try:
        call()
    except BaseException as err:  # whichever Airflow raises (a deferral too) is what is compared
        return err
    raise AssertionError("nothing was raised")


@pytest.mark.parametrize("fail_flag", ["soft_fail", "never_fail", None])
@pytest.mark.parametrize(("first_sample", "outcome"), [
    pytest.param(_unhealthy_first_sample, {"outcome": "unhealthy", "message": "pipeline orders is UNHEALTHY"},
                 id="unhealthy"),
    pytest.param(_unreachable_first_sample, {"outcome": "error", "message": "3 health samples in a row failed"},
                 id="unreachable"),
])
def test_the_check_before_deferring_fails_or_skips_as_the_same_outcome_after_the_deferral(
    spec_path: str, monkeypatch, kafka_answers, fail_flag: str | None, first_sample, outcome: dict[str, str]
) -> None:
    """soft_fail / never_fail: Airflow's resume_execution turns the event's failure into a skip; the first check too.

    Unhealthy is AirflowFailException, unreachable a retryable AirflowException: Airflow (3.3) skips
    both after the deferral under either flag; whatever the installed Airflow does there, the check
    before deferring does the same.
    """
    from airflow.providers.common.compat.sdk import AirflowFailException, AirflowSkipException

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    first_sample(monkeypatch)
    flags = {fail_flag: True} if fail_flag else {}

    def sensor() -> StreamingQueryHealthSensor:
        return StreamingQueryHealthSensor(task_id="watch", spec_path=spec_path, watch="watch", do_xcom_push=False,
                                          **flags)

    event = {"watch": "watch", "report": None, "table": None, **outcome}
    after = _raised(lambda: sensor().resume_execution("execute_complete", {"event": event}, {}))
    before = _raised(lambda: sensor().execute({}))
    assert type(before) is type(after), (before, after)
    if isinstance(after, AirflowSkipException):
        assert before.args == after.args
    if fail_flag == "soft_fail":
        assert isinstance(before, AirflowSkipException)
    elif fail_flag is None:
        assert not isinstance(before, AirflowSkipException)
        assert isinstance(before, AirflowFailException) == (outcome["outcome"] == "unhealthy")


@pytest.mark.parametrize("fail_flag", ["soft_fail", "never_fail"])
def test_a_poking_sensor_skips_as_airflows_poke_loop_does(spec_path: str, monkeypatch, kafka_answers,
                                                          fail_flag: str) -> None:
    """Poking, Airflow's own loop decides: an unhealthy poke or a bad watch mode (AirflowFailException) is a skip."""
    from airflow.providers.common.compat.sdk import AirflowSkipException

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    _unhealthy_first_sample(monkeypatch)
    for watch in ("watch", "bogus"):
        sensor = StreamingQueryHealthSensor(task_id="watch", spec_path=spec_path, watch=watch, deferrable=False,
                                            poke_interval=0, do_xcom_push=False, **{fail_flag: True})
        with pytest.raises(AirflowSkipException, match=fail_flag):
            sensor.execute({})


def test_sensor_execute_complete_translates_each_outcome(spec_path: str) -> None:
    from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, AirflowSensorTimeout

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    sensor = StreamingQueryHealthSensor(task_id="health", spec_path=spec_path, do_xcom_push=False)
    report = {"status": "HEALTHY"}

    def event(outcome: str, watch: str = "wait_healthy") -> dict[str, Any]:
        return {"outcome": outcome, "watch": watch, "message": f"it was {outcome}", "report": report, "table": "TABLE"}

    assert sensor.execute_complete({}, event("healthy")) == report
    assert sensor.execute_complete({}, event("timeout", "watch")) == report
    assert sensor.execute_complete({}, event("driver_stopped", "watch")) == report
    with pytest.raises(AirflowFailException, match=r"(?s)it was unhealthy.*TABLE"):
        sensor.execute_complete({}, event("unhealthy", "watch"))
    with pytest.raises(AirflowSensorTimeout, match="it was timeout"):
        sensor.execute_complete({}, event("timeout"))
    with pytest.raises(AirflowException, match="it was error") as raised:
        sensor.execute_complete({}, event("error"))
    assert not isinstance(raised.value, AirflowFailException)  # retryable


def test_sensor_poke_keeps_the_window_between_pokes(spec_path: str, monkeypatch, kafka_answers) -> None:
    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
    from airflow_provider_eos.usecases import health as health_usecase

    started = now_ms()
    # Each sample is made when it is probed: batch 2's commit is after the sensor's window opened
    # however long the first poke took on a loaded machine.
    script = iter([
        lambda: make_sample(committed=5, lso=10, marker=1, commit_ms=started - 1),
        lambda: make_sample(committed=10, lso=10, marker=2, commit_ms=now_ms() + 5),
    ])
    monkeypatch.setattr(health_usecase, "probe", lambda spec, **kw: next(script)())
    sensor = StreamingQueryHealthSensor(task_id="health", spec_path=spec_path, deferrable=False, poke_interval=0)
    assert sensor.poke({}) is False
    done = sensor.poke({})
    assert done and done.xcom_value["samples"] == 2 and done.xcom_value["last_committed"] == 2


# -- the driver's task ends the watch ----------------------------------------------------------

DRIVER_TASK = {"dag_id": "eos_pipeline__orders", "run_id": "manual__1", "task_id": "submit_stream"}


class PipelineTI:
    """The task instance of a pipeline DAG's watch_stream as the sensor uses it: its ids and XComs."""

    dag_id = "eos_pipeline__orders"

    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value

    def xcom_pull(self, task_ids: str, key: str) -> Any:
        return None  # submit_stream records no run input


def _task_states(monkeypatch: pytest.MonkeyPatch, states: list[str | Exception]) -> list[dict[str, Any]]:
    """Script what the Task SDK answers for the driver's task, one answer per read."""
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

    reads: list[dict[str, Any]] = []
    script = iter(states)

    def get_task_states(**kwargs: Any) -> dict[str, dict[str, str]]:
        reads.append(kwargs)
        answer = next(script, states[-1])
        if isinstance(answer, Exception):
            raise answer
        return {kwargs["run_ids"][0]: {kwargs["task_ids"][0]: answer}}

    monkeypatch.setattr(RuntimeTaskInstance, "get_task_states", staticmethod(get_task_states))
    return reads


def test_watch_ends_as_soon_as_the_drivers_task_failed(spec_path: str, fake_probe, monkeypatch) -> None:
    fake = fake_probe([lambda: make_sample(committed=10, lso=10, marker=1, commit_ms=now_ms())])
    reads = _task_states(monkeypatch, ["running", RuntimeError("comms down"), "running", "failed"])
    payload = first_event(trigger(spec_path, watch="watch", driver_task=DRIVER_TASK))
    assert payload["outcome"] == "driver_failed"
    assert payload["message"] == "submit_stream is failed: the stream no longer runs"
    assert payload["report"]["status"] == "HEALTHY", "the health was fine: only the driver's task ended it"
    assert fake.calls == 3 and len(reads) == 4, "a failed read keeps the watch going"
    assert reads[0] == {"dag_id": "eos_pipeline__orders", "run_ids": ["manual__1"], "task_ids": ["submit_stream"]}


def test_a_failed_drivers_task_ends_the_watch_between_samples_not_a_poke_interval_later(
    spec_path: str, fake_probe, monkeypatch
) -> None:
    """The pipeline DAG's watch samples every 30 s; its driver's task failing (a SIGKILLed driver) must start the
    recovery within DRIVER_STATE_EVERY_S, not at the next sample (before: up to 30 s later)."""
    import time

    from airflow_provider_eos.triggers import health as health_trigger

    monkeypatch.setattr(health_trigger, "DRIVER_STATE_EVERY_S", 0.05)
    fake = fake_probe([lambda: make_sample(committed=10, lso=10, marker=1, commit_ms=now_ms())])
    reads = _task_states(monkeypatch, ["running", "running", "running", "failed"])
    started = time.monotonic()
    payload = first_event(trigger(spec_path, watch="watch", poke_interval=30, driver_task=DRIVER_TASK), timeout_s=20)
    assert payload["outcome"] == "driver_failed", payload
    assert time.monotonic() - started < 10, "ended at the failed read, not at the 30 s sample"
    assert len(reads) == 4 and fake.calls == 0, "the state is read between samples; no sample was due yet"


def test_a_watch_ends_driver_stopped_once_the_drivers_task_succeeded(spec_path: str, fake_probe, monkeypatch) -> None:
    """A driver that exited 0 (``eos stop``, SIGTERM) ends the watch: its run must end, not wait for a deadline."""
    fake = fake_probe([lambda: make_sample(committed=10, lso=10, marker=1, commit_ms=now_ms())])
    reads = _task_states(monkeypatch, ["running", "running", "success"])
    payload = first_event(trigger(spec_path, watch="watch", driver_task=DRIVER_TASK))
    assert payload["outcome"] == "driver_stopped"
    assert "succeeded: the driver stopped cleanly" in payload["message"] and payload["report"]["status"] == "HEALTHY"
    assert fake.calls == 3 and len(reads) == 3, "the sample after the success decides (a zombie would be UNHEALTHY)"


def test_a_watch_beside_a_running_drivers_task_outlasts_any_deadline(spec_path: str, fake_probe, monkeypatch) -> None:
    """The sensor hands a watch beside its driver's task no deadline; it watches on until that task ends."""
    fake = fake_probe([lambda: make_sample(committed=10, lso=10, marker=1, commit_ms=now_ms())])
    _task_states(monkeypatch, ["running"] * 30 + ["failed"])
    payload = first_event(trigger(spec_path, watch="watch", timeout_at=None, driver_task=DRIVER_TASK))
    assert payload["outcome"] == "driver_failed" and fake.calls == 30


def test_sensor_defers_a_watch_beside_its_drivers_task_without_a_deadline(spec_path: str, monkeypatch,
                                                                        kafka_answers) -> None:
    from airflow.providers.common.compat.sdk import TaskDeferred

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
    from airflow_provider_eos.usecases import health as health_usecase

    # Caught up, its last commit before the sensor started: wait_healthy waits for a newer one, watch watches on.
    committed_before = now_ms() - 5_000
    monkeypatch.setattr(health_usecase, "probe",
                        lambda spec, **kw: make_sample(committed=10, lso=10, marker=1, commit_ms=committed_before))
    _task_states(monkeypatch, ["running"])
    context = {"ti": PipelineTI(), "run_id": "manual__1"}

    def deferred(**kwargs: Any) -> Any:
        sensor = StreamingQueryHealthSensor(task_id="watch_stream", spec_path=spec_path, poke_interval=30,
                                            timeout=60, do_xcom_push=False, **kwargs)
        with pytest.raises(TaskDeferred) as raised:
            sensor.execute(context)
        return raised.value

    beside = deferred(watch="watch", driver_task_id="submit_stream")
    assert beside.trigger.timeout_at is None and beside.timeout is None, "neither the trigger nor Airflow ends it"
    assert beside.trigger.driver_task == DRIVER_TASK
    alone = deferred(watch="watch")
    assert alone.trigger.timeout_at is not None and alone.timeout.total_seconds() > 60
    supervise = deferred(watch="wait_healthy", driver_task_id="submit_stream")
    assert supervise.trigger.timeout_at is not None and supervise.timeout.total_seconds() > 60


def test_a_poking_watch_beside_its_drivers_task_outlasts_its_timeout(spec_path: str, monkeypatch,
                                                                     kafka_answers) -> None:
    """Airflow's poke loop fails a sensor at its timeout with no outcome, and stop_stream would stop the stream."""
    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
    from airflow_provider_eos.usecases import health as health_usecase

    monkeypatch.setattr(health_usecase, "probe",
                        lambda spec, **kw: make_sample(committed=10, lso=10, marker=1, commit_ms=now_ms()))
    _task_states(monkeypatch, ["running"] * 8 + ["success"])
    ti = PipelineTI()
    sensor = StreamingQueryHealthSensor(task_id="watch_stream", spec_path=spec_path, watch="watch", deferrable=False,
                                        poke_interval=0.05, timeout=0.1, driver_task_id="submit_stream")
    report = sensor.execute({"ti": ti, "run_id": "manual__1"})
    assert report["status"] == "HEALTHY" and ti.pushed["watch_outcome"] == "driver_stopped"


def test_sensor_fails_without_retry_when_the_drivers_task_failed(spec_path: str) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    sensor = StreamingQueryHealthSensor(task_id="watch", spec_path=spec_path, do_xcom_push=False,
                                        driver_task_id="submit_stream")
    event = {"outcome": "driver_failed", "watch": "watch", "message": "submit_stream is failed",
             "report": {"status": "HEALTHY"}, "table": "TABLE"}
    with pytest.raises(AirflowFailException, match="submit_stream is failed"):
        sensor.execute_complete({}, event)


# -- the Task SDK's comms channel in the triggerer -----------------------------------------------


class AsyncToSyncComms:
    """The triggerer's comms channel as Airflow 3.1.0 and 3.2.0 have it: ``send`` is ``async_to_sync(self.asend)``.

    Their ``asend`` must run on the triggerer's event loop, whose reader owns the channel; from a thread
    ``asyncio.to_thread`` started, ``async_to_sync`` runs it on a loop of its own instead, and the real
    channel reads the answers out of order. This one records the loop each message was sent on and
    answers the way the supervisor would.
    """

    def __init__(self, answers: dict[str, Callable[[Any], Any]]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, asyncio.AbstractEventLoop]] = []

    def send(self, msg: Any) -> Any:
        from asgiref.sync import async_to_sync

        return async_to_sync(self.asend)(msg)

    async def asend(self, msg: Any) -> Any:
        self.sent.append((type(msg).__name__, asyncio.get_running_loop()))
        answer = self.answers.get(type(msg).__name__)
        return None if answer is None else answer(msg)


def test_task_sdk_calls_reach_the_triggerers_event_loop(spec_path: str, fake_probe, monkeypatch) -> None:
    """The driver task's state and the connections go through sync_to_async, as Airflow's own triggers' calls do.

    Airflow 3.1 itself is not run here: the channel above has its ``send``; the loop each message was
    sent on is the trigger's own only when the call came through ``sync_to_async``.
    """
    from airflow.sdk.execution_time import task_runner
    from airflow.sdk.execution_time.comms import ConnectionResult, TaskStatesResult

    none = {"host": None, "schema": None, "login": None, "password": None, "port": None}
    connections = {
        "eos_kafka": {**none, "conn_type": "kafka", "extra": json.dumps({"bootstrap.servers": "conn-broker:9092"})},
        "eos_checkpoint": {**none, "conn_type": "generic", "extra": json.dumps({"anon": True})},
    }
    # The driver's task is read before each sample: the second read ends the watch, after one sample.
    states = iter(["running", "failed"])
    comms = AsyncToSyncComms({
        "GetTaskStates": lambda msg: TaskStatesResult(task_states={msg.run_ids[0]: {msg.task_ids[0]: next(states)}}),
        "GetConnection": lambda msg: ConnectionResult(conn_id=msg.conn_id, **connections[msg.conn_id]),
    })
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", comms, raising=False)
    fake_probe([lambda: make_sample(committed=10, lso=10, marker=1, commit_ms=now_ms())])
    t = trigger(spec_path, watch="watch", driver_task=DRIVER_TASK, kafka_conn_id="eos_kafka",
                checkpoint_conn_id="eos_checkpoint")
    from airflow_provider_eos.usecases import health as health_usecase

    evaluated: list[str] = []
    real_evaluate = health_usecase.evaluate
    monkeypatch.setattr(health_usecase, "evaluate",
                        lambda spec, window, **kw: evaluated.append(spec.kafka["bootstrap.servers"])
                        or real_evaluate(spec, window, **kw))

    async def go() -> tuple[dict[str, Any], asyncio.AbstractEventLoop]:
        event = await asyncio.wait_for(anext(t.run()), 30)
        return event.payload, asyncio.get_running_loop()

    payload, loop = asyncio.run(go())
    assert payload["outcome"] == "driver_failed"
    kinds = [kind for kind, _ in comms.sent]
    assert kinds.count("GetTaskStates") == 2 and kinds.count("GetConnection") == 2, kinds
    assert [kind for kind, sent_on in comms.sent if sent_on is not loop] == [], \
        "a Task SDK call from a plain thread: Airflow 3.1's channel would read its answer out of order"
    assert evaluated == ["conn-broker:9092"], "the sample used the connection's settings, resolved before it"
    assert t._storage_options == {"anon": True}
