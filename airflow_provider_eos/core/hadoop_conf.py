"""A Hadoop client configuration (``HADOOP_CONF_DIR``, ``YARN_CONF_DIR``) read as plain properties, without Hadoop.

The machine that runs spark-submit against YARN or HDFS has a client configuration folder:
``core-site.xml`` (``fs.defaultFS``), ``hdfs-site.xml`` (the NameNode's HTTP address, where
WebHDFS answers) and ``yarn-site.xml`` (the ResourceManager's web address, where its REST API
answers). Reading those few properties lets the checkpoint reader and the submit operator find
HDFS and YARN the way Hadoop's own clients do, with no native library and no JVM.

Both folders count, as on spark-submit's classpath: ``HADOOP_CONF_DIR`` first, then
``YARN_CONF_DIR``; each site file is read from the first folder that holds it (Hadoop's
configuration loads a resource from the first classpath entry that has it).
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from pathlib import Path

from airflow_provider_eos.core.errors import PrerequisiteError

__all__ = ["CONF_DIR_ENVS", "HADOOP_CONF_DIR_ENV", "SITE_FILES", "YARN_CONF_DIR_ENV", "ambient_hadoop_conf",
           "read_hadoop_conf", "resourcemanager_webapp_address"]

HADOOP_CONF_DIR_ENV = "HADOOP_CONF_DIR"
YARN_CONF_DIR_ENV = "YARN_CONF_DIR"
#: The client configuration folders, in spark-submit's classpath order.
CONF_DIR_ENVS = (HADOOP_CONF_DIR_ENV, YARN_CONF_DIR_ENV)
#: The ResourceManager's web port when yarn-site.xml names only its host (yarn-default.xml's default address).
RESOURCEMANAGER_WEBAPP_PORT = 8088
#: The client files read, in Hadoop's order (a later file's value wins, as Hadoop's resources do).
SITE_FILES = ("core-site.xml", "hdfs-site.xml", "yarn-site.xml")


def read_hadoop_conf(conf_dir: Path | str, *more_dirs: Path | str) -> dict[str, str]:
    """The ``<property>`` name/value pairs of the site files in ``conf_dir`` (absent files are skipped).

    :param more_dirs: further folders, looked in for a site file ``conf_dir`` does not hold (classpath order).
    :raises PrerequisiteError: a site file is not a Hadoop configuration XML file.
    """
    properties: dict[str, str] = {}
    for name in SITE_FILES:
        path = next((Path(folder) / name for folder in (conf_dir, *more_dirs) if (Path(folder) / name).is_file()),
                    None)
        if path is None:
            continue
        try:
            root = ElementTree.parse(path).getroot()
        except ElementTree.ParseError as err:
            raise PrerequisiteError(
                f"{path} is not a Hadoop configuration file ({err})",
                fix=f"repair the file, or point {HADOOP_CONF_DIR_ENV} at the cluster's client configuration",
            ) from err
        for prop in root.iter("property"):
            key, value = prop.findtext("name"), prop.findtext("value")
            if key and value is not None:
                properties[key.strip()] = value.strip()
    return properties


def ambient_hadoop_conf(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The client configuration ``HADOOP_CONF_DIR`` and ``YARN_CONF_DIR`` name; ``{}`` when neither is a folder."""
    environ = os.environ if environ is None else environ
    folders = [folder for folder in dict.fromkeys(environ.get(name) for name in CONF_DIR_ENVS)
               if folder and Path(folder).is_dir()]
    return read_hadoop_conf(*folders) if folders else {}


def resourcemanager_webapp_address(conf: Mapping[str, str]) -> str | None:
    """The ResourceManager's web address in a client configuration, as YARN's clients find it; ``None`` without one.

    With ResourceManager HA (``yarn.resourcemanager.ha.rm-ids``) that of the first id that has one
    (``yarn.resourcemanager.webapp.address.<rm-id>``: a standby redirects REST requests to the
    active one), else ``yarn.resourcemanager.webapp.address``. An address left out is Hadoop's
    default, the ResourceManager's host name (``yarn.resourcemanager.hostname[.<rm-id>]``) and port
    8088; ``${property}`` in a value is that property's value, as in Hadoop's configuration.
    """
    rm_ids = [rm_id.strip() for rm_id in conf.get("yarn.resourcemanager.ha.rm-ids", "").split(",") if rm_id.strip()]
    for suffix in [*(f".{rm_id}" for rm_id in rm_ids), ""]:
        host = _expanded(conf, conf.get(f"yarn.resourcemanager.hostname{suffix}", ""))
        address = _expanded(conf, conf.get(f"yarn.resourcemanager.webapp.address{suffix}", ""),
                            {"yarn.resourcemanager.hostname": host or ""})
        if address:
            return address
        if host:
            return f"{host}:{RESOURCEMANAGER_WEBAPP_PORT}"
    return None


def _expanded(conf: Mapping[str, str], value: str, given: Mapping[str, str] | None = None) -> str | None:
    """``value`` with each ``${property}`` replaced by its value; ``None`` when empty or one is unknown."""
    value = value.strip()
    for key in re.findall(r"\$\{([^}]+)\}", value):
        known = (given or {}).get(key) or conf.get(key, "").strip()
        if not known or "${" in known:
            return None
        value = value.replace(f"${{{key}}}", known)
    return value or None
