"""The soak's subset: nine faults, each kind drawn once, on three brokers, through the JVM executor writer.

The schedule of ``python -m soak --seed 20261180 --faults 9 --records 24000 --writers executors
--executor-writer jvm`` (``make soak`` runs 100 and more through both writers): every kind drawn
once, on the session's three-broker cluster (replication 3, min.insync.replicas 2) and two-worker
Spark standalone cluster; the job streams in processing-time mode while its input arrives in slices,
one before each fault. The executor writers' tasks run on the JVM writer (``executor_writer: jvm``,
the product's default), whose executors phase starts no Python worker: the drawn Python worker kill
runs as a second executor JVM kill (:mod:`soak.schedule`), the JVM writer's task dying mid-transaction.
The faults: SIGKILL of the driver, of an executor JVM (twice); SIGKILL (then restart) of the broker
coordinating an open transaction, of the sink group's coordinator, of an output partition's leader;
a graceful broker restart; a broker SIGSTOPped longer than the request timeout; a batch slower than
``transaction.timeout.ms``. Whenever the job exits it is recovered as the DAG does (abort, verify)
and restarted. At the end: 0 duplicates, 0 lost, per-key order kept, dead letters exact, every
verdict IN_SYNC or KAFKA_AHEAD_SAFE, nothing left open.

A long proof (`make test-long`, and before every soak): at 200-340 s it was the suite's longest test,
and CI keeps each fault's own test (the crash points, the zombie and slow-transaction tests, a worker
killed on the standalone cluster, a transaction committing while a broker is down). One phase, not one
per writer: a phase costs a job start, a drain and its faults' windows. The driver writer's soak on
three brokers is `make soak`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.broker_state import BrokerInfo
from airflow_provider_eos.devstack.spark_cluster import SparkCluster
from soak.checks import exactly_once_holds
from soak.job import EXACTLY_ONCE
from soak.run import Settings, Stack, run_phase, summarize_checks
from soak.schedule import KINDS, build

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

#: This seed orders the nine so the job restarts least: slow_transaction first (the job starts armed
#: for it) and kill_driver last (the drain restarts it anyway).
SCHEDULE = build(20261180, records=24_000, faults=9, writers=("executors",), executor_writer="jvm")
#: Each phase's result (faults with their timings, runs, recoveries, drain) is kept here, pass or fail:
#: the subset's time has a heavy tail (a batch stuck behind a broker fault) worth reading afterwards.
ARTIFACTS = Path(os.environ.get("EOS_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "artifacts")) / "soak"


def test_the_subset_covers_every_kind() -> None:
    """Every kind drawn once; on the JVM writer the Python worker kill runs as an executor JVM kill."""
    assert {event.replaces or event.kind for event in SCHEDULE.events()} == set(KINDS)
    assert {event.kind for event in SCHEDULE.events()} == set(KINDS) - {"kill_python_worker"}
    assert [(e.kind, e.replaces) for e in SCHEDULE.events() if e.replaces] == [("kill_executor", "kill_python_worker")]
    assert [len(phase.events) for phase in SCHEDULE.phases] == [9]


@pytest.mark.long
def test_exactly_once_through_the_soak_subset(kafka_cluster: BrokerInfo, spark_standalone, tmp_path: Path) -> None:
    """The phase on the cluster shared by the module (its faults hit its own job only)."""
    stack = Stack(kafka=LocalKafka(kafka_cluster.state_dir), cluster=kafka_cluster,
                  spark=SparkCluster(spark_standalone.info.state_dir), master_url=spark_standalone.master_url)
    for phase in SCHEDULE.phases:
        settings = Settings(batch=1000, executor_writer=SCHEDULE.executor_writer)
        result = run_phase(phase, EXACTLY_ONCE, phase.writers, stack, settings, tmp_path / phase.writers)

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / f"subset-{phase.writers}.json").write_text(json.dumps(result, indent=1, default=str))
        checks = result["checks"]
        faults = result["faults"]
        print(f"seed={SCHEDULE.seed} {phase.writers}: {summarize_checks(checks)}; faults: "
              + "; ".join(f"{f['kind']}->{f['target']} open={f.get('open_transaction')}" for f in faults))
        assert exactly_once_holds(checks["output"], checks["dlq"]), (phase.writers, summarize_checks(checks))
        assert checks["output"]["order_violations"] == 0, phase.writers
        assert checks["verdicts_ok"], (phase.writers, result["recoveries"])
        assert checks["lingering"]["clean"], (phase.writers, checks["lingering"])
        assert checks["passed"], (phase.writers, summarize_checks(checks))
        assert [f["kind"] for f in faults] == [e.kind for e in phase.events]
        assert sum(bool(f.get("open_transaction")) for f in faults) >= 3, (phase.writers, faults)
