"""A real Prometheus evaluates the package's rules over the real exporter: the count-based alerts fire.

A failure's ``kind`` and the ``skip_replay`` action are counter series the driver creates at their first
increment, so Prometheus first sees them at 1; a failed driver then exits after ``failure_linger_s``.
No broker and no Spark: the exporter gets the updates the sink would hand it
(:mod:`airflow_provider_eos.core.metrics.updates`).
"""

from __future__ import annotations

import time
from pathlib import Path

from airflow_provider_eos.core.metrics.updates import BatchReport, TransactionCounts, batch_updates, failure_updates
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.devstack.broker_config import free_port
from airflow_provider_eos.spark.metrics_exporter import PrometheusExporter
from tests.support.pipeline import wait_for
from tests.support.prometheus import PrometheusApi, Target, prometheus


def _exporter(name: str) -> PrometheusExporter:
    spec = PipelineSpec.from_dict(dict(
        name=name, kafka={"bootstrap.servers": "127.0.0.1:9"}, input_topics=["in"], output_topic="out",
        group_id=f"{name}-g", transactional_id_prefix=f"{name}-t", checkpoint_location=f"/tmp/{name}",
        metrics={"prometheus_port": free_port(), "prometheus_host": "127.0.0.1"},
    ))
    return PrometheusExporter(spec).start()


def _batch(pipeline: str, batch_id: int, action: str) -> BatchReport:
    committed = int(action == "produce")
    return BatchReport(pipeline=pipeline, batch_id=batch_id, writers="driver", action=action, rows_out=5 * committed,
                       rows_dlq=0, produce_ms=10, commit_ms=5, finished_at=time.time(),
                       transactions=TransactionCounts(committed, committed, 0))


def _firing(api: PrometheusApi, alert: str, pipeline: str) -> bool:
    return any(a["labels"].get("alertname") == alert and a["labels"].get("pipeline") == pipeline
               and a["state"] == "firing" for a in api.alerts())


def test_a_failure_and_a_replay_fire_their_alerts_though_their_series_are_born_at_1(tmp_path: Path) -> None:
    failing, replaying = _exporter("failing"), _exporter("replaying")
    targets = [Target("failing", failing.url.removeprefix("http://").removesuffix("/metrics")),
               Target("replaying", replaying.url.removeprefix("http://").removesuffix("/metrics"))]
    try:
        with prometheus(tmp_path / "prometheus", targets) as api:
            failing.writer_chosen("driver", "")
            failing.apply(batch_updates(_batch("failing", 0, "produce")))
            assert wait_for(lambda: api.targets_up() == {"failing": "up", "replaying": "up"}, 30), api.targets_up()
            # A restarted driver's first batch: a replay whose transactions had committed.
            replaying.writer_chosen("driver", "")
            replaying.apply(batch_updates(_batch("replaying", 7, "skip_replay")))
            # The failing driver's batch 1 fails.
            failing.apply(failure_updates("failing", "TransactionTimedOutError", TransactionCounts(1, 0, 1), "driver"))
            assert wait_for(lambda: _firing(api, "EosSinkFailing", "failing"), 20), api.alerts()
            assert wait_for(lambda: _firing(api, "EosReplaysSkipped", "replaying"), 20), api.alerts()
            # The failed driver exits: its series go stale, and the alert goes on firing.
            failing.stop()
            assert wait_for(lambda: api.targets_up()["failing"] == "down", 20), api.targets_up()
            time.sleep(3)
            assert _firing(api, "EosSinkFailing", "failing"), api.alerts()
    finally:
        failing.stop()
        replaying.stop()
