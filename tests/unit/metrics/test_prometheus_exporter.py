"""The driver's exporter (spark/metrics_exporter.py) served on 127.0.0.1 and scraped as Prometheus would."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from airflow_provider_eos.core.errors import MetricsExporterError
from airflow_provider_eos.core.metrics.catalog import JOB_METRICS
from airflow_provider_eos.core.metrics.updates import BatchReport, TransactionCounts, batch_updates
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.devstack.broker_config import free_port
from airflow_provider_eos.spark.metrics_exporter import PrometheusExporter


def _spec(port: int, transaction_timeout_ms: int = 45_000) -> PipelineSpec:
    return PipelineSpec.from_dict(dict(
        name="orders", kafka={"bootstrap.servers": "127.0.0.1:9"}, input_topics=["in"], output_topic="out",
        group_id="g", transactional_id_prefix="t", checkpoint_location="/tmp/c",
        transaction_timeout_ms=transaction_timeout_ms,
        metrics={"prometheus_port": port, "prometheus_host": "127.0.0.1"}))


@pytest.fixture
def exporter() -> Iterator[PrometheusExporter]:
    running = PrometheusExporter(_spec(free_port())).start()
    try:
        yield running
    finally:
        running.stop()


def _scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {sample.name: [*[(s.labels, s.value) for s in family.samples if s.name == sample.name]]
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_a_batch_shows_in_the_scrape_with_the_catalogs_names_labels_and_values(exporter: PrometheusExporter) -> None:
    exporter.writer_chosen("executors", "jvm")
    exporter.apply(batch_updates(BatchReport(
        pipeline="orders", batch_id=3, writers="executors", action="produce", rows_out=120, rows_dlq=4,
        produce_ms=800, commit_ms=40, finished_at=1_800_000_000.0, transactions=TransactionCounts(2, 2, 0))))
    assert exporter.url is not None
    scraped = _scrape(exporter.url)
    assert scraped["eos_records_out_total"] == [({"pipeline": "orders", "writers": "executors"}, 120.0)]
    assert scraped["eos_batches_total"] == [({"pipeline": "orders", "writers": "executors", "action": "produce"},
                                             1.0)]
    assert scraped["eos_writer_info"] == [({"pipeline": "orders", "writers": "executors", "executor_writer": "jvm"},
                                           1.0)]
    assert scraped["eos_transaction_timeout_seconds"] == [({"pipeline": "orders"}, 45.0)]
    assert scraped["eos_last_committed_batch"] == [({"pipeline": "orders"}, 3.0)]
    count = [value for labels, value in scraped["eos_produce_seconds_count"]]
    assert count == [1.0]
    # No `_created` series: they double what Prometheus stores and nothing uses them.
    assert not any(name.endswith("_created") for name in scraped)
    # Every name served is in the catalog (the docs, the rules and the dashboard are generated from it).
    catalog = {series for metric in JOB_METRICS for series in metric.series}
    assert set(scraped) <= catalog, set(scraped) - catalog


def test_the_open_transactions_age_grows_while_a_batch_writes_and_is_zero_between_batches(
    exporter: PrometheusExporter,
) -> None:
    assert exporter.url is not None
    assert _scrape(exporter.url)["eos_open_transaction_age_seconds"] == [({"pipeline": "orders"}, 0.0)]
    exporter.transaction_opened()
    time.sleep(0.3)
    ((_, age),) = _scrape(exporter.url)["eos_open_transaction_age_seconds"]
    assert age >= 0.3
    exporter.transaction_closed()
    assert _scrape(exporter.url)["eos_open_transaction_age_seconds"] == [({"pipeline": "orders"}, 0.0)]


def test_a_taken_port_fails_the_start_naming_the_address_and_the_fix(exporter: PrometheusExporter) -> None:
    settings = exporter.spec.metrics
    assert settings is not None
    second = PrometheusExporter(exporter.spec)
    with pytest.raises(MetricsExporterError, match=f"127.0.0.1:{settings.prometheus_port}") as raised:
        second.start()
    assert "metrics.prometheus_port" in (raised.value.fix or "")


def test_the_spec_refuses_a_port_out_of_range() -> None:
    from airflow_provider_eos.core.errors import SpecError

    with pytest.raises(SpecError, match="prometheus_port") as raised:
        _spec(70_000)
    assert "65535" in str(raised.value)


@pytest.mark.parametrize(("timeout_ms", "top"), [(900_000, 900.0), (1_800_000, 1800.0)])
def test_the_histograms_reach_the_transaction_timeout(timeout_ms: int, top: float) -> None:
    """A 10-minute produce under a 15-minute (or longer) timeout lands in a bucket below +Inf, not above the top."""
    exporter = PrometheusExporter(_spec(free_port(), timeout_ms)).start()
    try:
        exporter.apply(batch_updates(BatchReport(
            pipeline="orders", batch_id=0, writers="driver", action="produce", rows_out=1, rows_dlq=0,
            produce_ms=600_000, commit_ms=10, finished_at=1_800_000_000.0, transactions=TransactionCounts(1, 1, 0))))
        assert exporter.url is not None
        buckets = {labels["le"]: value for labels, value in _scrape(exporter.url)["eos_produce_seconds_bucket"]}
    finally:
        exporter.stop()
    assert buckets["300.0"] == 0
    assert buckets["600.0"] == 1
    assert max(float(le) for le in buckets if le != "+Inf") == top
