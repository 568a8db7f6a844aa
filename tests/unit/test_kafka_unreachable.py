"""A Kafka that does not answer fails every command within ``--timeout`` seconds, in one sentence naming the brokers.

Real parts, no broker: the real ``eos`` command and the real librdkafka client against a port of
127.0.0.1 that refuses connections, and against one that accepts them and never answers (a
listening socket nobody reads: the TCP connection is up, the Kafka request gets no reply). The
probe against a real broker is in tests/integration/test_kafka_reachability.py.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_eos.cli.main import main
from airflow_provider_eos.cli.output import DEFAULT_KAFKA_TIMEOUT_S, ExitCode
from airflow_provider_eos.core.errors import UNREACHABLE_FIX, KafkaUnreachableError
from airflow_provider_eos.kafka.reachability import DEFAULT_CONNECT_TIMEOUT_S

# The probe's wait, plus interpreter start and imports on a busy machine.
SLACK_S = 6.0


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never says a word."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


def spec_file(tmp_path: Path, servers: str) -> Path:
    path = tmp_path / "orders.json"
    path.write_text(json.dumps({
        "name": "orders", "kafka": {"bootstrap.servers": servers}, "input_topics": ["orders"],
        "output_topic": "orders-out", "group_id": "orders-sink", "transactional_id_prefix": "orders-eos",
        "checkpoint_location": str(tmp_path / "checkpoint"),
    }))
    return path


def eos(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "airflow_provider_eos.cli", *args], capture_output=True, text=True,
                          timeout=120, check=False)
    return done, time.monotonic() - started


def test_the_sentence_names_the_brokers_the_wait_and_the_fix() -> None:
    error = KafkaUnreachableError("b1:9092,b2:9092", 5, last_error="Connection refused")
    assert error.message == "no Kafka broker answered at b1:9092,b2:9092 within 5 s: Connection refused"
    assert error.fix == UNREACHABLE_FIX and "--timeout" in error.fix and "kafka_connect_timeout_s" in error.fix
    assert error.retryable, "the brokers may be back when Airflow retries the task"
    assert KafkaUnreachableError("b:1", 2.5).message == "no Kafka broker answered at b:1 within 2.5 s"


def test_the_cli_default_is_the_probe_default() -> None:
    # Two constants because `eos --help` must not import confluent-kafka to print the default.
    assert DEFAULT_KAFKA_TIMEOUT_S == DEFAULT_CONNECT_TIMEOUT_S <= 10


def test_eos_verify_against_a_closed_port_fails_within_the_timeout_with_the_sentence(tmp_path: Path) -> None:
    port = closed_port()
    spec = spec_file(tmp_path, f"127.0.0.1:{port}")

    done, seconds = eos("verify", "--spec", str(spec))
    assert done.returncode == ExitCode.ERROR, done.stderr
    assert seconds < DEFAULT_KAFKA_TIMEOUT_S + SLACK_S, f"{seconds:.1f} s"
    first = done.stderr.strip().splitlines()[0]
    assert first.startswith(f"error: no Kafka broker answered at 127.0.0.1:{port} within 5 s"), done.stderr
    assert "Connection refused" in first and "Fix: check that the brokers run" in done.stderr
    assert done.stdout == ""

    done, seconds = eos("verify", "--spec", str(spec), "--timeout", "1", "--json")
    error = json.loads(done.stdout)
    assert done.returncode == ExitCode.ERROR and seconds < 1 + SLACK_S, (seconds, done.stderr)
    assert error["error"] == "KafkaUnreachableError" and error["fix"] == UNREACHABLE_FIX
    assert error["message"].startswith(f"no Kafka broker answered at 127.0.0.1:{port} within 1 s"), error


def test_a_port_that_accepts_and_never_answers_fails_at_the_timeout(tmp_path: Path, silent_port: int) -> None:
    spec = spec_file(tmp_path, f"127.0.0.1:{silent_port}")
    done, seconds = eos("verify", "--spec", str(spec), "--timeout", "2")
    assert done.returncode == ExitCode.ERROR, done.stderr
    assert 2 <= seconds < 2 + SLACK_S, f"{seconds:.1f} s"
    assert f"error: no Kafka broker answered at 127.0.0.1:{silent_port} within 2 s" in done.stderr


@pytest.mark.parametrize("command", [
    ["verify"], ["abort"], ["abort", "--execute"], ["health"], ["preflight"], ["repair", "align"],
    ["repair", "rewind"],
])
def test_every_command_that_talks_to_kafka_says_the_same(command: list[str], tmp_path: Path, capsys,
                                                        monkeypatch) -> None:
    from tests.support.checkpoints import write_checkpoint

    # A checkpoint, so that the repairs get as far as Kafka (a missing one is refused before).
    write_checkpoint(tmp_path / "checkpoint", topic="orders", partitions=1, query_id="q", offsets=range(2),
                     commits=range(2))
    port = closed_port()
    spec = spec_file(tmp_path, f"127.0.0.1:{port}")
    started = time.monotonic()
    code = main([*command, "--spec", str(spec), "--timeout", "1", "--json"])
    seconds = time.monotonic() - started
    error = json.loads(capsys.readouterr().out)
    assert code == ExitCode.ERROR and error["error"] == "KafkaUnreachableError", error
    assert error["message"].startswith(f"no Kafka broker answered at 127.0.0.1:{port} within 1 s"), error
    assert seconds < 1 + SLACK_S, f"{seconds:.1f} s"


def test_acls_apply_says_the_same_about_the_admin_settings_brokers(tmp_path: Path, capsys) -> None:
    port = closed_port()
    admin = tmp_path / "admin.json"
    admin.write_text(json.dumps({"bootstrap.servers": f"127.0.0.1:{port}"}))
    spec = spec_file(tmp_path, "127.0.0.1:1")
    code = main(["acls", "--spec", str(spec), "--principal", "User:orders-job", "--role", "job", "--apply",
                 "--admin-config", str(admin), "--timeout", "1", "--json"])
    error = json.loads(capsys.readouterr().out)
    assert code == ExitCode.ERROR and error["error"] == "KafkaUnreachableError", error
    assert error["message"].startswith(f"no Kafka broker answered at 127.0.0.1:{port} within 1 s"), error


def test_a_rewind_dry_run_to_a_given_batch_needs_no_kafka(tmp_path: Path, capsys) -> None:
    from tests.support.checkpoints import write_checkpoint

    write_checkpoint(tmp_path / "checkpoint", topic="orders", partitions=1, query_id="q", offsets=range(3),
                     commits=range(3))
    spec = spec_file(tmp_path, f"127.0.0.1:{closed_port()}")
    code = main(["repair", "rewind", "--spec", str(spec), "--to-batch", "1", "--json"])
    assert code == ExitCode.OK and json.loads(capsys.readouterr().out)["executed"] is False


def test_an_operator_fails_with_the_same_sentence_and_airflow_retries_it(tmp_path: Path) -> None:
    from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

    from airflow_provider_eos.operators.recovery import VerifyCommittedOffsetsOperator

    port = closed_port()
    operator = VerifyCommittedOffsetsOperator(task_id="verify", spec_path=str(spec_file(tmp_path, f"127.0.0.1:{port}")),
                                              kafka_connect_timeout_s=1)
    with pytest.raises(AirflowException) as failed:
        operator.execute({})
    assert not isinstance(failed.value, AirflowFailException), "a retry can help: the brokers may come back"
    assert f"no Kafka broker answered at 127.0.0.1:{port} within 1 s" in str(failed.value)
    assert "no Kafka broker answered" in operator.result, "the task's result card says it too"
