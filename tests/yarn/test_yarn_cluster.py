"""PySpark in YARN's cluster deploy mode on Hadoop's own MiniCluster, HDFS read and written through WebHDFS.

One MiniCluster for the session (about 30 s to start); each application takes about a minute on
two cores. The driver runs in a YARN container, not in spark-submit: its stdout is read back from
its container through the NodeManager, its output from HDFS through fsspec's ``webhdfs`` (no
native libhdfs), and the kill goes through the ResourceManager's REST API.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import fsspec
import pytest

from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.process_groups import group_members
from airflow_provider_eos.devstack.yarn import STATE_FILE, YarnClusterInfo, YarnMiniCluster
from tests.support.yarn_cluster import (
    FINAL_STATES,
    application,
    container_log,
    kill,
    listening_addresses,
    processes_of,
    spark_submit,
    wait_for_state,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CONTAINERS_GONE = RetryPolicy(waiting_for="the killed application's containers", timeout_s=30, first_delay_s=0.5)

LOOPBACK = {"127.0.0.1", "[::ffff:127.0.0.1]", "[::1]"}
DRIVER_PRINTS = RetryPolicy(waiting_for="the driver's print", timeout_s=120, first_delay_s=0.5, max_delay_s=1)


def wait_for_log(app: dict, text: str) -> None:
    printed = DRIVER_PRINTS.poll(lambda: container_log(app, "stdout"), until=lambda log: text in log, what=text)
    assert printed.settled, f"the driver did not print {text!r}: {printed.value!r}"


SUM_APP = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession

    source, target = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.appName("eos-yarn-sum").getOrCreate()
    numbers = spark.read.text(source).selectExpr("CAST(value AS BIGINT) AS n")
    total = numbers.selectExpr("sum(n) AS total").first()["total"]
    result = spark.createDataFrame([(int(total), sys.executable)], "total BIGINT, python STRING")
    result.coalesce(1).write.mode("overwrite").json(target)
    print(f"EOS_RESULT total={total}", flush=True)
    spark.stop()
""")

SLEEP_APP = textwrap.dedent("""
    import time
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("eos-yarn-sleeper").getOrCreate()
    print("EOS_SLEEPING", flush=True)
    time.sleep(600)
""")


@pytest.fixture(scope="module")
def webhdfs(yarn_cluster: YarnClusterInfo) -> fsspec.AbstractFileSystem:
    port = int(yarn_cluster.webhdfs_url.rsplit(":", 1)[1])
    # The NameNode's superuser is whoever started it; without Kerberos WebHDFS trusts user.name.
    return fsspec.filesystem("webhdfs", host="127.0.0.1", port=port, user=os.environ.get("USER", "root"),
                             skip_instance_cache=True)


@pytest.mark.long  # CI: the pipeline in cluster deploy mode (test_yarn_pipeline)
def test_pyspark_application_runs_in_cluster_deploy_mode(
    yarn_cluster: YarnClusterInfo, webhdfs: fsspec.AbstractFileSystem, tmp_path: Path
) -> None:
    run = f"/eos-yarn/{uuid.uuid4().hex}"
    webhdfs.pipe(f"{run}/numbers.txt", "\n".join(str(n) for n in range(1, 1001)).encode())
    script = tmp_path / "sum_app.py"
    script.write_text(SUM_APP)

    submission = spark_submit(
        yarn_cluster, script, f"{yarn_cluster.namenode_url}{run}/numbers.txt", f"{yarn_cluster.namenode_url}{run}/out",
        conf={"spark.app.name": "eos-yarn-sum"},
    )

    app = wait_for_state(yarn_cluster, submission.application_id, FINAL_STATES)
    outcome = (app["state"], app["finalStatus"])
    assert outcome == ("FINISHED", "SUCCEEDED"), (app["diagnostics"], submission.output[-3000:])
    assert submission.returncode == 0, submission.output[-3000:]
    assert app["applicationType"] == "SPARK" and app["name"] == "eos-yarn-sum"
    # The driver ran in the application master's container: its print is in that container's stdout.
    assert "EOS_RESULT total=500500" in container_log(app, "stdout")
    [part] = [path for path in webhdfs.ls(f"{run}/out", detail=False) if path.endswith(".json")]
    assert json.loads(webhdfs.cat(part)) == {"total": 500500, "python": sys.executable}
    print(f"\nsubmit-to-finished {submission.wall_s:.1f}s (spark-submit), {app['elapsedTime'] / 1000:.1f}s (YARN)")


@pytest.mark.long  # CI: test_yarn_pipeline kills the application through the task
def test_application_killed_through_the_resourcemanager(yarn_cluster: YarnClusterInfo, tmp_path: Path) -> None:
    script = tmp_path / "sleep_app.py"
    script.write_text(SLEEP_APP)
    submission = spark_submit(yarn_cluster, script, wait=False)
    assert submission.returncode == 0, submission.output[-3000:]
    app_id = submission.application_id
    running = wait_for_state(yarn_cluster, app_id, ("RUNNING", *FINAL_STATES))
    assert running["state"] == "RUNNING", running["diagnostics"]
    wait_for_log(running, "EOS_SLEEPING")  # the driver's SparkContext is up, its executor requested
    pids = processes_of(app_id)
    assert pids, "the running application has no container processes on this machine"
    addresses = listening_addresses(pids)
    assert addresses and all(address.rsplit(":", 1)[0] in LOOPBACK for address in addresses), addresses

    # Accepted; the kill is asynchronous: the answer is whatever state the application is in at that
    # moment (RUNNING, FINAL_SAVING, KILLING, KILLED). The outcome is asserted below.
    assert kill(yarn_cluster, app_id) in ("RUNNING", "FINAL_SAVING", "KILLING", "KILLED")

    app = wait_for_state(yarn_cluster, app_id, FINAL_STATES)
    assert (app["state"], app["finalStatus"]) == ("KILLED", "KILLED")
    assert application(yarn_cluster, app_id)["state"] == "KILLED"
    left = CONTAINERS_GONE.poll(lambda: processes_of(app_id), until=lambda pids: not pids, what=f"exit of {app_id}")
    assert left.settled, f"processes of the killed {app_id} still run: {left.value}"


@pytest.mark.long  # CI: the session's YARN cluster is started by the same code
def test_eos_devstack_up_yarn_status_and_down_from_other_processes(tmp_path: Path) -> None:
    """`eos devstack up --yarn` as a user runs it; `status` and `down` in processes that did not start it."""
    eos = Path(sys.executable).with_name("eos")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(eos), "devstack", *args, "--state-dir", str(tmp_path)], capture_output=True,
                              text=True, timeout=300, check=False)

    try:
        up = run("up", "--yarn")
        assert up.returncode == 0, up.stderr[-3000:]
        lines = up.stdout.strip().splitlines()
        assert lines[-1].startswith("bootstrap.servers=127.0.0.1:"), lines
        assert lines[-2].startswith("HADOOP_CONF_DIR="), lines
        conf_dir = Path(lines[-2].partition("=")[2])
        assert {"core-site.xml", "hdfs-site.xml", "yarn-site.xml"} <= {f.name for f in conf_dir.iterdir()}
        info = YarnMiniCluster(tmp_path).recorded()
        assert info is not None and info.hadoop_conf_dir == conf_dir

        status = run("status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert f"yarn running rm={info.resourcemanager_url} hdfs={info.namenode_url} nodes=1" in status.stdout

        down = run("down")
        assert down.returncode == 0 and "yarn cluster stopped" in down.stdout, down.stdout + down.stderr
        assert not pid_alive(info.pid) and group_members(info.pid) == []
        assert not (tmp_path / STATE_FILE).exists() and not info.yarn_dir.exists()
        assert run("status").returncode == 1  # nothing runs: a finding
    finally:
        run("down")
