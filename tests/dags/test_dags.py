"""The DAGs (one per pipeline, the health check, the recovery): parse cleanly and fast, and run with dag.test()
against the real broker and Spark."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from airflow_provider_eos.core.dag_ids import pipeline_dag_id
from tests.support.dag_runner import parse_dags, run_dag
from tests.support.faults import arming_env
from tests.support.kafka import end_offsets
from tests.support.pipeline import PipelineHarness, assert_exactly_once, json_events, output_ids

pytestmark = [pytest.mark.airflow]

SPARK_LOCAL = {"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"})}
EXAMPLE_SPEC = Path(__file__).parents[2] / "dags" / "pipelines" / "orders_enrich.yaml"
#: The example pipeline's DAG (dags/pipelines/orders_enrich.yaml).
EXAMPLE_DAG = pipeline_dag_id("orders_enrich")


@pytest.mark.smoke
def test_dagbag_has_the_dags_no_import_errors_and_parses_fast(airflow_home, tmp_path):
    parsed = parse_dags(tmp_path / "parse.json")
    assert parsed["import_errors"] == {}
    assert {EXAMPLE_DAG, "eos_health_check", "eos_manual_recovery"} <= set(parsed["dag_ids"])
    assert parsed["heavy_modules"] == [], "DAG files must not import Spark or dataframe libraries at parse time"
    assert parsed["seconds"] < 30
    assert parsed["params"]["eos_manual_recovery"]["dry_run"] is True
    # Every abort is a dry run unless told: the pipeline's two aborts act, the form's follow its switch.
    assert parsed["dry_runs"][EXAMPLE_DAG] == {"abort_lingering": False, "recover_abort": False}
    assert set(parsed["dry_runs"]["eos_manual_recovery"]) == {"abort", "rewind", "align"}
    assert set(parsed["dry_runs"]["eos_manual_recovery"].values()) == {"{{ params.dry_run != false }}"}


def test_each_role_authenticates_with_its_own_kafka_connection(airflow_home, tmp_path):
    roles = {"EOS_KAFKA_CONN_ID_JOB": "kafka_job", "EOS_KAFKA_CONN_ID_RECOVERY": "kafka_recovery",
             "EOS_KAFKA_CONN_ID_HEALTH": "kafka_health"}
    conn_ids = parse_dags(tmp_path / "roles.json", env=roles)["kafka_conn_ids"]
    assert conn_ids[EXAMPLE_DAG] == {
        "preflight": "kafka_job", "submit": "kafka_job", "submit_stream": "kafka_job",
        "abort_lingering": "kafka_recovery", "verify": "kafka_recovery", "recover_abort": "kafka_recovery",
        "recover_verify": "kafka_recovery", "supervise": "kafka_health", "watch_stream": "kafka_health",
    }
    assert set(conn_ids["eos_manual_recovery"].values()) == {"kafka_recovery"}
    assert len(conn_ids["eos_manual_recovery"]) == 4
    # One connection for every role, and none at all (the spec's own settings).
    shared = parse_dags(tmp_path / "shared.json", env={"EOS_KAFKA_CONN_ID": "kafka_all"})["kafka_conn_ids"]
    assert set(shared[EXAMPLE_DAG].values()) == {"kafka_all"}
    assert set(parse_dags(tmp_path / "none.json")["kafka_conn_ids"][EXAMPLE_DAG].values()) == {None}


def _payments_spec(folder: Path) -> Path:
    """A second pipeline beside the example: its own name, topics, group, prefix and checkpoint."""
    text = EXAMPLE_SPEC.read_text().replace("orders", "payments").replace("name: payments_enrich", "name: payments-2")
    target = folder / "payments.yaml"
    target.write_text(text)
    return target


def test_each_pipeline_has_a_dag_of_its_own_one_run_at_a_time(airflow_home, tmp_path):
    """Two specs, two DAGs (``eos_pipeline__<name>``): a pipeline's run never waits behind another
    pipeline's (a stream runs for days), while each DAG still runs one run of its pipeline at a time."""
    specs = tmp_path / "specs"
    specs.mkdir()
    files = {"orders_enrich": Path(shutil.copy(EXAMPLE_SPEC, specs)), "payments-2": _payments_spec(specs)}
    parsed = parse_dags(tmp_path / "parse.json", env={"EOS_SPECS_DIR": str(specs)})

    assert parsed["import_errors"] == {}
    pipeline_dags = {d for d in parsed["dag_ids"] if d.startswith("eos_pipeline")}
    assert pipeline_dags == {"eos_pipeline__orders_enrich", "eos_pipeline__payments-2"}, parsed["dag_ids"]
    for name, spec_file in files.items():
        dag_id = pipeline_dag_id(name)
        assert parsed["max_active_runs"][dag_id] == 1
        assert name not in parsed["pipeline_enums"].get(dag_id, []), "no pipeline to pick: the DAG is the pipeline's"
        tasks = parsed["spec_paths"][dag_id]
        assert set(tasks) >= {"preflight", "abort_lingering", "verify", "submit", "submit_stream", "supervise",
                              "watch_stream", "stop_stream", "confirm_driver_gone", "recover_abort", "recover_verify"}
        assert set(tasks.values()) == {str(spec_file.resolve())}, tasks
        assert name in parsed["tags"][dag_id] and "eos" in parsed["tags"][dag_id]
        assert f"the pipeline `{name}`" in parsed["docs"][dag_id]
        assert parsed["fileloc"][dag_id].endswith("eos_pipeline.py")
    # The health check and the recovery form stay one DAG each, with every pipeline to pick.
    assert parsed["pipeline_enums"]["eos_manual_recovery"] == ["orders_enrich", "payments-2"]


def test_invalid_spec_is_an_import_error_naming_the_field(airflow_home, tmp_path):
    """An invalid spec is skipped and named (an import error of its own, the DAGs' docs); the healthy
    pipelines keep their DAGs, form entries and recovery; no secret reaches the parse output or log."""
    specs = tmp_path / "specs"
    specs.mkdir()
    healthy = (Path(__file__).parents[2] / "dags" / "pipelines" / "orders_enrich.yaml").read_text()
    (specs / "orders_enrich.yaml").write_text(healthy)
    (specs / "broken.yaml").write_text("name: broken\nkafka: {}\n")
    (specs / "leaky.yaml").write_text("name: leaky\nkafka:\n  sasl.password: hunter2-secret: x\n")
    parsed = parse_dags(tmp_path / "parse.json", env={"EOS_SPECS_DIR": str(specs)})

    assert {EXAMPLE_DAG, "eos_health_check", "eos_manual_recovery"} <= set(parsed["dag_ids"])
    # The broken files have no DAG of their own; the healthy pipeline keeps its DAG.
    assert [d for d in parsed["dag_ids"] if d.startswith("eos_pipeline")] == [EXAMPLE_DAG], parsed["dag_ids"]
    assert parsed["pipeline_enums"]["eos_manual_recovery"] == ["orders_enrich"], parsed["pipeline_enums"]
    for dag_id in (EXAMPLE_DAG, "eos_manual_recovery"):
        assert "`broken.yaml`" in parsed["docs"][dag_id] and "`leaky.yaml`" in parsed["docs"][dag_id]
    assert "**Pipelines checked:** `orders_enrich`" in parsed["docs"]["eos_health_check"]
    assert "`broken.yaml`" in parsed["docs"]["eos_health_check"]
    (path, error), = parsed["import_errors"].items()
    assert path.endswith("eos_spec_errors.py"), parsed["import_errors"]
    assert "broken.yaml" in error and "bootstrap.servers" in error and "leaky.yaml" in error, error
    assert "line 3, column" in error, error
    assert "hunter2-secret" not in json.dumps(parsed), "a secret reached the parse output"


def _specs_env(harness: PipelineHarness, spark: dict[str, str] = SPARK_LOCAL) -> dict[str, str]:
    return {"EOS_SPECS_DIR": str(harness.spec_file.parent), **spark}


# CI: test_secured_pipeline runs the same crash, recovery and resume on the standalone cluster (secured,
# three principals); this unsecured one runs in `make test-long`.
@pytest.mark.long
@pytest.mark.integration
@pytest.mark.spark
def test_eos_pipeline_runs_then_recovers_from_a_crash_and_resumes(airflow_home, bootstrap, tmp_path,
                                                                   spark_standalone):
    """On the two-worker standalone cluster (client deploy mode, the `spark` connection's host): a
    task SIGKILLs the driver mid-batch with the partitions' transactions open; the DAG's recovery
    branch aborts and verifies, the run fails; the next run resumes exactly once."""
    (tmp_path / "pipeline").mkdir()
    harness = PipelineHarness(bootstrap, tmp_path / "pipeline", max_offsets_per_trigger=250)
    harness.with_overrides(spark_conf={**harness.spec.spark_conf, "spark.executor.memory": "512m",
                                       "spark.cores.max": "2"})
    records, valid_ids, malformed = json_events(1500, malformed_every=47)
    harness.produce_input(records)
    env = _specs_env(harness, {"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(
        {"conn_type": "spark", "host": spark_standalone.master_url})})
    dag_id, conf = pipeline_dag_id(harness.spec.name), {}

    crashed = run_dag(dag_id, conf, tmp_path / "run1.json", env={
        **env, **arming_env("after_produce@2")})
    assert crashed.state == "failed", crashed.states
    assert crashed.states["submit"] == "failed"
    assert crashed.states["recover_abort"] == "success" and crashed.states["recover_verify"] == "success"
    assert crashed.states["pipeline_failed"] == "failed"
    aborted = crashed.xcoms["recover_abort"]
    # json_enrich runs on the executor writers (auto): the crash left the partitions' transactions open.
    partition_ids = {harness.spec.partition_transactional_id(harness.input_topic, p) for p in range(harness.partitions)}
    aborted_ids = [r["transactional_id"] for r in aborted["rows"]]
    assert aborted_ids and set(aborted_ids) <= partition_ids, aborted_ids
    lso = end_offsets(bootstrap, harness.output_topic, harness.partitions, committed=True)
    assert lso == end_offsets(bootstrap, harness.output_topic, harness.partitions, committed=False)

    resumed = run_dag(dag_id, conf, tmp_path / "run2.json", env=env)
    assert resumed.state == "success", resumed.states
    assert resumed.states["submit"] == "success" and resumed.states["supervise"] == "success"
    assert resumed.states["recover_abort"] == "skipped" and resumed.states["pipeline_failed"] == "skipped"
    assert resumed.xcoms["verify"]["overall"] in {"IN_SYNC", "KAFKA_AHEAD_SAFE"}
    assert resumed.xcoms["preflight"]["ok"] is True
    assert_exactly_once(harness, valid_ids, malformed)
    assert max(output_ids(harness.output_values("read_uncommitted")).values()) == 2, "the crash really hit"


# CI: test_manual_recovery_ui (verify, refusal, dry-run plan, align, abort, the health card) and
# test_recovery_operators (rewind). This one, on a checkpoint a real Spark run wrote, runs in `make test-long`.
@pytest.mark.long
@pytest.mark.integration
@pytest.mark.spark
def test_health_check_and_manual_recovery(airflow_home, bootstrap, tmp_path):
    (tmp_path / "pipeline").mkdir()
    harness = PipelineHarness(bootstrap, tmp_path / "pipeline")
    records, _, _ = json_events(400)
    harness.produce_input(records)
    assert harness.run().returncode == 0
    env = _specs_env(harness)

    health = run_dag("eos_health_check", {}, tmp_path / "health.json", env=env)
    assert health.state == "success", health.log[-6000:]
    (report,) = [value for key, value in health.xcoms.items() if key.startswith("health_report[")]
    assert report["status"] in {"HEALTHY", "DEGRADED"}

    name = harness.spec.name
    verified = run_dag("eos_manual_recovery", {"pipeline": name, "action": "verify"}, tmp_path / "v.json", env=env)
    assert verified.state == "success" and verified.xcoms["verify"]["overall"] == "IN_SYNC"
    assert verified.states["rewind"] == "skipped"

    last = harness.checkpoint().latest_committed_batch()
    unconfirmed = run_dag("eos_manual_recovery", {"pipeline": name, "action": "rewind", "dry_run": False,
                                                  "target_batch": last - 1}, tmp_path / "r1.json", env=env)
    # Refused, not failed: the refused task states why, every action is skipped, nothing is an incident.
    assert unconfirmed.state == "success" and unconfirmed.states["refused"] == "success", unconfirmed.states
    assert unconfirmed.states["rewind"] == "skipped"
    assert f"rewind {name}" in unconfirmed.task_log("refused") and f"rewind {name}" in unconfirmed.xcoms["refused"]
    assert harness.checkpoint().latest_committed_batch() == last

    dry = run_dag("eos_manual_recovery", {"pipeline": name, "action": "rewind", "target_batch": last - 1},
                  tmp_path / "r2.json", env=env)
    assert dry.state == "success", dry.states
    assert harness.checkpoint().latest_committed_batch() == last, "dry run changed the checkpoint"

    align = run_dag("eos_manual_recovery", {"pipeline": name, "action": "align"}, tmp_path / "a.json", env=env)
    assert align.state == "success", align.states


def test_manual_recovery_form_validation(airflow_home, monkeypatch):
    monkeypatch.setenv("EOS_SPECS_DIR", str(Path(__file__).resolve().parents[2] / "dags" / "pipelines"))
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "eos_manual_recovery", Path(__file__).resolve().parents[2] / "dags" / "eos_manual_recovery.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # The DAG file is a caller of the factory; the form's check is the factory module's.
    from airflow_provider_eos.dags.manual_recovery import validate_request as validate
    from airflow_provider_eos.spec_registry import discover_specs

    specs = discover_specs(Path(__file__).resolve().parents[2] / "dags" / "pipelines")
    assert module.dag.params["pipeline"] == "orders_enrich"

    def validate_request(params):
        return validate(params, specs)

    ok = {"pipeline": "orders_enrich", "action": "rewind", "dry_run": True, "target_batch": 3}
    assert validate_request(ok) == "rewind"
    assert validate_request({**ok, "dry_run": False, "confirmation": "rewind orders_enrich"}) == "rewind"
    # An invalid request goes to the refused task, which states the reason (decide() gives it).
    from airflow_provider_eos.core.recovery_request import decide

    for bad, message in (
        ({**ok, "dry_run": False}, "confirmation must read exactly 'rewind orders_enrich'"),
        ({**ok, "dry_run": False, "confirmation": "rewind other"}, "got 'rewind other'"),
        ({**ok, "pipeline": "nope"}, "pipeline 'nope' is unknown"),
        ({**ok, "action": "delete"}, "action 'delete' is unknown"),
        ({**ok, "target_batch": -5}, "target_batch is -5"),
        ({**ok, "action": "align", "target_batch": 2}, "only applies to rewind"),
    ):
        assert validate_request(bad) == "refused"
        assert message in str(decide(bad, specs).reason)
