"""Where the submit operator's cluster manager keeps its record of the application, from the ``spark`` connection.

The ResourceManager's web address serves YARN twice: the Spark provider follows and kills a
cluster-mode application through its REST API (``yarn_track_via_rm_api``), and every worker asks
it whether the run's driver is gone (the handle's ``manager_url``). It is the connection extra
``yarn_resourcemanager_webapp_address`` (the provider's), else the one spark-submit's Hadoop client
configuration names (``HADOOP_CONF_DIR``, ``YARN_CONF_DIR``:
:func:`~airflow_provider_eos.core.hadoop_conf.resourcemanager_webapp_address`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_provider_eos.core.cluster_records import manager_web_url
from airflow_provider_eos.core.errors import SubmissionError
from airflow_provider_eos.core.hadoop_conf import (
    CONF_DIR_ENVS,
    HADOOP_CONF_DIR_ENV,
    ambient_hadoop_conf,
    resourcemanager_webapp_address,
)

if TYPE_CHECKING:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

__all__ = ["STANDALONE_WEBUI_EXTRA", "YARN_RM_EXTRA", "connection_extra", "manager_url", "required_resourcemanager"]

#: The ``spark`` connection's extra naming a standalone master's web UI (its record of applications).
STANDALONE_WEBUI_EXTRA = "spark_master_webui_url"
#: The Spark provider's connection extra naming the ResourceManager's web address.
YARN_RM_EXTRA = "yarn_resourcemanager_webapp_address"


def connection_extra(hook: SparkSubmitHook, conn_id: str) -> dict[str, object]:
    """The connection's extra; ``{}`` when there is no such connection (the hook's defaults apply)."""
    try:
        return dict(hook.get_connection(conn_id).extra_dejson)
    except Exception:  # no such connection: the hook's defaults apply, and no extra
        return {}


def _configured(environment: Mapping[str, str]) -> str | None:
    return resourcemanager_webapp_address(ambient_hadoop_conf(environment))


def required_resourcemanager(hook: SparkSubmitHook, conn_id: str, environment: Mapping[str, str]) -> str:
    """The ResourceManager's web URL for a YARN cluster-mode submit: the extra's, else the Hadoop configuration's.

    :param environment: spark-submit's environment (where ``HADOOP_CONF_DIR`` and ``YARN_CONF_DIR`` are read).
    :raises SubmissionError: neither names it: a cluster-mode driver would be seen by nothing but
        its lease, stop_stream could not kill it, and the provider's durable tracking (its default)
        refuses the submit anyway (docs/design-notes.md, note 66).
    """
    address = str(connection_extra(hook, conn_id).get(YARN_RM_EXTRA) or "").strip() or _configured(environment)
    if not address:
        raise SubmissionError(
            f"YARN cluster deploy mode (connection {conn_id!r}) without the ResourceManager's web address: the "
            f"connection has no extra {YARN_RM_EXTRA} and no yarn-site.xml in {' or '.join(CONF_DIR_ENVS)} names "
            "it, so the application could be neither followed nor stopped from Airflow",
            fix=f"set the extra {YARN_RM_EXTRA} of connection {conn_id!r} (e.g. http://rm.example.com:8088), or "
                f"{HADOOP_CONF_DIR_ENV} on the worker to the cluster's client configuration",
        )
    return str(manager_web_url("yarn", resourcemanager=address))


def manager_url(hook: SparkSubmitHook, conn_id: str, environment: Mapping[str, str]) -> str | None:
    """Where the cluster manager of the connection's master keeps its record of the application; ``None``: none does.

    Standalone: the extra ``spark_master_webui_url``, else the master's host, port 8080. YARN: the
    ResourceManager's web address (the extra, else the Hadoop configuration), in either deploy mode.
    """
    master = str(hook._connection["master"])
    extra = connection_extra(hook, conn_id)
    resourcemanager = str(extra.get(YARN_RM_EXTRA) or "").strip() or None
    if master.startswith("yarn") and not resourcemanager:
        resourcemanager = _configured(environment)
    webui = extra.get(STANDALONE_WEBUI_EXTRA)
    return manager_web_url(master, standalone_webui=str(webui) if webui else None, resourcemanager=resourcemanager)
