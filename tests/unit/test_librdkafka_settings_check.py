"""A ``kafka`` setting librdkafka refuses is a spec error before any client starts, with librdkafka as the judge.

librdkafka refuses a value outside its property's range (or one it cannot read, or a property it does not
know) when a client is made: such a spec validated, then failed at pre-flight's first Kafka client or only
in the job, at its sink's producer (or, for a consumer key, when Spark's Kafka source started its Java
consumers). The real confluent-kafka judges here, making a producer of the sink's config and a consumer of
the consumer keys; no broker is involved (the specs' ``localhost:1`` would fail any connection).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.cli.main import main
from airflow_provider_eos.cli.output import ExitCode
from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.settings import check_librdkafka_settings

SPEC = {
    "name": "orders", "kafka": {"bootstrap.servers": "localhost:1"}, "input_topics": ["orders"],
    "output_topic": "orders-out", "group_id": "orders-sink", "transactional_id_prefix": "orders-eos",
    "checkpoint_location": "/tmp/checkpoints/orders",
}


def spec(kafka: dict[str, Any] | None = None, **fields: Any) -> PipelineSpec:
    return PipelineSpec.from_dict({**SPEC, "kafka": {**SPEC["kafka"], **(kafka or {})}, **fields})


@pytest.mark.parametrize(
    ("kafka", "fields", "words"),
    [
        # A producer setting, under the sink's name and under librdkafka's alias (the message names the property).
        ({"linger.ms": 10**9}, {}, ["kafka['linger.ms'] is 1000000000, which librdkafka refuses",
                                    '"queue.buffering.max.ms" value 1e+09 is outside allowed range 0..900000',
                                    "to a value in 0..900000"]),
        ({"queue.buffering.max.ms": -1}, {}, ["kafka['queue.buffering.max.ms'] is -1", "0..900000"]),
        ({"batch.num.messages": 0}, {}, ["kafka['batch.num.messages'] is 0", "1..1000000"]),
        # A connection setting: pre-flight's admin client was the first to refuse it.
        ({"socket.timeout.ms": 5}, {}, ["kafka['socket.timeout.ms'] is 5", "10..300000"]),
        ({"socket.timeout.ms": "soon"}, {}, ["kafka['socket.timeout.ms'] is 'soon'",
                                             'Invalid value for configuration property "socket.timeout.ms"']),
        ({"security.protocol": "TLS"}, {}, ["kafka['security.protocol'] is 'TLS'", 'Invalid value "TLS"']),
        ({"linger.msec": 5}, {}, ["kafka['linger.msec'] is 5", 'No such configuration property: "linger.msec"',
                                  "correct the key"]),
        # Consumer keys: Spark's Java consumer reads their translation only when the query starts.
        ({"fetch.wait.max.ms": -5}, {}, ["kafka['fetch.wait.max.ms'] is -5, which librdkafka refuses",
                                         "to a value in 0..300000"]),
        ({"isolation.level": "read_uncommited"}, {}, ["kafka['isolation.level'] is 'read_uncommited'",
                                                      'Invalid value "read_uncommited"']),
        ({"session.timeout.ms": 0}, {}, ["kafka['session.timeout.ms'] is 0", "1..3600000"]),
        # librdkafka names the property by its own name, fetch.message.max.bytes: the spec's alias is found.
        ({"max.partition.fetch.bytes": 0}, {}, ["kafka['max.partition.fetch.bytes'] is 0",
                                                '"fetch.message.max.bytes" value 0', "1..1000000000"]),
        # Judged only when the consumer is made ("Failed to create consumer: ..."), still the spec's value.
        ({"fetch.min.bytes": 0}, {}, ["kafka['fetch.min.bytes'] is 0", "to a value in 1..100000000"]),
        ({"check.crcs": "maybe"}, {}, ["kafka['check.crcs'] is 'maybe'", 'Expected bool value for "check.crcs"']),
    ],
)
def test_a_setting_librdkafka_refuses_is_a_spec_error_naming_key_value_and_message(
    kafka: dict[str, Any], fields: dict[str, Any], words: list[str]
) -> None:
    with pytest.raises(SpecError) as refused:
        check_librdkafka_settings(spec(kafka, **fields))
    text = str(refused.value)
    assert all(word in text for word in words), text
    assert refused.value.fix and not refused.value.retryable


def test_the_ends_of_librdkafkas_ranges_and_the_defaults_are_accepted() -> None:
    check_librdkafka_settings(spec())
    check_librdkafka_settings(spec({"linger.ms": 900_000, "socket.timeout.ms": 10, "batch.num.messages": 1_000_000,
                                    "security.protocol": "PLAINTEXT"}, transaction_timeout_ms=1000))


def test_the_ends_of_librdkafkas_consumer_ranges_are_accepted() -> None:
    check_librdkafka_settings(spec({"fetch.wait.max.ms": 0, "session.timeout.ms": 3_600_000, "fetch.min.bytes": 1,
                                    "max.partition.fetch.bytes": 1_000_000_000, "isolation.level": "read_committed",
                                    "check.crcs": True, "max.poll.interval.ms": 86_400_000}))


def test_a_client_that_fails_to_start_on_its_surroundings_is_left_to_the_real_clients(tmp_path: Path) -> None:
    # A CA file missing fails every client's start, not a setting's value: pre-flight's clients report it.
    check_librdkafka_settings(spec({"security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "missing.pem")}))


def test_a_refused_secret_value_is_not_shown() -> None:
    with pytest.raises(SpecError) as refused:
        check_librdkafka_settings(spec({"ssl.key.password.typo": "hunter2"}))
    assert "hunter2" not in str(refused.value) and "kafka['ssl.key.password.typo'] is ***" in str(refused.value)


def test_eos_preflight_refuses_it_before_any_client_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # localhost:1 answers nothing: a client made first would fail as unreachable, not name the setting.
    spec_file = tmp_path / "orders.json"
    spec_file.write_text(json.dumps({**SPEC, "kafka": {**SPEC["kafka"], "linger.ms": 10**9}}))
    assert main(["preflight", "--spec", str(spec_file), "--json"]) == ExitCode.ERROR
    error = json.loads(capsys.readouterr().out)
    assert error["error"] == "SpecError"
    assert "kafka['linger.ms'] is 1000000000, which librdkafka refuses" in error["message"]
    assert "outside allowed range 0..900000" in error["message"] and "0..900000" in error["fix"]

    assert main(["preflight", "--spec", str(spec_file)]) == ExitCode.ERROR
    assert "kafka['linger.ms'] is 1000000000" in capsys.readouterr().err


def test_eos_preflight_refuses_a_consumer_key_before_any_client_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec_file = tmp_path / "orders.json"
    spec_file.write_text(json.dumps({**SPEC, "kafka": {**SPEC["kafka"], "fetch.wait.max.ms": 10**6}}))
    assert main(["preflight", "--spec", str(spec_file), "--json"]) == ExitCode.ERROR
    error = json.loads(capsys.readouterr().out)
    assert error["error"] == "SpecError", error
    assert "kafka['fetch.wait.max.ms'] is 1000000, which librdkafka refuses" in error["message"], error
    assert "0..300000" in error["fix"], error


def test_the_submission_is_refused_before_spark_starts(tmp_path: Path) -> None:
    # The job's sink would make its producer only at the first batch, after Spark started.
    from airflow_provider_eos.spark.submit_command import plan_submit

    bad = spec({"batch.num.messages": 0})
    with pytest.raises(SpecError, match=r"kafka\['batch.num.messages'\] is 0"):
        plan_submit(tmp_path / "orders.json", bad, mode=bad.mode, work_dir=tmp_path)
    # Spark's Kafka source would refuse its translation (fetch.max.wait.ms=-1) when the query starts.
    bad = spec({"fetch.wait.max.ms": -1})
    with pytest.raises(SpecError, match=r"kafka\['fetch.wait.max.ms'\] is -1"):
        plan_submit(tmp_path / "orders.json", bad, mode=bad.mode, work_dir=tmp_path)
