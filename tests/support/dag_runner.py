"""Parse or run the repo's DAG files with Airflow in a child process, and report as JSON.

``python -m tests.support.dag_runner parse <out.json>`` or
``python -m tests.support.dag_runner run <dag_id> <conf json> <out.json>``. A child per call keeps
Airflow (its logging setup, its settings read from the ``airflow_home`` fixture's environment)
out of the pytest process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.airflow_compat import dagbag_module

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"
HEAVY_MODULES = ("pyspark", "pandas", "pyarrow")


@dataclass
class DagRunResult:
    state: str
    states: dict[str, str]
    xcoms: dict[str, Any]
    log: str
    run_id: str = ""
    times: dict[str, list[float | None]] = field(default_factory=dict)
    stored_xcoms: list[str] = field(default_factory=list)
    rendered_fields: list[str] = field(default_factory=list)
    #: The run's asset events: ``{"task_id", "uri", "extra"}`` each.
    asset_events: list[dict[str, Any]] = field(default_factory=list)
    #: Each task's operator extra links as the api-server serves them: ``{task_id: {link name: url or ""}}``.
    extra_links: dict[str, dict[str, str]] = field(default_factory=dict)

    def started(self, task_id: str) -> float:
        """When the task started (epoch seconds)."""
        start = self.times[task_id][0]
        assert start is not None, f"{task_id} never started"
        return start

    def ended(self, task_id: str) -> float:
        """When the task ended (epoch seconds)."""
        end = self.times[task_id][1]
        assert end is not None, f"{task_id} never ended"
        return end

    def task_log(self, task_id: str) -> str:
        start = self.log.index(f"starting task_id={task_id} ")
        end = self.log.find(f"end task task_id={task_id} ", start)
        return self.log[start:end if end >= 0 else None]


def _child(args: list[str], env: dict[str, str] | None, timeout_s: float) -> subprocess.CompletedProcess:
    """Run this module's ``args`` in a session of its own, and end whatever it left in it.

    A run can leave processes behind: OpenLineage's listener forks one per event, and after one CI
    run a fork kept spinning for an hour, orphaned, after the run had succeeded. The output goes to
    a file, not a pipe, so such a process holding it cannot keep this waiting.
    """
    command = [sys.executable, "-m", __name__, *args]
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(command, cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                                stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _end_session(proc.pid)
            proc.wait()
        log.seek(0)
        output = log.read()
    if timed_out:
        # What the run printed until it was killed says which task hung: a bare timeout said nothing.
        raise AssertionError(f"{args[0]} {args[1] if len(args) > 1 else ''} did not end within "
                             f"{timeout_s:.0f}s; its output until then:\n{output[-12000:]}")
    return subprocess.CompletedProcess(command, proc.returncode, output, None)


def _end_session(leader: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)


def parse_dags(out: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = _child(["parse", str(out)], env, 300)
    assert proc.returncode == 0 and out.exists(), proc.stdout[-5000:]
    return {**json.loads(out.read_text()), "log": proc.stdout}


def run_dag(dag_id: str, conf: dict[str, Any], out: Path, env: dict[str, str] | None = None,
            timeout_s: float = 900, run_after: str = "", mark_success: str = "") -> DagRunResult:
    """Run ``dag_id`` with ``dag.test()`` in a child process.

    :param run_after: an ISO time; fixes the run id to ``manual__<run_after>`` (see :func:`manual_run_id`).
    :param mark_success: a regex of task ids that dag.test() marks successful instead of running.
    """
    proc = _child(["run", dag_id, json.dumps(conf), str(out), run_after, mark_success], env, timeout_s)
    assert proc.returncode == 0 and out.exists(), f"exit {proc.returncode}\n{proc.stdout[-8000:]}"
    return DagRunResult(**json.loads(out.read_text()), log=proc.stdout)


#: The line the child prints before each run of :func:`run_dags`: the parent splits the output there.
RUN_MARK = "=== eos dag_runner: run "


def run_dags(runs: list[tuple[str, dict[str, Any], Path]], env: dict[str, str] | None = None,
             timeout_s: float = 900) -> list[DagRunResult]:
    """Run each ``(dag_id, conf, out)`` with ``dag.test()``, one after the other, in one child process.

    A child costs about 18 s of CPU before its DAG's first task ends: Airflow's import (7 s), the DAG
    folder's parse and sync, and the in-process Execution API that the first task of a process builds
    (Cadwyn's versioned app, 9 s). Runs that need the same environment and nothing done between them
    pay it once here. Each result's ``log`` is its own run's part of the output.
    """
    listed = [{"dag_id": dag_id, "conf": conf, "out": str(out)} for dag_id, conf, out in runs]
    proc = _child(["runs", json.dumps(listed)], env, timeout_s)
    parts = proc.stdout.split(RUN_MARK)
    assert proc.returncode == 0 and all(Path(run["out"]).exists() for run in listed), (
        f"exit {proc.returncode}\n{proc.stdout[-8000:]}")
    assert len(parts) == len(listed) + 1, f"{len(parts) - 1} run marks for {len(listed)} runs"
    # The part before the first mark (Airflow's start) belongs to the first run, as in run_dag's log.
    logs = [parts[0] + parts[1], *parts[2:]]
    return [DagRunResult(**json.loads(Path(run["out"]).read_text()), log=log)
            for run, log in zip(listed, logs, strict=True)]


def _runs(listed: str) -> None:
    for number, run in enumerate(json.loads(listed)):
        print(f"{RUN_MARK}{number} {run['dag_id']}", flush=True)
        _run(run["dag_id"], json.dumps(run["conf"]), run["out"])


def _parse(out: str) -> None:
    started = time.monotonic()

    bag = dagbag_module().DagBag(dag_folder=str(DAGS))
    result = {
        "seconds": time.monotonic() - started,
        "dag_ids": sorted(bag.dag_ids),
        "import_errors": {str(k): str(v) for k, v in bag.import_errors.items()},
        "heavy_modules": [m for m in HEAVY_MODULES if m in sys.modules],
        "params": {d: {k: v.value if hasattr(v, "value") else v for k, v in bag.get_dag(d).params.items()}
                   for d in bag.dag_ids},
        "kafka_conn_ids": {d: {t.task_id: t.kafka_conn_id for t in bag.get_dag(d).tasks if hasattr(t, "kafka_conn_id")}
                           for d in bag.dag_ids},
        # Set by the state-changing operators; BaseOperator's own dry_run is a method.
        "dry_runs": {d: {t.task_id: t.dry_run for t in bag.get_dag(d).tasks
                         if isinstance(getattr(t, "dry_run", None), bool | str)} for d in bag.dag_ids},
        "docs": {d: bag.get_dag(d).doc_md or "" for d in bag.dag_ids},
        "pipeline_enums": {d: bag.get_dag(d).params.get_param("pipeline").schema.get("enum")
                           for d in bag.dag_ids if "pipeline" in bag.get_dag(d).params},
        "max_active_runs": {d: bag.get_dag(d).max_active_runs for d in bag.dag_ids},
        "tags": {d: sorted(bag.get_dag(d).tags) for d in bag.dag_ids},
        # The spec file each task reads, as the DAG file set it (a template stays a template).
        "spec_paths": {d: {t.task_id: t.spec_path for t in bag.get_dag(d).tasks if hasattr(t, "spec_path")}
                       for d in bag.dag_ids},
        "fileloc": {d: bag.get_dag(d).fileloc for d in bag.dag_ids},
    }
    Path(out).write_text(json.dumps(result, default=str))


def manual_run_id(run_after: str) -> str:
    """The run id dag.test() gives a run with this ``run_after`` (and a logical date)."""
    return f"manual__{run_after}"


CONNECTIONS_FILE_ENV = "EOS_TEST_CONNECTIONS_FILE"
"""A JSON file (mode 0600) of ``{conn_id: {"conn_type": ..., "extra": {...}}}`` the child stores in the metadata DB."""


def store_connections(connections: dict[str, dict[str, Any]], path: Path) -> dict[str, str]:
    """Write ``connections`` for :func:`run_dag` (owner-only) and return the env that points the child at them.

    Connections go into the metadata DB as a deployment keeps them, not into ``AIRFLOW_CONN_*``
    variables, so no secret sits in the environment every task's children inherit.
    """
    path.touch(mode=0o600)
    path.write_text(json.dumps(connections))
    return {CONNECTIONS_FILE_ENV: str(path)}


def _upsert_connections() -> None:
    source = os.environ.get(CONNECTIONS_FILE_ENV)
    if not source:
        return
    from airflow.models.connection import Connection
    from airflow.utils.session import create_session

    with create_session() as session:
        for conn_id, fields in json.loads(Path(source).read_text()).items():
            session.query(Connection).filter(Connection.conn_id == conn_id).delete()
            extra = fields.get("extra")
            session.add(Connection(conn_id=conn_id, conn_type=fields["conn_type"], host=fields.get("host"),
                                   extra=json.dumps(extra) if isinstance(extra, dict) else extra))


def _extra_links(dag_run: Any, tis: list[Any], session: Any) -> dict[str, dict[str, str]]:
    """The tasks' extra links as the api-server computes them: from the serialized DAG, each read from its XCom."""
    try:
        from airflow.models.dagbag import DBDagBag
    except ImportError:  # an Airflow without it: the tests that read the links run on the newest one
        return {}
    served = DBDagBag().get_dag_for_run(dag_run, session=session)
    links: dict[str, dict[str, str]] = {}
    for ti in tis:
        task = served.get_task(ti.task_id)
        if ti.map_index < 0 and task.extra_links:
            links[ti.task_id] = {name: task.get_extra_links(ti, name) or "" for name in task.extra_links}
    return links


def _run(dag_id: str, conf: str, out: str, run_after: str = "", mark_success: str = "") -> None:
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.models.asset import AssetEvent
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    _upsert_connections()
    bag = dagbag_module().DagBag(dag_folder=str(DAGS))
    assert not bag.import_errors, bag.import_errors
    # dag.test() runs only DAGs serialized with a version, as the DAG processor would write them.
    DagBundlesManager().sync_bundles_to_db()
    dagbag_module().sync_bag_to_db(bag, "dags-folder", None)
    dag = bag.get_dag(dag_id)
    when = {}
    if run_after:
        from airflow.sdk import timezone

        moment = timezone.parse(run_after)
        when = {"run_after": moment, "logical_date": moment}
    dag_run = dag.test(run_conf=json.loads(conf), mark_success_pattern=mark_success or None, **when)
    with create_session() as session:
        tis = dag_run.get_task_instances(session=session)
        xcoms = session.query(XComModel).filter(
            XComModel.dag_id == dag_id, XComModel.run_id == dag_run.run_id,
            XComModel.key.in_(("return_value", "driver", "spark_ui_url", "spark_application_url")))
        result = {
            "state": str(dag_run.state),
            "states": {(ti.task_id if ti.map_index < 0 else f"{ti.task_id}[{ti.map_index}]"): str(ti.state)
                       for ti in tis},
            "xcoms": {(x.task_id if x.map_index < 0 else f"{x.task_id}[{x.map_index}]")
                      + ("" if x.key == "return_value" else f".{x.key}"): x.value for x in xcoms},
            "run_id": dag_run.run_id,
            "times": {ti.task_id: [ti.start_date.timestamp() if ti.start_date else None,
                                   ti.end_date.timestamp() if ti.end_date else None] for ti in tis},
            # Every XCom of the run and every rendered template field, as stored (secrets checks read them).
            "stored_xcoms": [json.dumps(x.value, default=str) for x in session.query(XComModel).filter(
                XComModel.dag_id == dag_id, XComModel.run_id == dag_run.run_id)],
            "asset_events": [{"task_id": e.source_task_id, "uri": e.asset.uri, "extra": e.extra}
                             for e in session.query(AssetEvent).filter(AssetEvent.source_dag_id == dag_id,
                                                                       AssetEvent.source_run_id == dag_run.run_id)],
            "extra_links": _extra_links(dag_run, tis, session),
            "rendered_fields": [json.dumps(r.rendered_fields, default=str) for r in session.query(
                RenderedTaskInstanceFields).filter(RenderedTaskInstanceFields.dag_id == dag_id,
                                                   RenderedTaskInstanceFields.run_id == dag_run.run_id)],
        }
    Path(out).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    try:
        {"parse": _parse, "run": _run, "runs": _runs}[command](*rest)
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(1)
    # The result is written: leave now. A thread left by what the run loaded (seen once in CI, after a
    # successful run with OpenLineage's listener) kept the interpreter from exiting until the 900 s timeout.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
