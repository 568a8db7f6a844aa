"""Fixtures of the integration tests that more than one module uses."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from airflow_provider_eos.core.hadoop_conf import HADOOP_CONF_DIR_ENV
from airflow_provider_eos.devstack.yarn import YarnClusterInfo
from tests.support.yarn_submit import SPARK_CONN


@pytest.fixture
def on_yarn(yarn_cluster: YarnClusterInfo, monkeypatch: pytest.MonkeyPatch) -> Iterator[YarnClusterInfo]:
    """The Airflow worker's environment for YARN: HADOOP_CONF_DIR and a ``spark`` connection, no RM extra."""
    monkeypatch.setenv(HADOOP_CONF_DIR_ENV, str(yarn_cluster.hadoop_conf_dir))
    monkeypatch.setenv(f"AIRFLOW_CONN_{SPARK_CONN.upper()}", json.dumps(
        {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}))
    yield yarn_cluster
