"""The opt-in ACLs of aborting *hanging* transactions (``eos acls --role recovery --hanging-abort``), proven.

A hanging transaction is made as Kafka's own bug made them (KAFKA-12671): with the broker's
``transaction.partition.verification.enable`` off, a transactional producer writes to a
partition its coordinator was never told about, then ends its transaction; the coordinator
writes markers only where it knows, and the partition stays open for good. Then:

- with the recovery set plus ``--hanging-abort``, abort ends it with AbortTransaction
  (WriteTxnMarkers, which Kafka authorizes with ALTER on the cluster);
- without ALTER on the cluster the abort reports that row failed, naming that ACL;
- a hanging transaction of another application's id is only reported; without DESCRIBE on
  every transactional id (``*``) the abort cannot tell it is not the pipeline's, and says so
  (left, naming that ACL) instead of aborting it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eos.core import transactions as txn
from airflow_provider_eos.core.acls import Acl, Operation, ResourceType, required_acls
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.acls_admin import acl_admin, apply_acls
from airflow_provider_eos.kafka.settings.kafka_python import kafka_python_config
from airflow_provider_eos.usecases.abort import abort_open_transactions
from airflow_provider_eos.usecases.clients import PipelineClients
from tests.support.partition_verification import until_accepted, verification_off

pytestmark = pytest.mark.integration

@pytest.fixture
def unverified_broker(secured_admin_settings: dict[str, Any]) -> Iterator[AdminClient]:
    """The secured broker with partition verification off for this test (a dynamic broker setting), then on."""
    admin = AdminClient(dict(secured_admin_settings))
    with verification_off(admin, secured_admin_settings["bootstrap.servers"]):
        yield admin


def make_hanging(admin_settings: dict[str, Any], transactional_id: str, topic: str) -> None:
    """Leave a transaction of ``transactional_id`` open for good on ``topic``-1 (its coordinator never hears of it)."""
    from kafka import KafkaProducer
    from kafka.errors import InvalidTxnStateError
    from kafka.structs import TopicPartition

    def attempt() -> None:
        producer = KafkaProducer(**kafka_python_config(admin_settings), transactional_id=transactional_id)
        try:
            producer.init_transactions()
            producer.begin_transaction()
            # Marked as added, so no AddPartitionsToTxn is sent for it: the coordinator never learns of partition 1.
            producer._transaction_manager._partitions_in_transaction.add(TopicPartition(topic, 1))
            producer.send(topic, b"hanging", partition=1).get(30)
            producer.send(topic, b"known", partition=0).get(30)
            producer.abort_transaction()
        finally:
            producer.close()

    until_accepted(attempt, lambda outcome: isinstance(outcome, InvalidTxnStateError))


@pytest.fixture
def pipeline(secured_admin_settings: dict[str, Any], unverified_broker: AdminClient,
             tmp_path: Path) -> Iterator[tuple[PipelineSpec, str]]:
    """A pipeline whose spec authenticates as a fresh user without ACLs; its output topic exists."""
    from airflow_provider_eos.devstack.security import add_scram_user

    name = f"hg{uuid.uuid4().hex[:8]}"
    password = add_scram_user(secured_admin_settings, f"{name}-rec")
    topics = [f"{name}-in", f"{name}-out"]
    for future in unverified_broker.create_topics([NewTopic(t, 2, 1) for t in topics]).values():
        future.result(30)
    spec = PipelineSpec.from_dict({
        "name": name, "kafka": {**secured_admin_settings, "sasl.username": f"{name}-rec", "sasl.password": password},
        "input_topics": [topics[0]], "output_topic": topics[1], "group_id": f"{name}-sink",
        "transactional_id_prefix": f"{name}-eos", "checkpoint_location": str(tmp_path / "checkpoint"),
    })
    yield spec, f"User:{name}-rec"
    unverified_broker.delete_topics(topics)


def _abort(spec: PipelineSpec) -> txn.AbortReport:
    return abort_open_transactions(
        PipelineClients(spec), force=True, execute=True, hanging_min_age_ms=0, settle_timeout_s=10
    )


def _hanging_rows(report: txn.AbortReport) -> list[txn.AbortRow]:
    return [row for row in report.rows if row.kind == "hanging"]


def _grant(admin_settings: dict[str, Any], spec: PipelineSpec, principal: str, *, without: Operation | None = None,
           on: ResourceType | None = None) -> list[Acl]:
    wanted = [a for a in required_acls(spec, principal, "recovery", hanging_abort=True)
              if (a.resource_type, a.operation) != (on, without)]
    apply_acls(acl_admin(admin_settings), wanted)
    return wanted


def test_the_hanging_abort_set_ends_the_pipelines_hanging_transaction(
        secured_admin_settings: dict[str, Any], pipeline: tuple[PipelineSpec, str]) -> None:
    spec, principal = pipeline
    make_hanging(secured_admin_settings, f"{spec.transactional_id_prefix}-9", spec.output_topic)
    _grant(secured_admin_settings, spec, principal)
    report = _abort(spec)
    (row,) = _hanging_rows(report)
    assert row.transactional_id == f"{spec.transactional_id_prefix}-9" and row.action is txn.Action.ABORT_MARKER
    assert row.outcome is txn.Outcome.ABORTED, row
    assert not report.remaining and all(not o.pinned for o in report.offsets_after), report


def test_without_alter_on_the_cluster_the_hanging_abort_fails_naming_it(
        secured_admin_settings: dict[str, Any], pipeline: tuple[PipelineSpec, str]) -> None:
    spec, principal = pipeline
    make_hanging(secured_admin_settings, f"{spec.transactional_id_prefix}-9", spec.output_topic)
    _grant(secured_admin_settings, spec, principal, without=Operation.ALTER, on=ResourceType.CLUSTER)
    report = _abort(spec)
    (row,) = _hanging_rows(report)
    assert row.outcome is txn.Outcome.FAILED, row
    assert f"Kafka refused {principal} WriteTxnMarkers: it needs ALTER on CLUSTER 'kafka-cluster'" in str(row.detail)
    assert report.remaining, "the hanging transaction is still open and the report says so"


@pytest.mark.parametrize("every_id", [True, False], ids=["describe-every-id", "without-describe-every-id"])
def test_another_applications_hanging_transaction_is_only_reported(
        secured_admin_settings: dict[str, Any], pipeline: tuple[PipelineSpec, str], every_id: bool) -> None:
    spec, principal = pipeline
    foreign = f"other-app-{uuid.uuid4().hex[:6]}"
    make_hanging(secured_admin_settings, foreign, spec.output_topic)
    _grant(secured_admin_settings, spec, principal,
           without=None if every_id else Operation.DESCRIBE, on=None if every_id else ResourceType.TRANSACTIONAL_ID)
    report = _abort(spec)
    (row,) = _hanging_rows(report)
    assert row.outcome is txn.Outcome.LEFT, row
    if every_id:
        assert row.action is txn.Action.LEAVE_FOREIGN and row.transactional_id == foreign, row
    else:
        # ListTransactions hid the other application's id: without DESCRIBE on '*' it is not aborted as ours.
        assert row.action is txn.Action.LEAVE_UNATTRIBUTABLE and row.transactional_id is None, row
        assert "grant DESCRIBE on TRANSACTIONAL_ID '*'" in str(row.detail)
