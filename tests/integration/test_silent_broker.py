"""A broker that accepts connections and never answers ends recovery, health and pre-flight calls at a deadline.

A real secured broker (SASL/SCRAM over TLS), the pausing tests' own (``pausable_secured_kafka``), is paused
(SIGSTOP) once a kafka-python admin client of the
product is connected to it (the transaction scans of ``eos abort``, a health sample and pre-flight), as
tests/integration/test_acl_probe_no_answer.py pauses it, and one request is left to time out first (a
broker that stopped answering a while ago). kafka-python then reconnects for the product's next call, and
its TLS and SASL handshake with a broker that never answers has no deadline: before the fix each call below
waited until the broker was resumed (here by a safety timer at :data:`RESUME_AFTER_S`; in production,
never). Now each kafka-python call has a deadline (its client's bootstrap wait and request timeout,
2 x :data:`TIMEOUT_S` here) and ends with a retryable :class:`KafkaNoAnswerError` naming the broker and
the call. The broker is always resumed (try/finally), then each test's client has been closed.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.errors import KafkaError as KafkaPythonError

from airflow_provider_eos.core.errors import EosError, KafkaNoAnswerError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.broker_state import BrokerInfo
from airflow_provider_eos.kafka import cluster_facts, health_probe, health_settled_read, transactions_admin
from airflow_provider_eos.kafka.settings import java_admin_config
from airflow_provider_eos.usecases import health
from airflow_provider_eos.usecases.abort import abort
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.verify import verify

pytestmark = pytest.mark.integration

#: Each admin request's timeout and the clients' per-request timeout: a kafka-python call's deadline is both.
TIMEOUT_S = 3
#: The deadline of one kafka-python call (its bootstrap wait and its request timeout).
DEADLINE_S = 2 * TIMEOUT_S
#: Scheduling slack on a shared 2-core machine.
SLACK_S = 6.0
#: The safety timer: the broker is resumed after this long whatever happens, so a call without a deadline
#: returns late (and the test fails on the time) instead of hanging the run.
RESUME_AFTER_S = 40.0
#: How long a broker resumed from a pause may take to create topics again.
RECOVERY_S = 120


class PausedInScans:
    """Pauses the broker once each transaction admin client is connected; resumes it when the client is closed."""

    def __init__(self, broker: BrokerInfo, admin_settings: dict[str, Any]) -> None:
        self.kafka, self.node = LocalKafka(broker.state_dir), broker.every_node[0].node_id
        self.admin_settings = admin_settings
        self.paused_at: list[float] = []
        self.closed_after_s: list[float] = []
        self.timers: list[threading.Timer] = []

    def resume(self) -> None:
        self.kafka.fault("resume", self.node)

    def answering(self) -> None:
        """Wait until the resumed broker answers again: the product's next session must meet the pause it is
        tested with, not a broker still catching up on its controller (a loaded machine took over 3 s)."""
        deadline, admin = time.monotonic() + RECOVERY_S, AdminClient(dict(self.admin_settings))
        while True:
            try:
                # The client held: a freed one fails its calls. A broker fenced by the pause answers metadata
                # before it has a controller again, and a topic's creation waits for one.
                if admin.describe_cluster(request_timeout=5).result(10).controller is not None:
                    return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def wrap(self, real: Any) -> Any:
        @contextlib.contextmanager
        def paused_client(config: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                with real(config, **kwargs) as admin:
                    admin.list_topics()  # connected: the calls below go over this connection to the broker
                    self.kafka.fault("pause", self.node)
                    self.paused_at.append(time.monotonic())
                    timer = threading.Timer(RESUME_AFTER_S, self.resume)
                    self.timers.append(timer)
                    timer.start()
                    # A request left to time out (kafka-python closes the connection): the product's first
                    # call then reconnects, whose handshake the paused broker never answers.
                    with contextlib.suppress(KafkaPythonError):
                        admin.describe_cluster()
                    yield admin
            finally:
                # Closed while the broker is still paused: closing must not wait for it either.
                if self.paused_at:
                    self.closed_after_s.append(time.monotonic() - self.paused_at[-1])
                self.resume()
                self.answering()

        return paused_client

    def wrap_call(self, real: Any) -> Any:
        """``real`` (a confluent-kafka read of the product) with the broker paused for its first call only: the
        client connected before (the sample's, pre-flight's metadata went through), and the broker is resumed once
        the call returned or raised, so the rest of the product's reads meet a broker that answers."""

        def paused_call(*args: Any, **kwargs: Any) -> Any:
            if self.paused_at:
                return real(*args, **kwargs)
            self.kafka.fault("pause", self.node)
            self.paused_at.append(time.monotonic())
            timer = threading.Timer(RESUME_AFTER_S, self.resume)
            self.timers.append(timer)
            timer.start()
            try:
                return real(*args, **kwargs)
            finally:
                self.closed_after_s.append(time.monotonic() - self.paused_at[-1])  # the call's end
                self.resume()
                self.answering()

        return paused_call


@pytest.fixture
def pauses(
    pausable_secured_kafka: BrokerInfo, pausable_admin_settings: dict[str, Any]
) -> Iterator[PausedInScans]:
    pauses = PausedInScans(pausable_secured_kafka, pausable_admin_settings)
    try:
        yield pauses
    finally:
        for timer in pauses.timers:
            timer.cancel()
        pauses.resume()  # always: the next pausing test takes the broker over


@pytest.fixture
def paused_in_scans(pauses: PausedInScans, monkeypatch: pytest.MonkeyPatch) -> PausedInScans:
    monkeypatch.setattr(transactions_admin, "admin_client", pauses.wrap(transactions_admin.admin_client))
    monkeypatch.setattr(cluster_facts, "admin_client", pauses.wrap(cluster_facts.admin_client))
    return pauses


@pytest.fixture
def clients_of() -> Iterator[Callable[[PipelineSpec], PipelineClients]]:
    """Each test's clients, closed after it: a request the paused broker answers late completes on librdkafka's
    thread, where a collection of an admin client left in the test's exception cycle would abort the worker
    (PipelineClients.close)."""
    made: list[PipelineClients] = []

    def make(spec: PipelineSpec) -> PipelineClients:
        made.append(PipelineClients(spec, timeout_s=TIMEOUT_S, connect_timeout_s=TIMEOUT_S))
        return made[-1]

    yield make
    for clients in made:
        clients.close()


@pytest.fixture
def spec(pausable_admin_settings: dict[str, Any], tmp_path: Path) -> Iterator[PipelineSpec]:
    name = f"sb{uuid.uuid4().hex[:8]}"
    admin = AdminClient(dict(pausable_admin_settings))
    topics = [f"{name}-in", f"{name}-out"]
    _create_after_a_pause(admin, topics)
    yield PipelineSpec.from_dict({
        "name": name,
        "kafka": {**pausable_admin_settings, "socket.timeout.ms": TIMEOUT_S * 1000},
        "input_topics": [topics[0]], "output_topic": topics[1], "group_id": f"{name}-sink",
        "transactional_id_prefix": f"{name}-eos", "checkpoint_location": str(tmp_path / "checkpoint"),
    })
    admin.delete_topics(topics)


def _create_after_a_pause(admin: AdminClient, topics: list[str]) -> None:
    """Create ``topics``, trying again until :data:`RECOVERY_S`: the broker resumed by the test before may take a
    while to rejoin its controller (its heartbeats lapsed), and one try's wait for the controller may time out
    first (seen under CI's load: ``Failed while waiting for controller``)."""
    deadline, missing = time.monotonic() + RECOVERY_S, list(topics)
    while missing:
        for topic, future in admin.create_topics([NewTopic(t, 1, 1) for t in missing]).items():
            try:
                future.result(RECOVERY_S)
            except KafkaException as failed:
                error = failed.args[0]
                if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:  # an earlier try's creation went through
                    missing.remove(topic)
                elif (not error.retriable() and error.code() != KafkaError._TIMED_OUT) or time.monotonic() > deadline:
                    raise
            else:
                missing.remove(topic)
        if missing:
            time.sleep(0.5)


@pytest.fixture
def bootstrap(pausable_admin_settings: dict[str, Any]) -> str:
    return str(pausable_admin_settings["bootstrap.servers"])


def _no_answer_within_deadline(raised: BaseException, pauses: PausedInScans, bootstrap: str, call: str) -> None:
    assert isinstance(raised, KafkaNoAnswerError), f"{type(raised).__name__}: {raised}"
    assert raised.retryable, "the broker may answer by the next try"
    assert len(pauses.paused_at) == 1, pauses.paused_at
    waited = pauses.closed_after_s[0]
    assert waited < DEADLINE_S + SLACK_S, f"{waited:.1f} s from the pause to the client closed"
    message = str(raised)
    assert f"no answer from the Kafka broker(s) at {bootstrap} within {DEADLINE_S:g} s" in message, message
    assert message.startswith(call), message
    assert "Fix: check that the brokers are answering" in message, message


def test_a_health_sample_fails_at_the_deadline_when_the_broker_stops_answering(
    spec: PipelineSpec, paused_in_scans: PausedInScans, bootstrap: str,
    clients_of: Callable[[PipelineSpec], PipelineClients],
) -> None:
    clients = clients_of(spec)
    with pytest.raises(KafkaNoAnswerError) as raised:
        health.sample(clients)
    # The sample's first kafka-python session is its read of the group (design note 84), before the scan's.
    _no_answer_within_deadline(raised.value, paused_in_scans, bootstrap, "OffsetFetch")


def test_eos_abort_ends_with_the_typed_error_at_the_deadline(
    spec: PipelineSpec, paused_in_scans: PausedInScans, bootstrap: str,
    clients_of: Callable[[PipelineSpec], PipelineClients],
) -> None:
    clients = clients_of(spec)
    with pytest.raises(KafkaNoAnswerError) as raised:
        abort(clients)
    _no_answer_within_deadline(raised.value, paused_in_scans, bootstrap, "Metadata")


def test_preflights_scan_is_not_read_at_the_deadline_and_the_preflight_goes_on(
    spec: PipelineSpec, paused_in_scans: PausedInScans, bootstrap: str
) -> None:
    started = time.monotonic()
    facts = cluster_facts.gather_facts(spec, timeout_s=TIMEOUT_S)
    seconds = time.monotonic() - started
    # A kafka-python session each: the transactions under the prefix, the brokers' protocol, and the probe of
    # the job's transactional-id ACL its bindings do not show (the admin principal holds no ACLs).
    pauses = len(paused_in_scans.paused_at)
    assert pauses >= 2, paused_in_scans.paused_at
    assert all(waited < DEADLINE_S + SLACK_S for waited in paused_in_scans.closed_after_s), \
        paused_in_scans.closed_after_s
    assert seconds < pauses * (DEADLINE_S + SLACK_S) + 30, f"pre-flight took {seconds:.1f} s"
    assert facts.transactions is None
    reason = facts.unavailable["transactions"]
    assert f"no answer from the Kafka broker(s) at {bootstrap} within {DEADLINE_S:g} s" in reason, reason
    assert "DescribeTransactions" in reason, reason
    assert "no answer from the Kafka broker(s)" in facts.unavailable["broker_protocol"], facts.unavailable


def test_verify_ends_with_a_typed_retryable_error_when_the_broker_stops_answering(
    spec: PipelineSpec, pausable_secured_kafka: BrokerInfo, bootstrap: str,
    clients_of: Callable[[PipelineSpec], PipelineClients],
) -> None:
    """verify reads through confluent-kafka only, each request bounded by the clients' timeout, and its no answer
    ends as a kafka-python call's does: KafkaNoAnswerError naming the brokers and the request (before, the typed
    but different GroupOffsetsError, whose fix spoke of the spec's settings)."""
    kafka, node = LocalKafka(pausable_secured_kafka.state_dir), pausable_secured_kafka.every_node[0].node_id
    clients = clients_of(spec)
    clients.require_kafka()  # the broker answered the first contact, then stops answering
    kafka.fault("pause", node)
    started = time.monotonic()
    try:
        with pytest.raises(EosError) as raised:
            verify(clients)
    finally:
        kafka.fault("resume", node)
    seconds = time.monotonic() - started
    assert seconds < DEADLINE_S + SLACK_S, f"{seconds:.1f} s"
    # The same error as every kafka-python call's, not the group's "could not read offsets" (GroupOffsetsError).
    assert isinstance(raised.value, KafkaNoAnswerError), f"{type(raised.value).__name__}: {raised.value}"
    assert raised.value.retryable, "the broker may answer by the next try"
    message = str(raised.value)
    assert f"no answer from the Kafka broker(s) at {bootstrap} within {TIMEOUT_S:g} s" in message, message
    assert message.startswith("Metadata:"), message  # verify's first request: its input topics' partitions
    assert "Fix: check that the brokers are answering" in message, message


def _read_unanswered(raised: BaseException | str, pauses: PausedInScans, bootstrap: str, request: str,
                     deadline_s: float) -> None:
    """A read ended at its deadline with the no-answer error (or, pre-flight, its reason): a confluent-kafka read at
    its request timeout, a kafka-python one at its call's deadline; the process lives on."""
    if not isinstance(raised, str):
        assert isinstance(raised, KafkaNoAnswerError), f"{type(raised).__name__}: {raised}"
        assert raised.retryable, "the broker may answer by the next try"
        assert "Fix: check that the brokers are answering" in str(raised), raised
    assert len(pauses.paused_at) == 1, pauses.paused_at
    assert pauses.closed_after_s[0] < deadline_s + SLACK_S, f"{pauses.closed_after_s[0]:.1f} s from the pause"
    message = raised if isinstance(raised, str) else raised.message
    expected = f"{request}: no answer from the Kafka broker(s) at {bootstrap} within {deadline_s:g} s"
    assert message.startswith(expected), message


@pytest.mark.parametrize(("reader", "request_name", "deadline_s"), [
    # Over kafka-python since design note 84 (its call's deadline): under librdkafka's read this pause aborted the
    # process (librdkafka 2.16, confluentinc/librdkafka#4605).
    ("read_group_offsets", "OffsetFetch({group!r})", DEADLINE_S),
    ("list_log_offsets", "ListOffsets (read_committed)", TIMEOUT_S),  # before: HealthProbeError, brokers unnamed
])
def test_a_health_samples_offset_reads_end_with_the_typed_error_when_the_broker_stops_answering(
    spec: PipelineSpec, pauses: PausedInScans, bootstrap: str, monkeypatch: pytest.MonkeyPatch, reader: str,
    request_name: str, deadline_s: float,
    clients_of: Callable[[PipelineSpec], PipelineClients],
) -> None:
    """The sample's own reads (design note 76): the broker answers the sample's metadata, then is paused for its
    read of the sink group's offsets (kafka-python, note 84), or of the logs' last stable offsets (confluent-kafka)."""
    module = health_settled_read if reader == "read_group_offsets" else health_probe
    monkeypatch.setattr(module, reader, pauses.wrap_call(getattr(module, reader)))
    clients = clients_of(spec)
    with pytest.raises(EosError) as raised:
        health.sample(clients)
    _read_unanswered(raised.value, pauses, bootstrap, request_name.format(group=spec.group_id), deadline_s)


def test_preflights_read_of_the_group_is_not_read_naming_the_brokers_when_the_broker_stops_answering(
    spec: PipelineSpec, pauses: PausedInScans, bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pre-flight records the group's offsets as not read, with the no-answer error's words (before: "could not
    read committed offsets of group ...", the brokers unnamed), and goes on once the broker answers again."""
    monkeypatch.setattr(cluster_facts, "read_group_offsets", pauses.wrap_call(cluster_facts.read_group_offsets))
    facts = cluster_facts.gather_facts(spec, timeout_s=TIMEOUT_S)
    assert facts.group_offsets is None
    _read_unanswered(facts.unavailable["group_offsets"], pauses, bootstrap, f"OffsetFetch({spec.group_id!r})",
                     DEADLINE_S)
    assert facts.topics is not None, facts.unavailable  # the reads before the pause went through


#: The JVM writer's read of the group waits this long for an answer (``CommittedOffsets.REQUEST_TIMEOUT_MS``).
JVM_READ_DEADLINE_S = 30


@pytest.mark.spark
def test_the_jvm_writers_read_of_the_group_says_no_broker_answered(spark, pauses: PausedInScans,
                                                                    spec: PipelineSpec) -> None:
    """The JVM executor writer's stable read of the group, met by the silent broker, fails as "no answer": its task's
    facts then make the Python driver raise :class:`KafkaNoAnswerError`, as the Python writer's read does
    (tests/unit/test_jvm_writer.py), not a refusal of the group. The same read answered is not one."""
    from py4j.protocol import Py4JJavaError

    jvm = spark.sparkContext._jvm
    offsets = jvm.io.github.airflowprovidereos.writer.CommittedOffsets
    # Kafka's Admin gives up on a call after its own timeouts; the read asks again until its deadline.
    config = {**java_admin_config(spec), "request.timeout.ms": str(TIMEOUT_S * 1000),
              "default.api.timeout.ms": str(TIMEOUT_S * 1000)}
    partition = jvm.org.apache.kafka.common.TopicPartition(spec.input_topics[0], 0)
    # A broker that answers with a refusal (here of the login) is not "no answer".
    refused = {**config, "sasl.jaas.config": config["sasl.jaas.config"].replace(
        spec.kafka["sasl.username"], f"nobody-{uuid.uuid4().hex[:6]}")}
    try:
        assert offsets.read(config, spec.group_id, partition, 1_000) is None, "answered: nothing committed yet"

        pauses.kafka.fault("pause", pauses.node)
        timer = threading.Timer(RESUME_AFTER_S + JVM_READ_DEADLINE_S, pauses.resume)
        started = time.monotonic()
        try:
            timer.start()
            with pytest.raises(Py4JJavaError) as raised:
                offsets.read(config, spec.group_id, partition, 1_000)
            waited = time.monotonic() - started
        finally:
            timer.cancel()
            pauses.resume()
            pauses.answering()
        failure = raised.value.java_exception
        assert offsets.noAnswer(failure), failure.toString()
        assert waited < JVM_READ_DEADLINE_S + TIMEOUT_S + SLACK_S, f"{waited:.1f} s"
        with pytest.raises(Py4JJavaError) as denied:
            offsets.read(refused, spec.group_id, partition, 1_000)
        assert not offsets.noAnswer(denied.value.java_exception), denied.value.java_exception.toString()
    finally:
        # The worker's Spark session outlives the test: its admin clients (one with a refused login) must not.
        for settings in (config, refused):
            offsets.closeIdle(settings)
