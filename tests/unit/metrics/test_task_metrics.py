"""The health check's and recovery's metrics for Airflow's StatsD / OpenTelemetry (core/metrics/task_metrics.py)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from airflow_provider_eos.core.metrics.catalog import TASK_METRICS, MetricKind
from airflow_provider_eos.core.metrics.task_metrics import abort_metrics, health_metrics, verification_metrics
from airflow_provider_eos.core.transactions import AbortReport, Outcome, SafetyCheck, plan_abort
from airflow_provider_eos.core.verification import Verdict, VerificationReport
from tests.support.health_samples import rich_sample, run
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
