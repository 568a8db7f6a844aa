"""The health check's and the recovery's findings reach Airflow's metrics (StatsD), on the shared deployment.

The deployment sends Airflow's metrics to a StatsD address (``eos airflow up --statsd``); this test
listens there while it triggers, over the REST API, the health check and the manual recovery
(verify, and a dry-run abort) of a pipeline whose batches 0..3 are committed, and reads the
package's metrics among Airflow's own (docs/observability.md).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_provider_eos.core.metrics.catalog import TASK_METRICS
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from tests.deployment.conftest import check_caught_up_pipeline
from tests.support.airflow_api import AirflowApi
from tests.support.checkpointed_pipeline import CheckpointedPipeline
from tests.support.statsd import StatsdListener

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.deployment]
#: The prefix of this module's pipelines (the shared ``pipeline`` fixture, conftest).
PIPELINE_STEM = "metrics"


@pytest.fixture
def statsd(airflow_deployment: AirflowDeploymentInfo) -> Iterator[StatsdListener]:
    assert airflow_deployment.statsd, "the shared deployment sends its metrics to a StatsD address"
    host, _, port = airflow_deployment.statsd.rpartition(":")
    with StatsdListener(host, int(port)) as listener:
        yield listener


def test_health_and_recovery_findings_reach_statsd(pipeline: CheckpointedPipeline, statsd: StatsdListener,
                                                   airflow_api: AirflowApi) -> None:
    check_caught_up_pipeline(pipeline, airflow_api, "verify", "abort")
    name = pipeline.spec.name

    prefix = f"airflow.eos.health.{name}."
    statsd.wait_for(f"{prefix}status")
    health = {line.name.removeprefix(prefix): line for line in statsd.latest(prefix).values()}
    # Caught up, in sync, nothing open: every number says so.
    assert {key: (line.value, line.kind) for key, line in health.items() if "." not in key} == {
        "status": (0, "g"), "verdict": (0, "g"), "lag": (0, "g"), "open_transactions": (0, "g"),
        "lingering_transactions": (0, "g"), "commit_age_seconds": (health["commit_age_seconds"].value, "g"),
    }, health
    assert health["commit_age_seconds"].value >= 0
    topic = pipeline.input_topic.replace(".", "_")
    assert {key for key in health if "." in key} == {f"{topic}.0.lag", f"{topic}.1.lag"}, health

    recovery = f"airflow.eos.recovery.{name}."
    assert statsd.wait_for(f"{recovery}verdict").value == 0  # IN_SYNC
    assert statsd.wait_for(f"{recovery}open_transactions").value == 0
    assert statsd.wait_for(f"{recovery}transactions_aborted").kind == "c"
    assert statsd.wait_for(f"{recovery}remaining_transactions").value == 0
    assert statsd.wait_for(f"{recovery}hanging_transactions").value == 0

    # Every task metric of the catalog (the docs' table) was sent for this pipeline.
    expected = {f"airflow.{metric.name}".format(pipeline=name, topic=topic, partition=partition)
                for metric in TASK_METRICS for partition in (0, 1)}
    assert expected <= {line.name for line in statsd.lines}, expected - {line.name for line in statsd.lines}
