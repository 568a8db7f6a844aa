"""``eos airflow up|down|status``: the devstack's Airflow deployment, to use the DAGs through the UI.

``up`` starts an api-server, a scheduler (LocalExecutor), a dag-processor and a triggerer on
127.0.0.1 (:mod:`airflow_provider_eos.devstack.airflow_deployment`), with this project's DAGs, a
pipelines folder, and the ``kafka_default`` / ``spark_default`` connections for the devstack in
the same ``--state-dir`` (its broker and, when one runs, its Spark standalone master). It prints
the UI's address and the admin login last.

``--db postgres`` keeps the metadata in a PostgreSQL server of its own; ``--executor celery
--workers N`` runs the tasks on N Celery workers (Redis their broker, PostgreSQL the DB), each a
host of its own: its own hostname, process table and queue ``worker-<n>`` (docs/design-notes.md note 34).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from airflow_provider_eos.cli.devstack import holding_state_folder
from airflow_provider_eos.cli.output import ExitCode, Report, add_lifecycle_commands

if TYPE_CHECKING:
    from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo

__all__ = ["register"]


def _up(args: argparse.Namespace) -> int:
    from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow
    from airflow_provider_eos.devstack.airflow_settings import GUEST_USER, VIEWER_USER
    from airflow_provider_eos.devstack.broker import LocalKafka
    from airflow_provider_eos.devstack.celery_settings import deployment_kind
    from airflow_provider_eos.devstack.spark_cluster import SparkCluster

    report = Report(args)
    kind = deployment_kind(args.executor, args.db, args.workers)
    airflow = LocalAirflow(args.state_dir)
    broker = LocalKafka(airflow.state_dir).status()
    cluster = SparkCluster(airflow.state_dir).status()
    running = airflow.running()
    # Without --spark-master a running deployment keeps its own (up refuses a different one): the
    # devstack's Spark cluster may have started or stopped since.
    master = args.spark_master or (running.spark_master if running and running.spark_master else None) or (
        cluster.info.master_url if cluster and cluster.healthy else "local[2]")
    info = airflow.up(specs_dir=args.specs_dir, dags_folder=args.dags_folder,
                      bootstrap_servers=broker.bootstrap_servers if broker else None, spark_master=master,
                      kind=kind, statsd=args.statsd)
    report.line(f"Airflow {info.url} home={info.airflow_home} pids={','.join(str(d.pid) for d in info.daemons)}")
    _describe_kind(report, info)
    report.line(f"pipelines={info.specs_dir} (put spec files here; the DAGs list them within 30 s)")
    kafka_line = f" kafka_default={broker.bootstrap_servers}" if broker else " (no devstack broker: no kafka_default)"
    master = info.spark_master or master  # as the deployment records it (one spelling)
    report.line(f"connections: spark_default={master}{kafka_line}")
    report.line(f"login: user={info.user} password={info.password()}  ({info.password_file})")
    report.line(f"other users: {VIEWER_USER} (reads everything), {GUEST_USER} (reads nothing); "
                "their passwords are in the same file")
    report.line(f"ui={info.url}")
    if info.statsd:
        report.line(f"metrics: StatsD to {info.statsd} (prefix airflow; the task metrics: docs/observability.md)")
    # The password file's path, not the password: JSON output ends up in logs and CI artifacts.
    report.data.update(url=info.url, airflow_home=str(info.airflow_home), specs_dir=str(info.specs_dir),
                       daemons={d.component: d.pid for d in info.daemons}, user=info.user,
                       password_file=str(info.password_file), spark_default=master,
                       kafka_default=broker.bootstrap_servers if broker else None, statsd=info.statsd)
    return report.finish()


def _describe_kind(report: Report, info: AirflowDeploymentInfo) -> None:
    """The executor, the metadata DB and the workers' hosts: a line each, and the same in ``--json``."""
    db = f"postgres 127.0.0.1:{info.postgres.port} (PostgreSQL {info.postgres.version})" if info.postgres else "sqlite"
    report.line(f"executor={info.kind.executor} db={db}")
    for worker in info.workers:
        report.line(f"worker {worker.name}: host={worker.hostname} queues={','.join(worker.queues)} "
                    f"pid={worker.worker_pid} {worker.pid_namespace}")
    report.data.update(executor=info.kind.executor, db=info.kind.db,
                       workers={w.name: {"hostname": w.hostname, "pid": w.worker_pid, "queues": w.queues}
                                for w in info.workers})


def _down(args: argparse.Namespace) -> int:
    from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow

    report = Report(args)
    stopped = LocalAirflow(args.state_dir).down()
    report.line("airflow stopped and removed" if stopped else "no Airflow deployment was running")
    report.data["stopped"] = bool(stopped)
    return report.finish()


def _status(args: argparse.Namespace) -> int:
    from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow

    report = Report(args)
    airflow = LocalAirflow(args.state_dir)
    info = airflow.running()
    if info is None:
        recorded = airflow.recorded()
        report.line("no Airflow deployment runs" + (f" (recorded in {airflow.state_file}, not all of it runs: "
                                                    "`eos airflow up` starts it anew)" if recorded else ""))
        down = [name for name, alive in airflow.parts(recorded).items() if not alive] if recorded else []
        if down:
            report.line(f"down: {', '.join(down)}")
        report.data.update(running=False, recorded=bool(recorded), state_file=str(airflow.state_file), down=down)
        return report.finish(ExitCode.FINDING)
    report.line(f"Airflow {info.url} runs: {', '.join(f'{d.component}={d.pid}' for d in info.daemons)}")
    _describe_kind(report, info)
    report.line(f"ui={info.url}")
    if info.statsd:
        report.line(f"metrics: StatsD to {info.statsd} (prefix airflow; the task metrics: docs/observability.md)")
    report.data.update(running=True, url=info.url, daemons={d.component: d.pid for d in info.daemons})
    return report.finish()


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``airflow up|down|status`` to the ``eos`` command line."""
    from airflow_provider_eos.devstack.airflow_deployment import default_dags_folder

    # up and down change the state folder: they hold its lock; status only reads it.
    locked_up, locked_down = (holding_state_folder("eos airflow up", _up),
                                holding_state_folder("eos airflow down", _down))
    parser = commands.add_parser(
        "airflow", help="a local Airflow deployment (api-server, scheduler, dag-processor, triggerer) with the DAGs"
    )
    lifecycle = add_lifecycle_commands(parser.add_subparsers(dest="airflow_command", required=True), (
        ("up", locked_up, "start it (idempotent); print the UI's address and the admin login"),
        ("down", locked_down, "stop it and remove its metadata DB and logs"),
        ("status", _status, "say whether it runs and where (exit 1: it does not)"),
    ), state_dir_help="the devstack folder (default $EOS_HOME/devstack); Airflow lives in <state-dir>/airflow")
    up = lifecycle["up"]
    up.add_argument("--specs-dir", default=None,
                    help="the pipelines folder the DAGs read ($EOS_SPECS_DIR; default <state-dir>/pipelines)")
    dags = default_dags_folder()
    up.add_argument("--dags-folder", default=str(dags),
                    help="the DAG files (default: the checkout's dags/ when there is one, else the installed package's "
                    f"example_dags/, copies of the same files; here {dags})")
    up.add_argument("--spark-master", default=None,
                    help="spark_default's master (default: the devstack's standalone master, else local[2])")
    up.add_argument("--executor", choices=("local", "celery"), default="local",
                    help="local: the scheduler runs the tasks (default); celery: Celery workers on hosts of their own, "
                    "Redis their broker")
    up.add_argument("--workers", type=int, default=None,
                    help="the Celery workers (default 2): worker-<n>, each consuming its queue worker-<n> and default")
    up.add_argument("--statsd", default=None, metavar="HOST:PORT",
                    help="send Airflow's metrics (the health and recovery tasks' among them) to this StatsD listener")
    up.add_argument("--db", choices=("sqlite", "postgres"), default=None,
                    help="the metadata DB: sqlite (default with the LocalExecutor) or a PostgreSQL server of its own "
                    "(default and required with Celery)")
