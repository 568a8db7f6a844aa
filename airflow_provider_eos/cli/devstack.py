"""The local development commands: ``eos devstack``, ``eos jars``, and ``eos run``.

``devstack up --spark-workers N`` starts a Spark standalone cluster beside the broker, and
``--yarn`` Hadoop's MiniCluster (HDFS + YARN), in the same state folder. The commands that change
the folder (``up``, ``down``, ``broker``, and ``eos airflow up|down``) hold its lock while they run
(:mod:`airflow_provider_eos.devstack.state_lock`): a second one fails at once, naming the first. ``devstack status``
exits 1 when a broker node does not run or a recorded cluster is not fully up (a finding: start
it), like every command's exit codes
(:class:`~airflow_provider_eos.cli.output.ExitCode`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.cli.output import ExitCode, Report, add_json_flag, add_lifecycle_commands, add_spec_argument
from airflow_provider_eos.core.kafka_defaults import KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from airflow_provider_eos.devstack.jars import KAFKA_VERSION, KAFKA_VERSIONS

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_eos.core.errors import EosError
    from airflow_provider_eos.devstack.broker_state import BrokerInfo
    from airflow_provider_eos.devstack.yarn_state import YarnClusterInfo

__all__ = ["holding_state_folder", "register"]

Handler = Callable[[argparse.Namespace], int]


def holding_state_folder(command: str, handler: Handler) -> Handler:
    """``handler``, run while it holds the lock of its ``--state-dir`` (refused at once while another holds it).

    :param command: the command as a refusal names its holder (``eos devstack up``).
    """

    def run(args: argparse.Namespace) -> int:
        from airflow_provider_eos.devstack.broker import LocalKafka
        from airflow_provider_eos.devstack.state_lock import hold_state_folder

        with hold_state_folder(LocalKafka(args.state_dir).state_dir, command):  # the folder as every part resolves it
            return handler(args)

    return run


def _devstack_up(args: argparse.Namespace) -> int:
    from airflow_provider_eos.core.errors import EosError, SparkClusterError
    from airflow_provider_eos.devstack.broker import LocalKafka
    from airflow_provider_eos.devstack.spark_cluster import SparkCluster
    from airflow_provider_eos.devstack.spark_cluster_state import check_worker_settings

    if args.spark_workers < 0:
        raise SparkClusterError(f"--spark-workers must be 0 or more, got {args.spark_workers}.",
                                fix="pass the number of Spark workers to start, e.g. 2 (0: none).")
    if args.spark_workers:
        check_worker_settings(args.spark_workers, 1, args.spark_worker_memory)  # before the broker starts
    from airflow_provider_eos.devstack.yarn import YarnMiniCluster

    report = Report(args)
    kafka = LocalKafka(args.state_dir, security=args.security)
    spark, yarn = SparkCluster(kafka.state_dir), YarnMiniCluster(kafka.state_dir)
    if kafka.status() is None:
        # Starting the broker clears its stale files: a cluster recorded beside them would be orphaned.
        spark.down()
        yarn.down()
    info = kafka.up(transaction_max_timeout_ms=args.transaction_max_timeout_ms, brokers=args.brokers,
                    kafka_version=args.kafka_version)
    report.data["kafka"] = _broker_data(info)
    report.line(f"Kafka {info.kafka_version} {info.bootstrap_servers} pid={info.pid} security={info.security} "
                f"logs={info.log_file}")
    if len(info.nodes) > 1:
        _print_nodes(report, info)
    running = [f"the broker ({info.bootstrap_servers})"]
    try:
        if args.spark_workers:
            cluster = spark.up(workers=args.spark_workers, worker_memory=args.spark_worker_memory)
            running.append(f"the Spark cluster ({cluster.master_url})")
            report.data["spark"] = {"master_url": cluster.master_url, "webui_url": cluster.webui_url,
                                    "workers": cluster.workers, "pids": cluster.pids(),
                                    "log_dir": str(cluster.log_dir)}
            report.line(f"Spark {cluster.master_url} ui={cluster.webui_url} workers={cluster.workers} "
                        f"pids={','.join(map(str, cluster.pids()))} logs={cluster.log_dir}")
            report.line(f"spark.master={cluster.master_url}")
        if args.yarn:
            hadoop = yarn.up()
            report.data["yarn"] = _yarn_data(hadoop)
            report.line(f"YARN {hadoop.resourcemanager_url} hdfs={hadoop.namenode_url} "
                        f"webhdfs={hadoop.webhdfs_url} logs={hadoop.log_file}")
            report.line(f"HADOOP_CONF_DIR={hadoop.hadoop_conf_dir}")
    except EosError as exc:
        _name_what_still_runs(exc, running, kafka.state_dir)
        raise
    _print_client_lines(report, info)
    return report.finish()


def _name_what_still_runs(exc: EosError, running: list[str], state_dir: Path) -> None:
    """Add to a later stage's error what ``up`` left running, and how to stop it.

    The broker (and a Spark cluster before a failed YARN) stay up on purpose: a second ``up`` after
    the fix reuses them. Told nothing, the user would not know they run.
    """
    exc.message = f"{exc.message}\nStill running in {state_dir}: {', '.join(running)}."
    stop = f"stop them with `eos devstack down --state-dir {state_dir}`, or run `eos devstack up` again once fixed"
    exc.fix = f"{exc.fix}; then {stop}" if exc.fix else stop
    exc.args = (f"{exc.message}\nFix: {exc.fix}",)  # what str(exc), the text error, shows


def _broker_data(info: BrokerInfo) -> dict[str, Any]:
    """The broker as ``--json`` shows it: where to connect, its processes and logs (never a password)."""
    return {
        "bootstrap_servers": info.bootstrap_servers, "kafka_version": info.kafka_version, "pid": info.pid,
        "security": info.security,
        "log_file": str(info.log_file), "transaction_max_timeout_ms": info.transaction_max_timeout_ms,
        "client_config": None if info.client_config is None else str(info.client_config),
        "nodes": [{"node_id": n.node_id, "port": n.port, "pid": n.pid, "running": n.running(),
                   "log_file": str(n.layout.log_file)} for n in info.nodes],
    }


def _yarn_data(hadoop: YarnClusterInfo) -> dict[str, Any]:
    return {"resourcemanager_url": hadoop.resourcemanager_url, "namenode_url": hadoop.namenode_url,
            "webhdfs_url": hadoop.webhdfs_url, "log_file": str(hadoop.log_file),
            "hadoop_conf_dir": str(hadoop.hadoop_conf_dir)}


def _print_nodes(report: Report, info: BrokerInfo) -> None:
    for node in info.nodes:
        state = "running" if node.running() else "not running"
        report.line(f"broker {node.node_id} {state} 127.0.0.1:{node.port} pid={node.pid} logs={node.layout.log_file}")


def _devstack_broker(args: argparse.Namespace) -> int:
    from airflow_provider_eos.devstack.broker import LocalKafka

    report = Report(args)
    node = LocalKafka(args.state_dir).fault(args.action, args.node_id, timeout_s=args.timeout)
    report.data.update(node_id=node.node_id, action=args.action, pid=node.pid, port=node.port)
    report.line(f"broker {node.node_id} {args.action}: pid={node.pid} 127.0.0.1:{node.port}")
    return report.finish()


def _print_client_lines(report: Report, info: BrokerInfo) -> None:
    """The last lines of ``up`` and ``status``: the admin's settings file (secured only), then bootstrap.servers."""
    if info.client_config is not None:
        report.line(f"client.config={info.client_config}")  # the path only: the file holds the admin's password
    report.line(f"bootstrap.servers={info.bootstrap_servers}")


def _devstack_down(args: argparse.Namespace) -> int:
    from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow
    from airflow_provider_eos.devstack.broker import LocalKafka
    from airflow_provider_eos.devstack.spark_cluster import SparkCluster
    from airflow_provider_eos.devstack.yarn import YarnMiniCluster

    report = Report(args)
    kafka = LocalKafka(args.state_dir)
    # The clusters first: the broker's down removes the folder once nothing else is left in it.
    stopped = {"airflow": LocalAirflow(kafka.state_dir).down(), "spark": SparkCluster(kafka.state_dir).down(),
               "yarn": YarnMiniCluster(kafka.state_dir).down()}
    for name, done_here in stopped.items():
        if done_here:
            report.line(f"{name} stopped" if name == "airflow" else f"{name} cluster stopped")
    done = kafka.down()
    for node in done.left_alone:
        report.line(f"broker {node.node_id} (pid {node.pid}) was not running: that pid now runs another program, "
                    "left alone")
    report.line("stopped and removed" if done else "no devstack broker was running; state removed")
    if done.kept:
        report.line(f"kept {kafka.state_dir}: it holds {', '.join(done.kept)}, not the devstack's to remove")
    report.data.update(state_dir=str(kafka.state_dir), broker_stopped=bool(done), kept=list(done.kept),
                       left_alone=[node.node_id for node in done.left_alone], **{f"{k}_stopped": bool(v)
                                                                                for k, v in stopped.items()})
    return report.finish()


def _devstack_status(args: argparse.Namespace) -> int:
    from airflow_provider_eos.devstack.broker import LocalKafka
    from airflow_provider_eos.devstack.spark_cluster import SparkCluster
    from airflow_provider_eos.devstack.yarn import YarnMiniCluster

    report = Report(args)
    kafka = LocalKafka(args.state_dir)
    info = kafka.status()
    spark = SparkCluster(kafka.state_dir).status()
    yarn = YarnMiniCluster(kafka.state_dir).status()
    report.data.update(state_dir=str(kafka.state_dir), kafka=None if info is None else _broker_data(info),
                       spark=None, yarn=None)
    if info is None:
        report.line(f"not running (state dir {kafka.state_dir})")
    else:
        report.line(f"running pid={info.pid} security={info.security} logs={info.log_file} "
                    f"transaction.max.timeout.ms={info.transaction_max_timeout_ms}")
        if len(info.nodes) > 1:
            _print_nodes(report, info)
    if spark is not None:
        cluster = spark.info
        health = "running" if spark.healthy else "degraded" if spark.master_running else "master not running"
        report.data["spark"] = {"health": health, "master_url": cluster.master_url, "webui_url": cluster.webui_url,
                                "workers_alive": spark.workers_alive, "workers": cluster.workers,
                                "log_dir": str(cluster.log_dir)}
        report.line(f"spark {health} master={cluster.master_url} ui={cluster.webui_url} "
                    f"workers={spark.workers_alive}/{cluster.workers} alive logs={cluster.log_dir}")
        report.line(f"spark.master={cluster.master_url}")
    if yarn is not None:
        hadoop = yarn.info
        report.data["yarn"] = {**_yarn_data(hadoop), "running": yarn.healthy, "nodes_running": yarn.nodes_running}
        report.line(f"yarn {'running' if yarn.healthy else 'not running'} rm={hadoop.resourcemanager_url} "
                    f"hdfs={hadoop.namenode_url} nodes={yarn.nodes_running} logs={hadoop.log_file}")
        report.line(f"HADOOP_CONF_DIR={hadoop.hadoop_conf_dir}")
    if info is None:
        return report.finish(ExitCode.FINDING)
    _print_client_lines(report, info)
    # Every node: a three-broker devstack with one node down still answers, but not as it was started.
    healthy = (all(node.running() for node in info.every_node) and (spark is None or spark.healthy)
               and (yarn is None or yarn.healthy))
    return report.finish(ExitCode.OK if healthy else ExitCode.FINDING)


def _jars(args: argparse.Namespace) -> int:
    from airflow_provider_eos.devstack import jars

    report = Report(args)
    found = {"kafka": jars.kafka_jars_dir(), "spark-kafka": jars.spark_kafka_jars_dir()}
    if (jars.EXECUTOR_WRITER_MODULE / "pom.xml").is_file():  # a checkout: build the JVM executor writer too
        found["executor-writer"] = jars.executor_writer_jar()
    for name, path in found.items():
        report.line(f"{name}={path}")
    report.line(str(jars.eos_home() / "jars"))
    report.data.update({name.replace("-", "_"): str(path) for name, path in found.items()},
                       jars_home=str(jars.eos_home() / "jars"))
    return report.finish()


def _run(args: argparse.Namespace) -> int:
    import datetime as dt
    import os
    import signal
    import subprocess
    import tempfile
    from pathlib import Path

    from airflow_provider_eos.core.driver import DRIVER_TOKEN_ENV, run_driver_token, submission_environment
    from airflow_provider_eos.core.errors import SubmissionError
    from airflow_provider_eos.core.spark_master import checked_master
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.core.submit_environment import submit_environment
    from airflow_provider_eos.spark.driver_processes import this_host
    from airflow_provider_eos.spark.submit_command import plan_submit, spark_submit_executable

    # One spelling (Spark refuses " local[2]", "LOCAL[2]" and "spark://host:7077/"), as `eos airflow up` records it.
    master = checked_master(args.master, option="--master", error=SubmissionError)
    spec_file = Path(args.spec).resolve()
    spec = PipelineSpec.load(spec_file)
    # Tagged as the submit operator tags a DAG run's driver: it takes the pipeline's lease, so every liveness
    # check sees it and no second driver starts beside it (design note 75). A token given in the environment
    # is kept (a caller that observes the driver by it).
    token = os.environ.get(DRIVER_TOKEN_ENV) or run_driver_token(spec.name, this_host(), os.getpid(),
                                                                 dt.datetime.now(dt.UTC))
    with tempfile.TemporaryDirectory(prefix="eos-run-") as work_dir:
        plan = plan_submit(spec_file, spec, mode=args.mode or spec.mode, work_dir=Path(work_dir),
                           python_environment=args.environment, driver_token=token)
        command = plan.command(spark_submit_executable(), master)
        print(" ".join(command), file=sys.stderr)
        print(f"driver token {token}", file=sys.stderr)
        pid_file = Path(work_dir) / "driver.pid"
        # The allow-list, not this shell's whole environment: what else the job needs is set for it explicitly.
        tags = submission_environment(token, owner_pid=os.getpid())
        env = submit_environment(os.environ, {**plan.environment(), **tags, "EOS_DRIVER_PID_FILE": str(pid_file)})
        process = subprocess.Popen(command, env=env)

        def forward_sigterm(*_: object) -> None:
            # SIGTERM on spark-submit's JVM would tear the Python driver down mid-batch; the driver
            # itself stops the query after the running batch.
            try:
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
            except (OSError, ValueError):
                process.terminate()

        signal.signal(signal.SIGTERM, forward_sigterm)
        # No deadline, unlike every other command eos waits for: this is the pipeline itself, which
        # runs as long as its trigger says (a streaming query until it is stopped).
        returncode = process.wait()
        # A signal death reads as the shell's 128 + signal number, not a wrapped negative code.
        return 128 - returncode if returncode < 0 else returncode


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``devstack``, ``jars`` and ``run`` to the ``eos`` command line."""
    # The one spelling of the sink modes; core.spec imports pydantic, not Airflow, Spark or Kafka.
    from airflow_provider_eos.core.spec import Mode
    from airflow_provider_eos.devstack.security import SECURITY_MODES

    # The commands that change the folder hold its lock; status only reads it.
    locked_up = holding_state_folder("eos devstack up", _devstack_up)
    locked_down = holding_state_folder("eos devstack down", _devstack_down)
    devstack = commands.add_parser(
        "devstack", help="a local Kafka (KRaft, one node or --brokers 3) and, if asked, a Spark standalone cluster "
        "or YARN, for development"
    )
    devstack_commands = devstack.add_subparsers(dest="devstack_command", required=True)
    lifecycle = add_lifecycle_commands(devstack_commands, (
        ("up", locked_up, "start the broker and any Spark cluster or YARN MiniCluster (idempotent); print "
         "bootstrap.servers last"),
        ("down", locked_down, "stop the broker, any Spark cluster or YARN MiniCluster and any `eos airflow up` "
         "deployment in the folder, and remove their data (a pipelines folder with files in it is kept)"),
        ("status", _devstack_status, "say whether the broker and the cluster run and where (exit 1: not all do)"),
    ), state_dir_help="folder of the broker and the cluster (default $EOS_HOME/devstack): new, empty or made by "
        "the devstack; down removes only what the devstack wrote there")
    up = lifecycle["up"]
    up.add_argument(
        "--brokers", type=int, default=1, metavar="N",
        help="1 (default) or 3: a KRaft cluster of N broker+controller nodes, replication factor 3 and "
        "min.insync.replicas 2; bootstrap.servers lists them all",
    )
    up.add_argument(
        "--kafka-version", default=KAFKA_VERSION, metavar="X.Y.Z",
        help=f"the brokers' Apache Kafka version, from Maven Central (default {KAFKA_VERSION}; tested: "
        f"{', '.join(KAFKA_VERSIONS)}; 3.9.0 or later)",
    )
    up.add_argument(
        "--transaction-max-timeout-ms", type=int, default=KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
        help=f"broker transaction.max.timeout.ms (default {KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS}, Kafka's default)",
    )
    up.add_argument(
        "--security", choices=SECURITY_MODES, default="plaintext",
        help="plaintext (default, no authentication), or SASL/SCRAM-SHA-512 users and ACL authorization "
        "(sasl_ssl: over TLS with a generated CA); prints client.config=<admin settings file> "
        "before the last line",
    )
    up.add_argument(
        "--spark-workers", type=int, default=0, metavar="N",
        help="also start a Spark standalone master and N workers of one core each (default 0: none); "
        "prints spark.master=spark://... before the last line",
    )
    up.add_argument("--spark-worker-memory", default="1g", help="memory of each Spark worker (default 1g)")
    up.add_argument(
        "--yarn", action="store_true",
        help="also start Hadoop's MiniCluster (HDFS + YARN, jars from Maven Central) and print "
        "HADOOP_CONF_DIR=... before the last line (for spark-submit --master yarn)",
    )

    from airflow_provider_eos.devstack.broker_faults import NODE_FAULTS

    broker = devstack_commands.add_parser(
        "broker", help="fault one broker of a --brokers 3 devstack by node id: kill (SIGKILL), pause (SIGSTOP), "
        "resume (SIGCONT), stop (SIGTERM) or restart (returns once it is back in the cluster's metadata)")
    broker.add_argument("action", choices=NODE_FAULTS)
    broker.add_argument("node_id", type=int, metavar="ID", help="the broker's node id (see `eos devstack status`)")
    broker.add_argument("--state-dir", default=None, help="the devstack's folder, as given to `up`")
    broker.add_argument("--timeout", type=float, default=120, help="seconds a restart may take to rejoin")
    add_json_flag(broker)
    broker.set_defaults(handler=holding_state_folder("eos devstack broker", _devstack_broker))

    jars = commands.add_parser("jars", help="resolve (if needed) and print the jars directories; in a checkout, "
                               "also build the JVM executor writer (jvm/)")
    add_json_flag(jars)
    jars.set_defaults(handler=_jars)

    run = commands.add_parser("run", help="run a pipeline's Spark job through spark-submit")
    add_spec_argument(run)
    run.add_argument("--master", default="local[2]",
                     help="Spark master URL (default local[2]), in any spelling: blanks, a trailing slash and "
                     "the scheme's case are not part of it")
    run.add_argument("--environment", default=None, metavar="ARCHIVE",
                     help="packed Python environment (`eos package`) for the executors; replaces the spec's")
    # Not `choices`: a mode of an acknowledged sink plug-in (the bench's noop) is checked when the job is planned.
    run.add_argument("--mode", default=None, metavar="{" + ",".join(mode.value for mode in Mode) + "}",
                     help="sink mode; at-least-once is Spark's built-in writer, for baselines only (other "
                     "modes come from a sink plug-in, EOS_SINK_PLUGIN: test and bench only)")
    run.set_defaults(handler=_run)
