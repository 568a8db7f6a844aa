"""A pipeline's DAG on the secured devstack (SASL/SCRAM over TLS, the StandardAuthorizer), three principals.

The job, recovery and health principals each hold only their own role's ACLs (``eos acls``) and
reach Kafka through their own Airflow ``kafka`` connection, stored in the metadata DB. On both
writers: a crash mid-batch, the recovery branch aborting the dead job's transactions as the
recovery principal, a resume that is exactly once, the health check as the health principal.
The job runs on the two-worker standalone cluster (client deploy mode), so real executor JVMs and
their Python workers are among the processes sampled. While it runs, every password is looked for
where it must never be: command lines and environments, files (the operator's private spec copies
while they exist, and nothing left of them after), logs, XCom, rendered fields, the event log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from airflow_provider_eos.core.dag_ids import pipeline_dag_id
from airflow_provider_eos.devstack.security import add_scram_user
from tests.support.dag_runner import run_dag, run_dags, store_connections
from tests.support.faults import arming_env
from tests.support.kafka import end_offsets
from tests.support.pipeline import PipelineHarness, assert_exactly_once, json_events, output_ids
from tests.support.secret_leaks import ProcessSampler, assert_absent, leaks_in_files

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.spark]

ROLES = ("job", "recovery", "health")
CONNECTION_SETTINGS = ("bootstrap.servers", "security.protocol", "sasl.mechanism", "ssl.ca.location")


def _principal_settings(admin: dict, user: str, password: str) -> dict:
    """A principal's librdkafka settings: the admin's connection settings with its own SCRAM login."""
    return {**{k: admin[k] for k in CONNECTION_SETTINGS if k in admin}, "sasl.username": user,
            "sasl.password": password}


def _grant(spec_file: Path, principals: dict[str, str], admin_config: Path) -> str:
    """``eos acls --apply`` of each role for its principal (``{role: principal}``); their output.

    The three run side by side: each is a CLI start and a few admin requests, and in a row they
    took about 10 s of the test's set-up.
    """
    eos = Path(sys.executable).with_name("eos")
    started = {role: subprocess.Popen([str(eos), "acls", "--spec", str(spec_file), "--principal", principal,
                                       "--role", role, "--apply", "--admin-config", str(admin_config)],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for role, principal in principals.items()}
    output = ""
    for role, process in started.items():
        out, _ = process.communicate(timeout=120)
        assert process.returncode == 0, f"eos acls --role {role}: {out}"
        output += out
    return output


# CI runs the default executor writer, the JVM's (the partitions' own transactional ids under the job's
# prefix ACL; its client settings travel to the driver JVM by py4j and to the tasks in their closure); the
# driver writer's one id under the same ACL and the Python executor writer are long proofs (`make test-long`).
@pytest.mark.parametrize(("writers", "executor_writer"), [
    pytest.param("driver", "python", marks=pytest.mark.long),
    pytest.param("executors", "python", marks=pytest.mark.long), ("executors", "jvm")])
def test_three_principals_crash_recover_resume_and_no_password_leaks(
    airflow_home, secured_kafka, secured_admin_settings, spark_standalone, tmp_path, writers, executor_writer
):
    admin = dict(secured_admin_settings)
    users = {role: f"eos-{role}-{uuid.uuid4().hex[:6]}" for role in ROLES}
    passwords = {role: add_scram_user(admin, user) for role, user in users.items()}
    secrets = [*passwords.values(), admin["sasl.password"]]

    (tmp_path / "pipeline").mkdir()
    spark_local = tmp_path / "spark-local"
    event_log = tmp_path / "spark-events"
    spark_local.mkdir()
    event_log.mkdir()
    # The spec carries no credentials: each task's connection does.
    harness = PipelineHarness(admin, tmp_path / "pipeline", writers=writers, executor_writer=executor_writer,
                              max_offsets_per_trigger=250,
                              spec_kafka={"bootstrap.servers": admin["bootstrap.servers"]})
    # A secret Spark setting too (as an S3 checkpoint's key would be): it must stay off the command line.
    spark_secret = f"s3-{uuid.uuid4().hex}"
    secrets.append(spark_secret)
    harness.with_overrides(spark_conf={**harness.spec.spark_conf, "spark.eventLog.enabled": "true",
                                       "spark.eventLog.dir": event_log.as_uri(), "spark.local.dir": str(spark_local),
                                       "spark.executor.memory": "512m", "spark.cores.max": "2",
                                       "spark.hadoop.fs.s3a.secret.key": spark_secret},
                           # The killed driver's lease says ALIVE until ttl + 10 s after its last renewal, and
                           # confirm_driver_gone waits that out before recovery may act: 30 s (the default)
                           # made it the run's longest wait (35 s). 10 s, as the chaos tests' zombie lease.
                           driver_lease_ttl_s=10)
    records, valid_ids, malformed = json_events(1200, malformed_every=47)
    harness.produce_input(records)

    admin_config = Path(secured_kafka.client_config)
    granted = _grant(harness.spec_file, {role: f"User:{users[role]}" for role in ROLES}, admin_config)
    task_tmp = tmp_path / "task-tmp"
    task_tmp.mkdir()
    lineage_file = tmp_path / "openlineage.jsonl"
    connections = {f"kafka_{role}": {"conn_type": "kafka", "extra": _principal_settings(admin, users[role],
                                                                                         passwords[role])}
                   for role in ROLES}
    env = {
        "EOS_SPECS_DIR": str(harness.spec_file.parent),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": spark_standalone.master_url}),
        # The operator's private spec copy (the job principal's password in it) goes where the sampler looks.
        "TMPDIR": str(task_tmp),
        # Connection extras are stored encrypted, as a deployment keeps them.
        "AIRFLOW__CORE__FERNET_KEY": Fernet.generate_key().decode(),
        **{f"EOS_KAFKA_CONN_ID_{role.upper()}": f"kafka_{role}" for role in ROLES},
        **store_connections(connections, tmp_path / "connections.json"),
        # Lineage to OpenLineage's file transport (the openlineage provider's listener, as a deployment has it).
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": str(lineage_file),
                                                        "append": True}),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "eos-tests",
    }
    dag_id, conf = pipeline_dag_id(harness.spec.name), {}

    with ProcessSampler(secrets, watched=[task_tmp]) as sampler:
        crashed = run_dag(dag_id, conf, tmp_path / "run1.json", env={
            **env, **arming_env("after_produce@2")})
        # The resume, the health check and the manual verify in one child (run_dags): the same environment,
        # nothing done between them, and each child costs ~18 s of Airflow start before its first task ends.
        # The health check's three samples 1 s apart, not 10 ([eos] health_check_interval_s): what it proves
        # is the health principal's reads and a report without secrets, not a trend over 20 s.
        resumed, health, verified = run_dags([
            (dag_id, conf, tmp_path / "run2.json"), ("eos_health_check", {}, tmp_path / "health.json"),
            ("eos_manual_recovery", {"pipeline": harness.spec.name, "action": "verify"}, tmp_path / "verify.json"),
        ], env={**env, "EOS_HEALTH_CHECK_INTERVAL_S": "1"})

    # The crash, recovered as the recovery principal.
    assert crashed.state == "failed", crashed.states
    assert crashed.states["preflight"] == "success", crashed.task_log("preflight")[-4000:]
    assert crashed.states["submit"] == "failed", crashed.states
    assert crashed.states["recover_abort"] == "success" and crashed.states["recover_verify"] == "success"
    assert crashed.states["pipeline_failed"] == "failed", crashed.states
    aborted = [row["transactional_id"] for row in crashed.xcoms["recover_abort"]["rows"]]
    if writers == "driver":
        assert aborted == [harness.spec.transactional_id(0)], aborted
    else:
        partition_ids = {harness.spec.partition_transactional_id(harness.input_topic, p)
                         for p in range(harness.partitions)}
        assert aborted and set(aborted) <= partition_ids, aborted
    lso = end_offsets(admin, harness.output_topic, harness.partitions, committed=True)
    assert lso == end_offsets(admin, harness.output_topic, harness.partitions, committed=False)

    # The resume, exactly once; health and the manual verify as their own principals.
    assert resumed.state == "success", resumed.states
    assert resumed.states["submit"] == "success" and resumed.states["supervise"] == "success"
    assert resumed.states["recover_abort"] == "skipped" and resumed.states["pipeline_failed"] == "skipped"
    assert resumed.xcoms["verify"]["overall"] in {"IN_SYNC", "KAFKA_AHEAD_SAFE"}
    assert resumed.xcoms["preflight"]["ok"] is True
    assert_exactly_once(harness, valid_ids, malformed)
    assert max(output_ids(harness.output_values("read_uncommitted")).values()) == 2, "the crash really hit"
    assert health.state == "success", health.log[-6000:]
    (report,) = [value for key, value in health.xcoms.items() if key.startswith("health_report[")]
    assert report["status"] in {"HEALTHY", "DEGRADED"}, report
    assert verified.state == "success" and verified.xcoms["verify"]["overall"] == "IN_SYNC", verified.states

    # Lineage: the resumed run's asset event names this pipeline's output topics (the alias's).
    server = admin["bootstrap.servers"].split(",")[0]
    written = {f"kafka://{server}/{topic}" for topic in (harness.output_topic, harness.dlq_topic)}
    assert {e["uri"] for e in resumed.asset_events if e["task_id"] == "submit"} == written, resumed.asset_events
    assert all(e["extra"].get("pipeline") == harness.spec.name for e in resumed.asset_events), resumed.asset_events
    assert crashed.asset_events == [], "a failed submit announces no new output"
    # OpenLineage sees topic -> pipeline -> topic (the submit's facets, read from the spec file alone: no
    # connection lookup), and its events of every task hold no secret.
    lineage = lineage_file.read_text()
    assert f"{dag_id}.preflight" in lineage, lineage[:2000]
    assert not [secret for secret in secrets if secret in lineage], "a secret in the lineage events"
    namespace = f"kafka://{server}"
    events = [json.loads(line) for line in lineage.splitlines()]
    submits = [e for e in events if e["job"]["name"] == f"{dag_id}.submit"]
    assert {e["eventType"] for e in submits} >= {"START", "COMPLETE"}, [(e["eventType"], e["job"]["name"])
                                                                         for e in events]
    for event in submits:
        assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [(namespace, harness.input_topic)], event
        assert [(d["namespace"], d["name"]) for d in event["outputs"]] == [
            (namespace, harness.output_topic), (namespace, harness.dlq_topic)], event

    # No password anywhere it must not be.
    # spark-submit's shell script execs the JVM at once: what runs is the driver JVM and the Python
    # driver here, the executor JVMs and their Python workers under the cluster's workers; the JVM
    # executor writer's tasks need no Python worker (json_enrich has no Python UDF).
    seen = {"driver jvm", "python driver", "executor", *(["python worker"] if executor_writer == "python" else [])}
    assert sampler.samples > 20 and seen <= sampler.processes_seen, (sampler.samples, sampler.processes_seen)
    assert sampler.leaks == [], sampler.leaks
    # The submit tasks' private spec copies were seen while they ran (private), and are gone.
    assert {path.name for path in sampler.private_copies_seen} >= {"spec.yaml"}, sampler.private_copies_seen
    assert not any(task_tmp.glob("eos-submit-*")), sorted(task_tmp.rglob("*"))
    runs = {"run1": crashed, "run2": resumed, "health": health, "verify": verified}
    events = "".join(path.read_text(errors="replace") for path in event_log.rglob("*") if path.is_file())
    assert events, "the Spark event log is empty"
    task_logs = "".join(path.read_text(errors="replace") for path in (airflow_home / "logs").rglob("*")
                        if path.is_file()) if (airflow_home / "logs").exists() else ""
    for secret in secrets:
        assert_absent(secret, acls_output=granted, spark_event_log=events, airflow_log_files=task_logs,
                      **{f"{name} task logs": run.log for name, run in runs.items()},
                      **{f"{name} xcom": "".join(run.stored_xcoms) for name, run in runs.items()},
                      **{f"{name} rendered fields": "".join(run.rendered_fields) for name, run in runs.items()})
        # The cluster's folder holds each executor's work folder (fetched files, stdout and stderr).
        scanned = [tmp_path, airflow_home, Path(secured_kafka.state_dir), Path(spark_standalone.info.state_dir)]
        problems = leaks_in_files(secret, scanned,
                                  allowed=[tmp_path / "connections.json", harness.spec_file,
                                           Path(secured_kafka.state_dir)])
        assert problems == [], problems
    assert not os.environ.get("EOS_TEST_CONNECTIONS_FILE")
