"""Least-privilege ACLs on the real secured broker (SASL/SCRAM over TLS, StandardAuthorizer, no ACL means no access).

A fresh SCRAM user per test gets the job's set through ``eos acls --apply`` (authenticated by the
devstack's ``client.config``, the admin super user); applying twice changes nothing; DescribeAcls
shows exactly the set; the sink's own clients (transactional producer, group-metadata consumer,
the group's offsets) work with it; and pre-flight's EOS501 passes with the full set and names the
one ACL removed, by probing (the job principal may not DescribeAcls) or, once it may, by
describing its ACLs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eos.core.acls import INTERNAL_TOPICS, Acl, Operation, ResourceType, required_acls
from airflow_provider_eos.core.preflight import Status
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.acls_admin import acl_admin, apply_acls, delete_acls, describe_acls
from airflow_provider_eos.kafka.cluster_facts import gather_facts
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets
from airflow_provider_eos.kafka.settings import admin_config, group_metadata_consumer_config

pytestmark = pytest.mark.integration

EOS = Path(sys.executable).with_name("eos")


@pytest.fixture
def job_spec(secured_admin_settings: dict[str, Any], tmp_path: Path) -> Iterator[tuple[PipelineSpec, Path]]:
    """A pipeline whose kafka settings authenticate as a fresh SCRAM user without any ACL; its topics exist."""
    from airflow_provider_eos.devstack.security import add_scram_user

    name = f"acl{uuid.uuid4().hex[:8]}"
    password = add_scram_user(secured_admin_settings, f"{name}-job")
    admin = AdminClient(dict(secured_admin_settings))
    topics = [f"{name}-in", f"{name}-out", f"{name}-dlq"]
    for future in admin.create_topics([NewTopic(t, 2, 1) for t in topics]).values():
        future.result(30)
    spec = PipelineSpec.from_dict({
        "name": name,
        "kafka": {**secured_admin_settings, "sasl.username": f"{name}-job", "sasl.password": password},
        "input_topics": [topics[0]],
        "output_topic": topics[1],
        "dlq_topic": topics[2],
        "group_id": f"{name}-sink",
        "transactional_id_prefix": f"{name}-eos",
        "checkpoint_location": str(tmp_path / "checkpoint"),
        "trigger": "available_now",
    })
    path = tmp_path / "spec.json"
    path.write_text(spec.to_json())
    yield spec, path
    acl_admin(secured_admin_settings).delete_topics(topics)


@pytest.fixture
def admin_config_file(secured_kafka: Any) -> str:
    return str(secured_kafka.client_config)


def principal(spec: PipelineSpec) -> str:
    return f"User:{spec.kafka['sasl.username']}"


def eos_acls(spec_file: Path, who: str, *extra: str) -> dict[str, Any]:
    done = subprocess.run([str(EOS), "acls", "--spec", str(spec_file), "--principal", who, "--role", "job", "--json",
                           *extra], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_eos_acls_apply_is_idempotent_and_describe_shows_the_set(
        job_spec: tuple[PipelineSpec, Path], admin_config_file: str, secured_admin_settings: dict[str, Any]) -> None:
    spec, spec_file = job_spec
    who = principal(spec)
    wanted = required_acls(spec, who, "job")
    first = eos_acls(spec_file, who, "--apply", "--admin-config", admin_config_file)
    assert first["applied"] and len(first["created"]) == len(wanted) and first["already_present"] == []
    second = eos_acls(spec_file, who, "--apply", "--admin-config", admin_config_file)
    assert second["created"] == [] and len(second["already_present"]) == len(wanted)
    found = describe_acls(acl_admin(secured_admin_settings), who)
    assert sorted(a.binding for a in found) == sorted(a.binding for a in wanted)
    # The spec's own (job) principal cannot grant itself anything.
    job_file = spec_file.with_name("job-client.json")
    job_file.write_text(json.dumps(dict(spec.kafka)))
    refused = subprocess.run([str(EOS), "acls", "--spec", str(spec_file), "--principal", who, "--role", "recovery",
                              "--apply", "--admin-config", str(job_file)], capture_output=True, text=True,
                             timeout=120, check=False)
    assert refused.returncode == 2 and "CLUSTER_AUTHORIZATION_FAILED" in refused.stderr, refused.stderr
    assert str(spec.kafka["sasl.password"]) not in refused.stdout + refused.stderr


def test_the_job_set_lets_the_sink_clients_write_a_transaction(
        job_spec: tuple[PipelineSpec, Path], secured_admin_settings: dict[str, Any]) -> None:
    from confluent_kafka import Consumer

    from airflow_provider_eos.spark.transactional_producer import TransactionalProducer

    spec, _ = job_spec
    apply_acls(acl_admin(secured_admin_settings), required_acls(spec, principal(spec), "job"))
    tp = TopicPartition(spec.input_topics[0], 0)
    group = Consumer(group_metadata_consumer_config(spec))
    admin = AdminClient(admin_config(spec))
    try:
        assert read_committed_offsets(admin, spec.group_id, [tp],
                                      transaction_timeout_ms=spec.transaction_timeout_ms) == {tp: None}
        writer = TransactionalProducer(spec, spec.partition_transactional_id(tp.topic, tp.partition))
        with writer.transaction(0) as producer:
            writer.send_offsets(producer, {tp: (5, "eos1:q:0")}, group.consumer_group_metadata())
            producer.produce(spec.output_topic, b"row")
            producer.produce(str(spec.dlq_topic), b"dead")
            writer.commit(producer, 0)
        found = read_committed_offsets(admin, spec.group_id, [tp],
                                       transaction_timeout_ms=spec.transaction_timeout_ms)[tp]
        assert found is not None and (found.offset, found.metadata) == (5, "eos1:q:0")
    finally:
        group.close()


def _eos501(spec: PipelineSpec) -> Any:
    from airflow_provider_eos.core.preflight import evaluate

    return evaluate(gather_facts(spec, timeout_s=20)).finding("EOS501")


def test_eos501_passes_with_the_full_set_and_names_a_removed_acl(
        job_spec: tuple[PipelineSpec, Path], secured_admin_settings: dict[str, Any]) -> None:
    spec, _ = job_spec
    who = principal(spec)
    admin = acl_admin(secured_admin_settings)
    wanted = required_acls(spec, who, "job")
    apply_acls(admin, wanted)
    ok = _eos501(spec)
    assert ok.status is Status.PASS and "probing" in ok.message, ok

    (group_read,) = [a for a in wanted if (a.resource_type, a.operation) == (ResourceType.GROUP, Operation.READ)]
    assert delete_acls(admin, [group_read])
    missing = _eos501(spec)
    assert missing.status is Status.FAIL, missing
    assert f"GROUP '{spec.group_id}' (LITERAL) READ" in missing.message and "probing" in missing.message
    assert missing.fix and f"--principal {who} --role job --apply" in missing.fix

    # With DESCRIBE on the cluster the principal may read its ACLs: the same gap is found by describing them.
    describe_cluster = Acl(principal=who, resource_type=ResourceType.CLUSTER, name="kafka-cluster",
                           operation=Operation.DESCRIBE)
    apply_acls(admin, [describe_cluster])
    by_acls = _eos501(spec)
    assert by_acls.status is Status.FAIL and "describing the principal's ACLs" in by_acls.message, by_acls
    assert f"GROUP '{spec.group_id}' (LITERAL) READ" in by_acls.message
    apply_acls(admin, [group_read])
    assert _eos501(spec).status is Status.PASS


def test_with_exactly_the_job_set_preflight_checks_the_internal_topics(
        job_spec: tuple[PipelineSpec, Path], secured_admin_settings: dict[str, Any]) -> None:
    # EOS201 and EOS204 read the internal topics' partitions from the all-topics metadata (DESCRIBE on each)
    # and their min.insync.replicas (DESCRIBE_CONFIGS on each). The set once lacked both: on every secured
    # cluster both rules were not_checked, for want of ACLs the documented set did not grant.
    from airflow_provider_eos.core.preflight import evaluate

    spec, _ = job_spec
    apply_acls(acl_admin(secured_admin_settings), required_acls(spec, principal(spec), "job"))
    facts = gather_facts(spec, timeout_s=20)
    assert not {name: facts.unavailable[name] for name in INTERNAL_TOPICS if name in facts.unavailable}
    report = evaluate(facts)
    for code in ("EOS201", "EOS204", "EOS501"):
        finding = report.finding(code)
        assert finding.status is Status.PASS, finding
