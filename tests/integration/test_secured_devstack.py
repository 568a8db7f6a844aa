"""The secured devstack (SASL/SCRAM-SHA-512, the StandardAuthorizer, TLS for ``sasl_ssl``) against the real broker.

Who gets in (the admin), who does not (anonymous, PLAINTEXT, a wrong password), what a user
without ACLs may do (nothing), where the secrets are (files of mode 0600, never a command line),
and `eos devstack up --security ...` as a user runs it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import stat
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.security import add_scram_user
from tests.support.kafka import consume_all, create_topic

pytestmark = pytest.mark.integration

ADMIN_KEYS = {"bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.username", "sasl.password"}


def eos(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "airflow_provider_eos.cli", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def sasl_plaintext_kafka(tmp_path_factory: pytest.TempPathFactory):
    kafka = LocalKafka(tmp_path_factory.mktemp("sasl-plaintext"), security="sasl_plaintext")
    try:
        yield kafka.up(stop_with_pid=os.getpid())
    finally:
        kafka.down()


def commit_one_transaction(settings: Mapping[str, Any], topic: str, value: bytes) -> None:
    producer = Producer({**settings, "transactional.id": f"admin-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=value)
    producer.commit_transaction(30)


def connection_errors(settings: Mapping[str, Any], within_s: float = 20) -> list[KafkaError]:
    """The errors librdkafka reports while a producer tries to connect (an empty list: it connected quietly)."""
    errors: list[KafkaError] = []
    producer = Producer({**settings, "error_cb": errors.append})
    deadline = time.monotonic() + within_s
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    return errors


@pytest.mark.parametrize("mode", ["sasl_ssl", "sasl_plaintext"])
def test_both_modes_come_up_and_the_admin_commits_transactions(mode, request):
    info = request.getfixturevalue("secured_kafka" if mode == "sasl_ssl" else "sasl_plaintext_kafka")
    settings = info.client_settings()
    assert info.security == mode and info.client_config == str(Path(info.state_dir) / "client.config")
    assert settings["security.protocol"] == mode.upper() and settings["sasl.mechanism"] == "SCRAM-SHA-512"
    assert settings["sasl.username"] == "admin" and len(settings["sasl.password"]) >= 40
    assert set(settings) == ADMIN_KEYS | ({"ssl.ca.location"} if mode == "sasl_ssl" else set())
    topic = create_topic(settings, f"secured-{uuid.uuid4().hex[:8]}")
    commit_one_transaction(settings, topic, b"committed")
    assert [m.value() for m in consume_all(settings, topic)] == [b"committed"]


@pytest.mark.parametrize("mode", ["sasl_ssl", "sasl_plaintext"])
def test_anonymous_plaintext_and_wrong_passwords_are_refused_promptly(mode, request):
    info = request.getfixturevalue("secured_kafka" if mode == "sasl_ssl" else "sasl_plaintext_kafka")
    settings = info.client_settings()
    anonymous = {"bootstrap.servers": info.bootstrap_servers}
    started = time.monotonic()
    errors = connection_errors(anonymous)
    assert errors and errors[0].code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT)
    with pytest.raises(KafkaException):
        AdminClient(anonymous).list_topics(timeout=5)
    for wrong in ({"sasl.password": "not-the-password"}, {"sasl.username": "nobody"}):
        errors = connection_errors({**settings, **wrong})
        assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
        assert "Authentication failed" in errors[0].str() and "SCRAM-SHA-512" in errors[0].str()
    assert time.monotonic() - started < 45, "refusals must be prompt, not hang"
    if mode == "sasl_ssl":
        # TLS without SASL is no way around authentication either.
        tls_only = {**anonymous, "security.protocol": "SSL", "ssl.ca.location": settings["ssl.ca.location"]}
        errors = connection_errors(tls_only)
        assert errors and errors[0].code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT)


def test_secrets_are_owner_only_and_the_certificate_names_the_address(secured_kafka):
    from cryptography import x509

    state = Path(secured_kafka.state_dir)
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    for name in ("client.config", "server.properties", "broker.keystore.pem"):
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600, name
    assert not (state / "format.args").exists(), "the StorageTool argument file holds passwords; it is removed"
    # The CA's key signed one certificate and was never written: only the broker's key is on disk.
    holding_keys = [p.name for p in state.glob("*") if p.is_file() and "PRIVATE KEY" in p.read_text(errors="replace")]
    assert holding_keys == ["broker.keystore.pem"]
    certificate = x509.load_pem_x509_certificate((state / "broker.keystore.pem").read_bytes())
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    admin_password = secured_kafka.client_settings()["sasl.password"]
    assert admin_password not in (state / "server.properties").read_text(), "the broker logs in as itself"


def test_a_fresh_scram_user_without_acls_is_denied_while_the_admin_works(secured_kafka, secured_admin_settings):
    admin = dict(secured_admin_settings)
    topic = create_topic(admin, f"acl-{uuid.uuid4().hex[:8]}")
    user = f"no-acls-{uuid.uuid4().hex[:6]}"
    password = add_scram_user(admin, user)
    assert password != admin["sasl.password"] and len(password) >= 40
    nobody = {**admin, "sasl.username": user, "sasl.password": password}

    assert connection_errors(nobody, within_s=3) == [], "the user authenticates"
    client = AdminClient(nobody)  # kept: a destroyed client fails its futures with _DESTROY
    assert topic not in client.list_topics(timeout=10).topics, "it may not even see the topic"
    with pytest.raises(KafkaException) as denied:
        client.create_topics([NewTopic(f"x-{user}", 1, 1)])[f"x-{user}"].result(30)
    assert denied.value.args[0].code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                           KafkaError.CLUSTER_AUTHORIZATION_FAILED)
    producer = Producer({**nobody, "transactional.id": f"{user}-0"})
    with pytest.raises(KafkaException) as denied:
        producer.init_transactions(30)
    assert denied.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    delivered: list[KafkaError | None] = []
    plain = Producer({**nobody, "message.timeout.ms": 10_000})
    plain.produce(topic, b"v", on_delivery=lambda err, _msg: delivered.append(err))
    plain.flush(20)
    assert delivered and delivered[0] is not None
    assert delivered[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    commit_one_transaction(admin, topic, b"by-admin")
    assert [m.value() for m in consume_all(admin, topic)] == [b"by-admin"]


def test_a_running_broker_is_not_taken_for_another_security_mode(secured_kafka):
    for other in ("plaintext", "sasl_plaintext"):
        with pytest.raises(DevstackError) as refused:
            LocalKafka(secured_kafka.state_dir, security=other).up()
        assert "security sasl_ssl, not " + other in refused.value.message
        assert "eos devstack down" in (refused.value.fix or "")
    assert LocalKafka(secured_kafka.state_dir, security="sasl_ssl").up() == secured_kafka, "idempotent"
    with pytest.raises(DevstackError, match="Unknown devstack security mode 'ssl'"):
        LocalKafka(secured_kafka.state_dir, security="ssl")


class CommandLines:
    """Samples every process's command line until stopped (what `ps` shows other users)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
                with contextlib.suppress(OSError):  # the process ended meanwhile
                    self.seen.add(cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            time.sleep(0.05)

    def __enter__(self) -> CommandLines:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def test_devstack_up_status_down_with_security_from_other_processes(tmp_path):
    state = str(tmp_path / "devstack")
    try:
        with CommandLines() as commands:
            up = eos("devstack", "up", "--state-dir", state, "--security", "sasl_ssl")
        assert up.returncode == 0, up.stderr
        lines = up.stdout.strip().splitlines()
        assert lines[-1].startswith("bootstrap.servers=127.0.0.1:")
        assert lines[-2] == f"client.config={Path(state) / 'client.config'}"
        assert "security=sasl_ssl" in up.stdout
        settings = json.loads(Path(lines[-2].removeprefix("client.config=")).read_text())
        password = settings["sasl.password"]
        broker_password = re.search(r'password="([^"]+)"', (Path(state) / "server.properties").read_text())[1]
        assert password not in up.stdout + up.stderr
        for secret in (password, broker_password):
            assert not [c for c in commands.seen if secret in c], "a SCRAM password was on a command line"
        # StorageTool got its --add-scram arguments from a Java @argfile, the broker from server.properties.
        assert any("format.args" in c for c in commands.seen) and any("kafka.Kafka" in c for c in commands.seen), \
            "the sampler saw the broker's processes"

        again = eos("devstack", "up", "--state-dir", state, "--security", "sasl_ssl")
        assert again.returncode == 0 and again.stdout.strip().splitlines()[-2:] == lines[-2:], "up is idempotent"
        conflict = eos("devstack", "up", "--state-dir", state)
        assert conflict.returncode == 2 and "security sasl_ssl, not plaintext" in conflict.stderr
        assert "eos devstack down" in conflict.stderr

        status = eos("devstack", "status", "--state-dir", state)
        assert status.returncode == 0 and status.stdout.strip().splitlines()[-2:] == lines[-2:]
        assert "security=sasl_ssl" in status.stdout and password not in status.stdout + status.stderr

        # Another process reaches the broker with nothing but the client.config file.
        reach = subprocess.run(
            [sys.executable, "-c",
             "import json, sys; from confluent_kafka.admin import AdminClient; "
             "print(len(AdminClient(json.load(open(sys.argv[1]))).list_topics(timeout=20).brokers))",
             lines[-2].removeprefix("client.config=")],
            capture_output=True, text=True, timeout=60, check=False,
        )
        assert reach.returncode == 0 and reach.stdout.strip() == "1", reach.stderr
    finally:
        down = eos("devstack", "down", "--state-dir", state)
    assert down.returncode == 0 and "stopped" in down.stdout
    assert eos("devstack", "status", "--state-dir", state).returncode == 1
    assert not (tmp_path / "devstack").exists()
