"""The health sensor and its trigger fail within seconds, in the CLI's sentence, when no broker answers.

Real parts, no broker: the real sensor and trigger, the real use case and librdkafka against a port of
127.0.0.1 that refuses connections (as tests/unit/test_kafka_unreachable.py does for the CLI). Before
each sample asked whether a broker answers, a sample against a dead cluster waited for the probe's
requests to time out one by one (30 s each) and said so in the probe's own words.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pendulum
import pytest
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
from airflow_provider_eos.triggers.health import StreamingQueryHealthTrigger
from tests.unit.test_kafka_unreachable import SLACK_S, closed_port, spec_file

WAIT_S = 1.0


@pytest.fixture
def dead_broker(tmp_path: Path) -> tuple[str, str]:
    """``(spec path, "127.0.0.1:PORT")`` of a pipeline whose only broker refuses connections."""
    servers = f"127.0.0.1:{closed_port()}"
    return str(spec_file(tmp_path, servers)), servers


def sentence(servers: str) -> str:
    return f"no Kafka broker answered at {servers} within {WAIT_S:g} s"


def test_the_sensors_first_check_fails_the_task_in_seconds_with_the_sentence(dead_broker: tuple[str, str]) -> None:
    spec_path, servers = dead_broker
    sensor = StreamingQueryHealthSensor(task_id="health", spec_path=spec_path, kafka_connect_timeout_s=WAIT_S,
                                        do_xcom_push=False)
    started = time.monotonic()
    with pytest.raises(AirflowException) as raised:
        sensor.execute({})
    seconds = time.monotonic() - started
    assert seconds < WAIT_S + SLACK_S, f"{seconds:.1f} s"
    assert not isinstance(raised.value, AirflowFailException), "the brokers may be back when Airflow retries"
    message = str(raised.value)
    assert message.startswith(sentence(servers)) and "Connection refused" in message, message
    assert "Fix: check that the brokers run" in message and "kafka_connect_timeout_s" in message


def test_a_poking_sensor_counts_each_unanswered_sample_and_fails_with_the_sentence(
        dead_broker: tuple[str, str]) -> None:
    spec_path, servers = dead_broker
    sensor = StreamingQueryHealthSensor(task_id="health", spec_path=spec_path, deferrable=False, poke_interval=0,
                                        max_probe_failures=2, kafka_connect_timeout_s=WAIT_S, do_xcom_push=False)
    started = time.monotonic()
    assert sensor.poke({}) is False, "one failed sample is tolerated (max_probe_failures)"
    with pytest.raises(AirflowException) as raised:
        sensor.poke({})
    seconds = time.monotonic() - started
    assert seconds < 2 * WAIT_S + SLACK_S, f"{seconds:.1f} s for two samples"
    assert str(raised.value).startswith(sentence(servers)), raised.value


def test_the_trigger_ends_with_an_error_event_carrying_the_sentence(dead_broker: tuple[str, str]) -> None:
    spec_path, servers = dead_broker
    trigger = StreamingQueryHealthTrigger(spec_path=spec_path, watch="watch", committed_after=pendulum.now("UTC")
                                          .isoformat(), poke_interval=0.05, max_probe_failures=2,
                                          kafka_connect_timeout_s=WAIT_S)

    async def first() -> dict[str, Any]:
        return (await asyncio.wait_for(anext(trigger.run()), 60)).payload

    started = time.monotonic()
    payload = asyncio.run(first())
    seconds = time.monotonic() - started
    assert seconds < 2 * WAIT_S + SLACK_S, f"{seconds:.1f} s for two samples"
    assert payload["outcome"] == "error" and payload["retryable"] is True, payload
    assert payload["message"].startswith(f"2 health samples in a row failed; the last: {sentence(servers)}"), payload
    with pytest.raises(AirflowException, match="no Kafka broker answered") as raised:
        StreamingQueryHealthSensor(task_id="health", spec_path=spec_path, do_xcom_push=False).execute_complete({},
                                                                                                             payload)
    assert not isinstance(raised.value, AirflowFailException)
