"""The shipped alert rules and dashboard use only the catalog's metrics, and Prometheus accepts the rules."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import yaml

from airflow_provider_eos.core.metrics.catalog import JOB_METRICS
from tests.support.prometheus import DASHBOARD, RULES, used_metrics

#: promtool's unit-test cases for the rules (``promtool test rules``), without ``rule_files``.
RULES_CASES = Path(__file__).with_name("prometheus_rules_test.yml")


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


def test_the_rules_fire_on_series_as_the_driver_creates_them(tmp_path: Path) -> None:
    """promtool evaluates the shipped rules over the driver's series, including ones born above 0.

    A failure's ``kind`` and the ``skip_replay`` action are first seen at 1 (the counter series is created
    by its first increment), which ``increase()`` does not count: the rules must fire anyway.
    """
    promtool = shutil.which("promtool")
    assert promtool, "promtool comes with Debian's `prometheus` package: run `make system`"
    cases = yaml.safe_load(RULES_CASES.read_text())
    cases["rule_files"] = [str(RULES)]
    test_file = tmp_path / "rules_test.yml"
    test_file.write_text(yaml.safe_dump(cases))
    done = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
