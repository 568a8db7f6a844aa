"""Each role's ACL set is sufficient, and minimal: without any one of its ACLs the role's task fails naming it.

On the real secured broker (SASL/SCRAM over TLS, StandardAuthorizer, no ACL means no access), a
fresh pipeline per test: input, output and dead-letter topics, a hand-written checkpoint whose
batches 0..3 are committed, the sink group at batch 3 without its marker (so align really commits), and a
transaction left open under ``<prefix>-0`` (so abort really fences). A principal per role gets
the role's set as Kafka's documented rules give it for the requests the role's code sends
(:mod:`tests.support.kafka_authorization`, :mod:`tests.support.role_requests`), not from
:func:`required_acls`: checking pre-flight against the table it derives from would pass with the
table wrong. The product's set must equal it (the unit test ``test_acls_against_kafka.py`` checks
every shape; here each test asserts it for its pipeline). A test removes one ACL and runs the
role's tasks through the use cases the CLI and the operators call. The first refusal must be an
:class:`AclMissingError` that names the principal, the refused resource, the role's ACL on it and
the command that grants the role's set: never a hang, a bare client error, or a silent "nothing
found".

The job role's tasks are pre-flight (EOS501: passes with the set, fails naming any one removed),
the sink's transaction (the sink's own clients, every ACL it uses) and Spark's source
(`test_job_without_input_read_fails_in_spark` in test_acl_removals_spark.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eos.core.acls import (
    INTERNAL_TOPICS,
    Acl,
    Operation,
    PatternType,
    ResourceType,
    Role,
    required_acls,
)
from airflow_provider_eos.core.errors import AclMissingError
from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.preflight import Status
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.acls_admin import acl_admin, apply_acls, delete_acls
from airflow_provider_eos.kafka.group_offsets import write_committed_offsets
from airflow_provider_eos.kafka.settings import group_metadata_consumer_config
from tests.support.checkpoints import batch_end_offsets, write_checkpoint
from tests.support.kafka_authorization import derive
from tests.support.role_requests import calls_of

pytestmark = pytest.mark.integration

PARTITIONS = 2
LAST_COMMITTED = 3


@dataclass
class SecuredPipeline:
    """A pipeline on the secured broker whose spec authenticates as ``principal`` (holding no ACL yet)."""

    spec: PipelineSpec
    principal: str
    admin_settings: dict[str, Any]
    open_transaction: Producer | None = None

    @property
    def admin(self) -> AdminClient:
        return acl_admin(self.admin_settings)

    def grant(self, role: Role, *, without: Acl | None = None) -> list[Acl]:
        """Give the principal ``role``'s set as Kafka's rules give it (:func:`kafka_set`), less ``without``."""
        wanted = kafka_set(self.spec, self.principal, role)
        apply_acls(self.admin, [a for a in wanted if a != without])
        if without is not None:
            delete_acls(self.admin, [without])
        return wanted


def kafka_set(spec: PipelineSpec, principal: str, role: Role) -> list[Acl]:
    """``role``'s set derived from Kafka's request table, after checking the product grants exactly it."""
    derived = [Acl(principal=principal, resource_type=ResourceType(b.resource_type), name=b.name,
                   pattern=PatternType(b.pattern), operation=Operation(b.operation))
               for b in derive(calls_of(spec, role))]
    product = required_acls(spec, principal, role)
    assert {a.binding for a in product} == {a.binding for a in derived}, (
        role, sorted(a.describe() for a in product), sorted(a.describe() for a in derived))
    return derived


def _base_spec(name: str, kafka: dict[str, Any], checkpoint: Path) -> dict[str, Any]:
    return {
        "name": name,
        "kafka": kafka,
        "input_topics": [f"{name}-in"],
        "output_topic": f"{name}-out",
        "dlq_topic": f"{name}-dlq",
        "group_id": f"{name}-sink",
        "transactional_id_prefix": f"{name}-eos",
        "checkpoint_location": str(checkpoint),
        "transaction_timeout_ms": 60_000,
    }


@pytest.fixture
def secured_pipeline(secured_admin_settings: dict[str, Any], tmp_path: Path) -> Iterator[SecuredPipeline]:
    """Topics, checkpoint (batches 0..3 committed), the group at batch 3 unmarked, a transaction open under -0."""
    from airflow_provider_eos.devstack.security import add_scram_user

    name = f"rm{uuid.uuid4().hex[:8]}"
    user = f"{name}-user"
    password = add_scram_user(secured_admin_settings, user)
    admin = AdminClient(dict(secured_admin_settings))
    topics = [f"{name}-in", f"{name}-out", f"{name}-dlq"]
    for future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics]).values():
        future.result(30)
    query_id = str(uuid.uuid4())
    checkpoint = write_checkpoint(tmp_path / "checkpoint", topic=topics[0], partitions=PARTITIONS, query_id=query_id,
                                  offsets=range(LAST_COMMITTED + 1), commits=range(LAST_COMMITTED + 1))
    feed = Producer(dict(secured_admin_settings))
    for tp, end in batch_end_offsets(topics[0], LAST_COMMITTED, PARTITIONS).items():
        for i in range(end):
            feed.produce(tp.topic, value=f"r{i}".encode(), partition=tp.partition)
    assert feed.flush(30) == 0
    # Offsets without a batch marker (as a tool's reset leaves them): align puts the marker back.
    write_committed_offsets(admin, f"{name}-sink", {
        tp: (end, "") for tp, end in batch_end_offsets(topics[0], LAST_COMMITTED, PARTITIONS).items()})
    kafka = {**secured_admin_settings, "sasl.username": user, "sasl.password": password}
    spec = PipelineSpec.from_dict(_base_spec(name, kafka, checkpoint))
    # A dead job's transaction: open under the driver writer's id, never committed.
    lingering = Producer({**secured_admin_settings, "transactional.id": spec.transactional_id(0),
                          "transaction.timeout.ms": 60_000})
    lingering.init_transactions(30)
    lingering.begin_transaction()
    lingering.produce(spec.output_topic, b"never committed")
    assert lingering.flush(30) == 0
    pipeline = SecuredPipeline(spec, f"User:{user}", dict(secured_admin_settings), lingering)
    yield pipeline
    admin.delete_topics(topics)


def _acl_id(acl: Acl) -> str:
    kind = acl.name.rsplit("-", 1)[-1] if acl.resource_type is ResourceType.TOPIC else ""
    return "-".join(x for x in (acl.resource_type.value.lower(), kind, acl.operation.value.lower()) if x)


def _set_of(role: Role) -> list[Acl]:
    """The role's set on a template pipeline (the parametrization: each test finds the same ACL on its own)."""
    spec = PipelineSpec.from_dict(_base_spec("tmpl", {"bootstrap.servers": "127.0.0.1:9"}, Path("/tmp/tmpl")))
    return kafka_set(spec, "User:tmpl", role)


def _same_acl(template: Acl, pipeline: SecuredPipeline, role: Role) -> Acl:
    """``template``'s counterpart in the pipeline's set (same position, same shape)."""
    found = kafka_set(pipeline.spec, pipeline.principal, role)[_set_of(role).index(template)]
    assert (found.resource_type, found.operation, found.pattern) == (
        template.resource_type, template.operation, template.pattern)
    return found


def assert_names(error: AclMissingError, removed: Acl, principal: str, role: Role) -> None:
    """The error names the principal, the refused resource (the one whose ACL is gone), the role's ACL on it and
    the command that grants the role's set."""
    text = f"{error.message}\nFix: {error.fix}"
    assert error.role == role and error.principal == principal, text
    assert error.resource_type == removed.resource_type.value, text
    if removed.resource_type is not ResourceType.CLUSTER:
        assert any(n == removed.name or n.startswith(removed.name) for n in error.resource_names), text
    assert principal in error.message, text
    assert f"{removed.operation.value} on {removed.resource_type.value} {removed.name!r}" in str(error.fix), text
    assert f"--principal {principal} --role {role} --apply" in str(error.fix), text
    assert "sasl.password" not in text and str(error.fix).count("Fix:") == 0


# -- recovery ------------------------------------------------------------------------------------


def _recovery_tasks(pipeline: SecuredPipeline) -> list[tuple[str, Callable[[], Any]]]:
    from airflow_provider_eos.usecases import abort, align, rewind, verify
    from airflow_provider_eos.usecases.clients import PipelineClients

    clients = PipelineClients(pipeline.spec, timeout_s=20)
    return [
        ("verify", lambda: verify.verify(clients)),
        ("abort", lambda: abort.abort(clients, force=True, execute=True)),
        # Forced like the abort: the checkpoint was written seconds ago and the transaction is young,
        # which the liveness gate would refuse before any ACL is asked.
        ("align", lambda: align.align(clients, execute=True, force=True)),
        ("rewind", lambda: rewind.rewind(clients, to_batch=2, execute=False)),
    ]


def test_the_recovery_set_lets_every_recovery_task_run(secured_pipeline: SecuredPipeline) -> None:
    secured_pipeline.grant("recovery")
    results = {name: run() for name, run in _recovery_tasks(secured_pipeline)}
    assert results["verify"].report.overall.value == "NO_MARKER", results["verify"].summary
    aborted = results["abort"].report
    assert secured_pipeline.spec.transactional_id(0) in {row.transactional_id for row in aborted.rows}, aborted
    assert not aborted.remaining, aborted
    assert results["align"].executed and results["align"].after.ok, results["align"].summary


@pytest.mark.parametrize("template", _set_of("recovery"), ids=_acl_id)
def test_recovery_without_one_acl_fails_naming_it(secured_pipeline: SecuredPipeline, template: Acl) -> None:
    removed = _same_acl(template, secured_pipeline, "recovery")
    secured_pipeline.grant("recovery", without=removed)
    for name, run in _recovery_tasks(secured_pipeline):
        try:
            run()
        except AclMissingError as refused:
            assert_names(refused, removed, secured_pipeline.principal, "recovery")
            return
        except Exception as other:
            pytest.fail(f"{name} without {removed.binding} failed with {type(other).__name__}: {other}")
    pytest.fail(f"every recovery task passed without {removed.binding}: the ACL is not needed")


# -- health --------------------------------------------------------------------------------------


def _health(pipeline: SecuredPipeline) -> Any:
    from airflow_provider_eos.usecases.clients import PipelineClients
    from airflow_provider_eos.usecases.health import health

    return health(PipelineClients(pipeline.spec, timeout_s=20))


def test_the_health_set_lets_the_health_check_run(secured_pipeline: SecuredPipeline) -> None:
    secured_pipeline.grant("health")
    report = _health(secured_pipeline).report
    assert report.verification is not None and report.verification.verdict == "NO_MARKER", report
    assert secured_pipeline.spec.transactional_id(0) in {t.transactional_id for t in report.transactions}, report


def test_the_health_set_judges_a_pinned_input_partition_without_the_brokers_configuration(
    secured_pipeline: SecuredPipeline,
) -> None:
    """The health role's set does not DescribeConfigs the brokers: with an input partition pinned by an upstream
    transaction, the probe's read of transaction.max.timeout.ms is refused and worked around (Kafka's default),
    and the report says so, naming the refusal and the two fixes. With the optional grant the brokers' own is read."""
    from airflow_provider_eos.core.health import LagWindow
    from airflow_provider_eos.kafka.acls_admin import apply_acls
    from airflow_provider_eos.kafka.health_probe import probe
    from airflow_provider_eos.usecases.health import evaluate

    secured_pipeline.grant("health")
    upstream = Producer({**secured_pipeline.admin_settings, "transactional.id": f"upstream-{uuid.uuid4().hex[:6]}",
                         "transaction.timeout.ms": 120_000})
    upstream.init_transactions(30)
    upstream.begin_transaction()
    upstream.produce(secured_pipeline.spec.input_topics[0], b"open upstream", partition=0)
    assert upstream.flush(30) == 0
    # The opt-in's one ACL (`eos acls --role health --broker-configs`; the whole command: test_health_broker_configs).
    opted = required_acls(secured_pipeline.spec, secured_pipeline.principal, "health", broker_configs=True)
    (broker_configs,) = [a for a in opted if a.resource_type is ResourceType.CLUSTER]
    try:
        sample = probe(secured_pipeline.spec, timeout_s=20)
        apply_acls(secured_pipeline.admin, [broker_configs])
        granted = probe(secured_pipeline.spec, timeout_s=20)
    finally:
        upstream.abort_transaction(30)
    assert sample.transaction_max_timeout_ms is None
    report = evaluate(secured_pipeline.spec, LagWindow([sample]))
    assert report.thresholds.input_hang_after_ms == 900_000
    assert [g.state for g in report.gaps if g.role == "input" and g.tp.partition == 0] == ["pinned"]
    (note,) = [n for n in report.notes if n.startswith("input_hang_after_ms is Kafka's default")]
    assert f"Refused: Kafka refused {secured_pipeline.principal} DescribeConfigs" in note, note
    assert "grant the health principal DESCRIBE_CONFIGS on the cluster, or set input_hang_after_ms" in note, note
    # The opt-in's grant is enough: the brokers' own setting is read (the secured devstack keeps Kafka's).
    assert (granted.transaction_max_timeout_ms, granted.transaction_max_timeout_unread) == (900_000, None), granted
    assert not [n for n in evaluate(secured_pipeline.spec, LagWindow([granted])).notes if "input_hang" in n]


@pytest.mark.parametrize("template", _set_of("health"), ids=_acl_id)
def test_health_without_one_acl_fails_naming_it(secured_pipeline: SecuredPipeline, template: Acl) -> None:
    removed = _same_acl(template, secured_pipeline, "health")
    secured_pipeline.grant("health", without=removed)
    with pytest.raises(AclMissingError) as refused:
        _health(secured_pipeline)
    assert_names(refused.value, removed, secured_pipeline.principal, "health")


# -- job: pre-flight and the sink's transaction -------------------------------------------------


def test_preflight_passes_the_acl_check_with_the_job_set(secured_pipeline: SecuredPipeline) -> None:
    """No ACL beyond Kafka's set is asked for: pre-flight's EOS501 passes with exactly that set."""
    from airflow_provider_eos.core.preflight import evaluate
    from airflow_provider_eos.kafka.cluster_facts import gather_facts

    secured_pipeline.grant("job")
    finding = evaluate(gather_facts(secured_pipeline.spec, timeout_s=20)).finding("EOS501")
    assert finding.status is Status.PASS, finding


@pytest.mark.parametrize("template", _set_of("job"), ids=_acl_id)
def test_preflight_without_one_job_acl_fails_naming_it(secured_pipeline: SecuredPipeline, template: Acl) -> None:
    from airflow_provider_eos.core.preflight import evaluate
    from airflow_provider_eos.kafka.cluster_facts import gather_facts

    removed = _same_acl(template, secured_pipeline, "job")
    secured_pipeline.grant("job", without=removed)
    finding = evaluate(gather_facts(secured_pipeline.spec, timeout_s=20)).finding("EOS501")
    assert finding.status is Status.FAIL, finding
    assert f"{removed.resource_type.value} '{removed.name}' ({removed.pattern.value}) {removed.operation.value}" \
        in finding.message, finding.message
    assert finding.fix and f"--principal {secured_pipeline.principal} --role job --apply" in finding.fix


def test_preflight_names_the_acl_of_an_input_topic_hidden_from_the_job(secured_pipeline: SecuredPipeline) -> None:
    """Without READ (so without the DESCRIBE it implies) on the existing input topic, Kafka leaves the topic out of
    the principal's metadata: EOS205 names the ACL and the command granting the job's set, not "create the topic"
    (before the fix it said the input topic does not exist). A topic that really is missing still says so."""
    from airflow_provider_eos.core.preflight import evaluate
    from airflow_provider_eos.kafka.cluster_facts import gather_facts

    spec, principal = secured_pipeline.spec, secured_pipeline.principal
    (read_input,) = [a for a in kafka_set(spec, principal, "job") if a.resource_type is ResourceType.TOPIC
                     and a.name == spec.input_topics[0] and a.operation is Operation.READ]
    secured_pipeline.grant("job", without=read_input)
    facts = gather_facts(spec, timeout_s=20)
    finding = evaluate(facts).finding("EOS205")
    assert finding.status is Status.FAIL, finding
    assert f"input topic '{spec.input_topics[0]}' is hidden" in finding.message, finding.message
    assert f"{principal} Metadata: it needs DESCRIBE on TOPIC '{spec.input_topics[0]}'" in finding.message
    assert "does not exist" not in finding.message and finding.fix and "create" not in finding.fix, finding
    assert f"READ on TOPIC '{spec.input_topics[0]}' (LITERAL)" in finding.fix, finding.fix
    assert f"--principal {principal} --role job --apply" in finding.fix, finding.fix
    assert facts.topics is not None and facts.topics[spec.input_topics[0]].refused, facts.topics

    missing = spec.with_overrides(input_topics=[f"{spec.input_topics[0]}-never-created"])
    secured_pipeline.spec = missing
    secured_pipeline.grant("job")
    absent = evaluate(gather_facts(missing, timeout_s=20)).finding("EOS205")
    assert absent.status is Status.FAIL, absent
    assert f"input topic '{missing.input_topics[0]}' does not exist" in absent.message, absent


def _sink_transaction(pipeline: SecuredPipeline) -> None:
    """What one batch of the sink does: init (fencing the open transaction), produce output and a dead letter,
    commit the group's offsets with the marker inside the transaction, commit."""
    from airflow_provider_eos.spark.transactional_producer import TransactionalProducer

    spec = pipeline.spec
    tp = TopicPartition(spec.input_topics[0], 0)
    group = Consumer(group_metadata_consumer_config(spec))
    writer = TransactionalProducer(spec, spec.transactional_id(0))
    try:
        with writer.transaction(4) as producer:
            producer.produce(spec.output_topic, b"row")
            producer.produce(str(spec.dlq_topic), b"dead")
            producer.flush(20)
            writer.send_offsets(producer, {tp: (50, BatchMarker("q", 4).encode())}, group.consumer_group_metadata())
            writer.commit(producer, 4)
    finally:
        group.close()


def test_the_job_set_lets_the_sink_commit_a_batch(secured_pipeline: SecuredPipeline) -> None:
    secured_pipeline.grant("job")
    _sink_transaction(secured_pipeline)


# What the sink sends needs these; the rest of the job's set (DESCRIBE_CONFIGS) is pre-flight's alone.
# What the sink itself needs: DESCRIBE_CONFIGS and the internal topics' metadata are pre-flight's alone
# (its cases above remove each of them and see EOS501 name it).
_SINK_ACLS = [
    a for a in _set_of("job") if a.operation is not Operation.DESCRIBE_CONFIGS and a.name not in INTERNAL_TOPICS
]


@pytest.mark.parametrize("template", _SINK_ACLS, ids=_acl_id)
def test_the_sink_without_one_job_acl_fails_naming_it(secured_pipeline: SecuredPipeline, template: Acl) -> None:
    removed = _same_acl(template, secured_pipeline, "job")
    secured_pipeline.grant("job", without=removed)
    with pytest.raises(AclMissingError) as refused:
        _sink_transaction(secured_pipeline)
    assert_names(refused.value, removed, secured_pipeline.principal, "job")
