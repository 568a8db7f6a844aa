"""The health check's and recovery's metrics for Airflow's StatsD / OpenTelemetry (core/metrics/task_metrics.py)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from airflow_provider_eos.airflow_stats import emit
from airflow_provider_eos.core.health.report import HealthReport
from airflow_provider_eos.core.metrics.catalog import TASK_METRICS, MetricKind
from airflow_provider_eos.core.metrics.task_metrics import (
    PART_MAX_LENGTH,
    abort_metrics,
    health_metrics,
    name_part,
    verification_metrics,
)
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.transactions import AbortReport, Outcome, SafetyCheck, plan_abort
from airflow_provider_eos.core.verification import Verdict, VerificationReport
from airflow_provider_eos.devstack.broker_config import free_port
from tests.support.health_samples import rich_sample, run
from tests.support.statsd import StatsdListener
from tests.unit.transactions.builders import NOW, txn


def test_a_health_report_gives_status_verdict_lag_per_partition_commit_age_and_transactions() -> None:
    report = run([rich_sample(0), rich_sample(30)])
    metrics = {m.name: (m.kind, m.value) for m in health_metrics(report)}
    assert metrics["eos.health.orders.status"] == (MetricKind.GAUGE, report.status.severity)
    assert metrics["eos.health.orders.verdict"] == (MetricKind.GAUGE, Verdict.KAFKA_BEHIND.severity)
    assert metrics["eos.health.orders.lag"] == (MetricKind.GAUGE, report.total_lag)
    per_partition = {name: value for name, (_, value) in metrics.items() if name.endswith(".lag") and
                     name.count(".") == 5}
    assert per_partition == {f"eos.health.orders.{row.tp.topic}.{row.tp.partition}.lag": row.lag
                             for row in report.partitions}
    assert sum(per_partition.values()) == report.total_lag
    assert metrics["eos.health.orders.commit_age_seconds"] == (MetricKind.GAUGE, report.commit_age_ms / 1000)
    assert metrics["eos.health.orders.open_transactions"][1] == len(report.transactions)
    assert metrics["eos.health.orders.lingering_transactions"][1] == sum(t.lingering for t in report.transactions)


def test_a_topic_with_dots_keeps_one_statsd_level() -> None:
    report = run([rich_sample(0)])
    dotted = report.model_copy(update={"partitions": tuple(
        type(row).model_validate({**row.model_dump(), "topic": "eu.orders"}) for row in report.partitions)})
    names = [m.name for m in health_metrics(dotted) if m.name.endswith(".lag") and "eu" in m.name]
    assert names and all(name.startswith("eos.health.orders.eu_orders.") for name in names), names


def _with_names(report: HealthReport, pipeline: str, topic: str) -> HealthReport:
    """``report`` of pipeline ``pipeline`` whose input partitions are all of ``topic``."""
    return report.model_copy(update={"pipeline": pipeline, "partitions": tuple(
        type(row).model_validate({**row.model_dump(), "topic": topic, "partition": i})
        for i, row in enumerate(report.partitions))})


@pytest.fixture
def airflow_statsd(monkeypatch: pytest.MonkeyPatch) -> StatsdListener:
    """Airflow's own ``Stats`` sending to a StatsD listener, as ``[metrics] statsd_on`` configures it."""
    import statsd
    from airflow.sdk._shared.observability.metrics import stats
    from airflow.sdk._shared.observability.metrics.statsd_logger import get_statsd_logger

    port = free_port()
    for name in ("_factory", "_backend", "_export_legacy_names"):
        monkeypatch.setattr(stats, name, getattr(stats, name))  # restored after the test
    stats.initialize(factory=lambda: get_statsd_logger(stats_class=statsd.StatsClient, host="127.0.0.1", port=port,
                                                       prefix="airflow"), export_legacy_names=False)
    with StatsdListener("127.0.0.1", port) as listener:
        yield listener


def test_the_longest_names_a_spec_allows_reach_statsd_through_airflow(airflow_statsd: StatsdListener) -> None:
    # A 64-character pipeline (the spec's longest) reading a 249-character topic (Kafka's longest): the per-partition
    # lag's name would be 333 characters, which Airflow's name check drops (it logs and sends nothing).
    pipeline, topic = "p" * 64, "orders." + "t" * 242
    metrics = health_metrics(_with_names(run([rich_sample(0)]), pipeline, topic))
    assert max(len(m.name) for m in metrics) < 200, [m.name for m in metrics if len(m.name) >= 200]
    emit(metrics)
    expected = {f"airflow.{m.name}" for m in metrics}
    deadline = time.monotonic() + 10
    while not expected <= {line.name for line in airflow_statsd.lines} and time.monotonic() < deadline:
        time.sleep(0.05)
    assert expected - {line.name for line in airflow_statsd.lines} == set()
    per_partition = [m.name for m in metrics if m.name.count(".") == 5]
    assert len(per_partition) == 2 and all(n.startswith(f"eos.health.{pipeline}.orders_ttt") for n in per_partition)


def test_a_long_part_keeps_its_beginning_and_a_digest_of_the_whole_value() -> None:
    base = "orders." + "t" * 200
    one, other = name_part(base + "a"), name_part(base + "b")
    assert len(one) == len(other) == PART_MAX_LENGTH and one != other
    assert one.startswith("orders_ttt") and re.fullmatch(r"[A-Za-z0-9_-]+", one)
    assert name_part(base + "a") == one  # the same topic gets the same name at every emission
    assert name_part("t" * PART_MAX_LENGTH) == "t" * PART_MAX_LENGTH  # up to the limit, as it is


def test_distinct_pipeline_names_give_distinct_metric_names() -> None:
    # A pipeline's name is [A-Za-z0-9_-] (a `.` is refused at spec load), which the name keeps as it is: `a_b` and
    # `a-b` stay apart, and no name becomes another's after sanitising.
    fields = {"kafka": {"bootstrap.servers": "localhost:9092"}, "input_topics": ["in"], "output_topic": "out",
              "group_id": "g", "transactional_id_prefix": "t", "checkpoint_location": "/tmp/c"}
    with pytest.raises(ValidationError, match=r"name 'a\.b' is not identifier-like"):
        PipelineSpec(name="a.b", **fields)
    report = run([rich_sample(0)])
    names = {p: {m.name for m in health_metrics(report.model_copy(update={"pipeline": PipelineSpec(
        name=p, **fields).name}))} for p in ("a_b", "a-b", "A_b")}
    assert all(name_part(p) == p for p in names)
    assert not names["a_b"] & names["a-b"] and not names["a_b"] & names["A_b"]


def test_a_health_report_without_a_verdict_or_a_commit_emits_neither() -> None:
    report = run([rich_sample(0)]).model_copy(update={"verification": None, "last_commit_time_ms": None})
    names = {m.name for m in health_metrics(report)}
    assert "eos.health.orders.verdict" not in names and "eos.health.orders.commit_age_seconds" not in names


def test_the_recovery_verdict_is_its_severity() -> None:
    report = VerificationReport(query_id="q", last_committed=3, last_planned=3, rows=(), overall=Verdict.DIVERGED)
    (metric,) = verification_metrics("orders", report)
    assert (metric.name, metric.value) == ("eos.recovery.orders.verdict", 4)


def test_an_abort_counts_what_it_found_aborted_and_left() -> None:
    rows = plan_abort("pfx", [txn("pfx-0", age_ms=30_000), txn("pfx-1", age_ms=40_000), txn("other-9")], [],
                      now=NOW, transaction_timeout_ms=10_000)
    acting = [row for row in rows if row.action.acts]
    done = tuple(row.with_outcome(Outcome.ABORTED) if row.action.acts else row for row in rows)
    report = AbortReport(prefix="pfx", scanned_at=NOW, executed=True, safety=SafetyCheck(reasons=()), rows=done,
                         remaining=())
    metrics = {m.name: (m.kind, m.value) for m in abort_metrics("orders", report)}
    assert metrics == {
        "eos.recovery.orders.open_transactions": (MetricKind.GAUGE, len(rows)),
        "eos.recovery.orders.hanging_transactions": (MetricKind.GAUGE, 0),
        "eos.recovery.orders.transactions_aborted": (MetricKind.COUNTER, len(acting)),
        "eos.recovery.orders.remaining_transactions": (MetricKind.GAUGE, 0),
    }
    dry = report.model_copy(update={"executed": False, "rows": rows, "remaining": tuple(acting)})
    dry_metrics = {m.name: m.value for m in abort_metrics("orders", dry)}
    assert dry_metrics["eos.recovery.orders.transactions_aborted"] == 0
    assert dry_metrics["eos.recovery.orders.remaining_transactions"] == len(acting)


def _statsd_mappings() -> list[dict]:
    """The StatsD exporter's mappings docs/observability.md gives."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "observability.md").read_text()
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL) if b.startswith("mappings:")]
    return yaml.safe_load(block)["mappings"]


def _glob_match(pattern: str, name: str) -> tuple[str, ...] | None:
    # The StatsD exporter's glob: each `*` is one dot-separated component, and the whole name must match.
    found = re.fullmatch(re.escape(pattern).replace(r"\*", r"([^.]+)"), name)
    return found.groups() if found else None


def _filled(labels: dict[str, str], groups: tuple[str, ...]) -> dict[str, str]:
    """A mapping's labels with ``$1``, ``$2``... replaced by what the glob's stars matched."""
    return {key: re.sub(r"\$(\d)", lambda d: groups[int(d.group(1)) - 1], value) for key, value in labels.items()}


def test_the_documented_statsd_mapping_turns_every_task_metric_into_a_labelled_series() -> None:
    mappings = _statsd_mappings()
    for metric in TASK_METRICS:
        name = "airflow." + metric.name.format(pipeline="orders", topic="orders_v1", partition=3)
        # The exporter takes the first mapping that matches.
        mapping, groups = next(((m, g) for m in mappings if (g := _glob_match(m["match"], name)) is not None),
                               (None, None))
        assert mapping is not None, f"{name} matches no mapping: the StatsD exporter keeps it as one flat name"
        labels = _filled(mapping["labels"], groups)
        assert labels["pipeline"] == "orders", (name, labels)
        if "{partition}" in metric.name:
            assert (labels["topic"], labels["partition"]) == ("orders_v1", "3"), (name, labels)
