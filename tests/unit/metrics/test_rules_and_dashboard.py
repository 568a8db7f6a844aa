"""The shipped alert rules and dashboard use only the catalog's metrics, and Prometheus accepts the rules."""

from __future__ import annotations

import json
import shutil
import subprocess

from airflow_provider_eos.core.metrics.catalog import JOB_METRICS
from tests.support.prometheus import DASHBOARD, RULES, used_metrics


def test_every_metric_the_rules_and_the_dashboard_use_is_in_the_catalog() -> None:
    catalog = {series for metric in JOB_METRICS for series in metric.series}
    used = used_metrics()
    assert used - catalog == set(), used - catalog
    # The dashboard shows every metric of the catalog at least once.
    shown = {name.removesuffix("_bucket") for name in used}
    assert {metric.name for metric in JOB_METRICS} - shown == set()


def test_the_dashboard_filters_every_query_by_its_pipeline_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            assert 'pipeline=~"$pipeline"' in target["expr"], (panel["title"], target["expr"])


def test_promtool_accepts_the_rules() -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool comes with Debian's `prometheus` package: run `make system`"
    done = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 5 rules found" in done.stdout
