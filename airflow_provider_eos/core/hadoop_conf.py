"""A Hadoop client configuration (``HADOOP_CONF_DIR``) read as plain properties, without Hadoop.

The machine that runs spark-submit against YARN or HDFS has a client configuration folder:
``core-site.xml`` (``fs.defaultFS``), ``hdfs-site.xml`` (the NameNode's HTTP address, where
WebHDFS answers) and ``yarn-site.xml`` (the ResourceManager's web address, where its REST API
answers). Reading those few properties lets the checkpoint reader and the submit operator find
HDFS and YARN the way Hadoop's own clients do, with no native library and no JVM.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from pathlib import Path

from airflow_provider_eos.core.errors import PrerequisiteError

__all__ = ["HADOOP_CONF_DIR_ENV", "SITE_FILES", "ambient_hadoop_conf", "read_hadoop_conf"]

HADOOP_CONF_DIR_ENV = "HADOOP_CONF_DIR"
#: The client files read, in Hadoop's order (a later file's value wins, as Hadoop's resources do).
SITE_FILES = ("core-site.xml", "hdfs-site.xml", "yarn-site.xml")


def read_hadoop_conf(conf_dir: Path | str) -> dict[str, str]:
    """The ``<property>`` name/value pairs of the site files in ``conf_dir`` (absent files are skipped).

    :raises PrerequisiteError: a site file is not a Hadoop configuration XML file.
    """
    properties: dict[str, str] = {}
    for name in SITE_FILES:
        path = Path(conf_dir) / name
        if not path.is_file():
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
    """The client configuration ``HADOOP_CONF_DIR`` names; ``{}`` when it is unset or not a folder."""
    conf_dir = (os.environ if environ is None else environ).get(HADOOP_CONF_DIR_ENV)
    if not conf_dir or not Path(conf_dir).is_dir():
        return {}
    return read_hadoop_conf(conf_dir)
