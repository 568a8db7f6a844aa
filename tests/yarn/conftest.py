"""HDFS and YARN for this package's tests, and the Airflow worker's environment for YARN.

The MiniCluster is shared by the pytest-xdist workers while they run this package and stopped by the
last one out of it (``tests.support.shared_services``): its daemons cost CPU as long as they run, and
this package's tests run as one group (``tests.support.durations.PACKAGE_GROUPS``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_eos.core.hadoop_conf import HADOOP_CONF_DIR_ENV
from airflow_provider_eos.devstack.yarn import YarnClusterInfo, YarnMiniCluster
from tests.support.shared_services import shared_service
from tests.support.yarn_submit import SPARK_CONN


@pytest.fixture(scope="package")
def yarn_cluster(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[YarnClusterInfo]:
    """HDFS and YARN from ``hadoop-minicluster``, always stopped (and by a reaper if pytest dies)."""

    def start(folder: Path, owner: int) -> YarnClusterInfo:
        started = time.monotonic()
        info = YarnMiniCluster(folder).up(stop_with_pid=owner)
        print(f"\nYARN MiniCluster up in {time.monotonic() - started:.1f}s at {info.resourcemanager_url}")
        return info

    with shared_service(tmp_path_factory, worker_id, "yarn", start,
                        lambda folder: YarnMiniCluster(folder).down()) as info:
        yield info


@pytest.fixture
def on_yarn(yarn_cluster: YarnClusterInfo, monkeypatch: pytest.MonkeyPatch) -> Iterator[YarnClusterInfo]:
    """The Airflow worker's environment for YARN: HADOOP_CONF_DIR and a ``spark`` connection, no RM extra."""
    monkeypatch.setenv(HADOOP_CONF_DIR_ENV, str(yarn_cluster.hadoop_conf_dir))
    monkeypatch.setenv(f"AIRFLOW_CONN_{SPARK_CONN.upper()}", json.dumps(
        {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}))
    yield yarn_cluster
