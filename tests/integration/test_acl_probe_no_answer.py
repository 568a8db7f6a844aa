"""A transactional-id ACL probe that gets no answer from the broker is unverified, never an exception or a grant.

On a real secured broker (SASL/SCRAM over TLS, StandardAuthorizer), the pausing tests' own
(``pausable_secured_kafka``), a principal holding exactly the job's set, without DESCRIBE on the cluster,
so pre-flight probes its ACLs. The broker is paused
(SIGSTOP) while the probe's kafka-python admin client is connected, so EndTxn and
DescribeTransactions get no answer and kafka-python raises its own ``KafkaError`` (a request
timeout: ``socket.timeout.ms`` becomes its ``request_timeout_ms``), which is no confluent-kafka
``KafkaException``. Before the fix the EndTxn probe's error escaped ``read_permissions`` and ended
the whole pre-flight with kafka-python's exception. (DescribeTransactions retries until the broker
is back, so its reading of a timeout is the unit test's: tests/unit/test_acl_probe_answers.py.)
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eos.core.acls import required_acls
from airflow_provider_eos.core.preflight import Severity, Status, evaluate
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.broker_state import BrokerInfo
from airflow_provider_eos.kafka import transactions_admin
from airflow_provider_eos.kafka.acls_admin import acl_admin, apply_acls
from airflow_provider_eos.kafka.cluster_facts import gather_facts

pytestmark = pytest.mark.integration

#: The probe client's request timeout (kafka-python's request_timeout_ms): how long each paused probe waits.
REQUEST_TIMEOUT_MS = 4_000
#: How long the broker stays paused: past the request timeout, so the probe gets no answer.
PAUSE_S = 9.0


@pytest.fixture
def job_spec(pausable_admin_settings: dict[str, Any], tmp_path: Path) -> Iterator[PipelineSpec]:
    """A pipeline whose principal holds exactly the job's ACL set (no DESCRIBE on the cluster: it is probed)."""
    from airflow_provider_eos.devstack.security import add_scram_user

    name = f"np{uuid.uuid4().hex[:8]}"
    password = add_scram_user(pausable_admin_settings, f"{name}-user")
    admin = AdminClient(dict(pausable_admin_settings))
    topics = [f"{name}-in", f"{name}-out"]
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(30)
    spec = PipelineSpec.from_dict({
        "name": name,
        "kafka": {**pausable_admin_settings, "sasl.username": f"{name}-user", "sasl.password": password,
                  "socket.timeout.ms": REQUEST_TIMEOUT_MS},
        "input_topics": [topics[0]], "output_topic": topics[1], "group_id": f"{name}-sink",
        "transactional_id_prefix": f"{name}-eos", "checkpoint_location": str(tmp_path / "checkpoint"),
    })
    apply_acls(acl_admin(pausable_admin_settings), required_acls(spec, f"User:{name}-user", "job"))
    yield spec
    admin.delete_topics(topics)


@pytest.fixture
def broker_paused_in_probes(
    pausable_secured_kafka: BrokerInfo, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[str]]:
    """Pause the broker for a while once each kafka-python probe's client is connected (the group's, the
    transactional ids').

    The probes open their client through ``transactions_admin.admin_client``; this wraps it: connect
    for real, open the client's connection to the broker (a Metadata request), SIGSTOP the broker and
    SIGCONT it :data:`PAUSE_S` later, longer than the client's request timeout. Yields the probes paused.
    """
    broker, node = LocalKafka(pausable_secured_kafka.state_dir), pausable_secured_kafka.every_node[0].node_id
    real = transactions_admin.admin_client
    paused: list[str] = []
    timers: list[threading.Timer] = []

    @contextlib.contextmanager
    def paused_client(config: Any, **kwargs: Any) -> Iterator[Any]:
        with real(config, **kwargs) as admin:
            admin.list_topics()  # the probe's request then goes over this open connection to the broker
            broker.fault("pause", node)
            timer = threading.Timer(PAUSE_S, broker.fault, ("resume", node))
            timers.append(timer)
            timer.start()
            paused.append(f"pause {len(paused) + 1}")
            yield admin

    monkeypatch.setattr(transactions_admin, "admin_client", paused_client)
    try:
        yield paused
    finally:
        for timer in timers:
            timer.cancel()
        broker.fault("resume", node)


def test_preflight_reports_a_write_probe_without_an_answer_as_unverified(
    job_spec: PipelineSpec, broker_paused_in_probes: list[str]
) -> None:
    facts = gather_facts(job_spec, timeout_s=20)  # before the fix: kafka-python's timeout ended pre-flight here
    # Two probes of the job's set use kafka-python: the group's and the transactional ids' (in that order).
    assert broker_paused_in_probes == ["pause 1", "pause 2"], broker_paused_in_probes
    report = evaluate(facts)
    job_acls = report.finding("EOS501")
    assert job_acls.status is Status.PASS and "could not be verified (EOS502)" in job_acls.message, job_acls
    unverified = report.finding("EOS502")
    assert unverified.status is Status.FAIL and unverified.severity is Severity.INFO, unverified
    assert f"TRANSACTIONAL_ID '{job_spec.transactional_id_prefix}-' (PREFIXED) WRITE" in unverified.message
    assert "EndTxn(" in unverified.message and "no answer" in unverified.message, unverified.message
    # The group's probe (DescribeGroups over kafka-python since design note 89) met the paused broker too.
    assert f"GROUP '{job_spec.group_id}' (LITERAL) READ [the probe failed: KafkaNoAnswerError]" in unverified.message
