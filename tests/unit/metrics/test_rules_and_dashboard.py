"""The shipped alert rules and dashboard use only the catalog's metrics, and Prometheus accepts the rules."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from airflow_provider_eos.core.metrics.catalog import JOB_METRICS
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.spark.metrics_exporter import PrometheusExporter
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


def test_the_pipeline_variable_lists_a_pipeline_from_its_driver_start() -> None:
    """A pipeline whose first batch fails before the sink chose its writer is still in the variable's list.

    The variable's metric must be one the exporter serves from its construction, before any batch.
    """
    variable = next(v for v in json.loads(DASHBOARD.read_text())["templating"]["list"] if v["name"] == "pipeline")
    match = re.fullmatch(r"label_values\((eos_[a-z_]+), pipeline\)", variable["definition"])
    assert match, variable["definition"]
    assert variable["query"]["query"] == variable["definition"]
    spec = PipelineSpec.from_dict(dict(
        name="orders", kafka={"bootstrap.servers": "127.0.0.1:9"}, input_topics=["in"], output_topic="out",
        group_id="g", transactional_id_prefix="t", checkpoint_location="/tmp/c", metrics={"prometheus_port": 9464}))
    served = {(sample.name, sample.labels.get("pipeline"))
              for family in PrometheusExporter(spec).registry.collect() for sample in family.samples}
    assert (match.group(1), "orders") in served, sorted(served)


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


def _promtool_test(tmp_path: Path, cases: dict) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool comes with Debian's `prometheus` package: run `make system`"
    test_file = tmp_path / "promtool_test.yml"
    test_file.write_text(yaml.safe_dump(cases))
    done = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_batches_panel_shows_a_replay_a_failure_and_a_fence_whose_series_are_born_at_1(tmp_path: Path) -> None:
    """Each query of the panel, evaluated by promtool: a series first seen at 1 is counted, not shown as 0."""
    panel = next(p for p in json.loads(DASHBOARD.read_text())["panels"] if p["title"].startswith("Batches, replays"))
    exprs = {target["refId"]: target["expr"].replace("$pipeline", "p") for target in panel["targets"]}
    # A restarted driver replays at 1m (and then produces), fails at 2m and exits 45 s later.
    series = {
        'eos_batches_total{pipeline="p",writers="driver",action="skip_replay"}': "_x4 1x8 stale",
        'eos_batch_failures_total{pipeline="p",kind="TransactionTimedOutError"}': "_x8 1x2 stale",
        'eos_producer_fences_total{pipeline="p",writers="driver"}': "_x4 1x20",
        'eos_write_task_retries_total{pipeline="p"}': "_x4 0x20",
    }
    expected = {
        "A": [{"labels": '{pipeline="p",action="skip_replay"}', "value": 1}],
        "B": [{"labels": '{pipeline="p",kind="TransactionTimedOutError"}', "value": 1}],
        "C": [{"labels": '{pipeline="p"}', "value": 1}],
        "D": [{"labels": '{pipeline="p"}', "value": 0}],
    }
    assert set(exprs) == set(expected), exprs
    _promtool_test(tmp_path, {"evaluation_interval": "15s", "tests": [{
        "interval": "15s",
        "input_series": [{"series": name, "values": values} for name, values in series.items()],
        "promql_expr_test": [{"expr": exprs[ref], "eval_time": "2m30s", "exp_samples": samples}
                             for ref, samples in expected.items()],
    }]})
