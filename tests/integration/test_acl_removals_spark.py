"""The job's Spark source without READ on its input topic: the job fails at once, naming the ACL and the job's grant.

The rest of the job's set is proven ACL by ACL in test_acl_removals.py (pre-flight, the sink's
transaction); this is the one ACL only Spark's own Kafka client (Java) uses before the sink runs.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.acls import Operation, ResourceType, required_acls
from airflow_provider_eos.kafka.acls_admin import acl_admin, apply_acls
from tests.support.pipeline import PipelineHarness

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_job_without_input_read_fails_in_spark_naming_it(secured_admin_settings: dict[str, Any],
                                                           tmp_path: Path) -> None:
    from airflow_provider_eos.devstack.security import add_scram_user

    user = f"src{uuid.uuid4().hex[:8]}"
    password = add_scram_user(secured_admin_settings, user)
    harness = PipelineHarness(secured_admin_settings, tmp_path, transform=None,
                              spec_kafka={**secured_admin_settings, "sasl.username": user, "sasl.password": password})
    principal = f"User:{user}"
    wanted = required_acls(harness.spec, principal, "job")
    (input_read,) = [a for a in wanted if (a.resource_type, a.operation) == (ResourceType.TOPIC, Operation.READ)]
    apply_acls(acl_admin(secured_admin_settings), [a for a in wanted if a != input_read])
    harness.produce_input([(None, f"r{i}".encode()) for i in range(5)])

    result = harness.run(timeout_s=300)

    assert result.returncode != 0, result.log[-3000:]
    failed = [line for line in result.log.splitlines() if "EOS-QUERY failed: " in line]
    assert failed, result.log[-3000:]
    assert f"Kafka refused {principal} Fetch: it needs READ on TOPIC '{harness.input_topic}'" in failed[0], failed[0]
    assert f"--principal {principal} --role job --apply" in result.log
    assert f"READ on TOPIC '{harness.input_topic}' (LITERAL)" in result.log
    assert password not in result.log
    assert harness.output_values() == []
