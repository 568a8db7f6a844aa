"""stop_stream acts only on what the watch saw of the stream: the outcome the health sensor records."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_eos.core.health import WATCH_OUTCOME_XCOM_KEY, WatchMode, WatchOutcome, stops_the_driver

pytestmark = pytest.mark.airflow


@pytest.mark.parametrize(("outcome", "stops"), [
    (WatchOutcome.UNHEALTHY.value, True),
    (WatchOutcome.DRIVER_FAILED.value, True),
    (WatchOutcome.ERROR.value, False),  # probes failed: the watch could not look
    (WatchOutcome.TIMEOUT.value, False),
    (WatchOutcome.HEALTHY.value, False),
    (None, True),  # no outcome recorded: a person marked the watch failed
])
def test_only_an_unhealthy_stream_or_a_failed_driver_task_is_stopped(outcome: str | None, stops: bool) -> None:
    assert stops_the_driver(outcome) is stops


class _TaskInstance:
    def __init__(self, outcome: str | None = None) -> None:
        self.pushed: dict[str, Any] = {}
        self.outcome = outcome

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        return self.outcome if task_ids == "watch_stream" and key == WATCH_OUTCOME_XCOM_KEY else None


def test_the_sensor_records_its_outcome_before_failing() -> None:
    from airflow.providers.common.compat.sdk import AirflowException

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
    from airflow_provider_eos.triggers.health import event_payload

    sensor = StreamingQueryHealthSensor(task_id="watch_stream", spec_path="x", watch="watch")
    ti = _TaskInstance()
    event = event_payload(WatchOutcome.ERROR, WatchMode.WATCH, "3 health samples in a row failed", None)
    with pytest.raises(AirflowException):
        sensor._finish({"ti": ti}, event)
    assert ti.pushed[WATCH_OUTCOME_XCOM_KEY] == "error"


def test_stop_stream_skips_unless_the_watch_found_the_stream_unhealthy(tmp_path) -> None:
    from airflow.providers.common.compat.sdk import AirflowSkipException

    from airflow_provider_eos.operators.driver import StopPipelineDriverOperator

    stop = StopPipelineDriverOperator(task_id="stop_stream", spec_path=str(tmp_path / "none.yaml"),
                                      submit_task_ids=["submit_stream"], watch_task_id="watch_stream")
    for outcome in ("error", "timeout", "healthy"):
        with pytest.raises(AirflowSkipException, match="the driver is left running"):
            stop.execute({"ti": _TaskInstance(outcome), "run_id": "r"})


def test_a_sample_that_cannot_reach_the_broker_records_error(tmp_path) -> None:
    import json

    from airflow.providers.common.compat.sdk import AirflowException

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    spec = tmp_path / "watched.json"
    spec.write_text(json.dumps({
        "name": "watched", "kafka": {"bootstrap.servers": "127.0.0.1:1"}, "input_topics": ["in"],
        "output_topic": "out", "group_id": "g", "transactional_id_prefix": "watched",
        "checkpoint_location": str(tmp_path / "checkpoint"), "trigger": "5 seconds",
    }))
    sensor = StreamingQueryHealthSensor(task_id="watch_stream", spec_path=str(spec), watch="watch",
                                        kafka_connect_timeout_s=1)
    ti = _TaskInstance()
    with pytest.raises(AirflowException, match="no Kafka broker answered"):
        sensor._check({"ti": ti})
    assert ti.pushed[WATCH_OUTCOME_XCOM_KEY] == "error" and not stops_the_driver("error")
