"""The Hadoop client configuration read without Hadoop: both folders, and the ResourceManager's web address."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_eos.core.hadoop_conf import ambient_hadoop_conf, resourcemanager_webapp_address


def _site(folder: Path, name: str, **properties: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in properties.items())
    (folder / name).write_text(f"<configuration>{body}</configuration>")
    return folder


def test_each_site_file_comes_from_the_first_folder_that_holds_it_hadoop_conf_dir_first(tmp_path: Path) -> None:
    hadoop = _site(tmp_path / "hadoop", "core-site.xml", **{"fs.defaultFS": "hdfs://nn:8020"})
    yarn = _site(tmp_path / "yarn", "yarn-site.xml", **{"yarn.resourcemanager.webapp.address": "rm-y:8088"})
    _site(yarn, "core-site.xml", **{"fs.defaultFS": "hdfs://other:8020"})
    conf = ambient_hadoop_conf({"HADOOP_CONF_DIR": str(hadoop), "YARN_CONF_DIR": str(yarn)})
    assert conf["fs.defaultFS"] == "hdfs://nn:8020"  # HADOOP_CONF_DIR's, as on spark-submit's classpath
    assert conf["yarn.resourcemanager.webapp.address"] == "rm-y:8088"  # only YARN_CONF_DIR has yarn-site.xml
    _site(hadoop, "yarn-site.xml", **{"yarn.resourcemanager.webapp.address": "rm-h:8088"})
    conf = ambient_hadoop_conf({"HADOOP_CONF_DIR": str(hadoop), "YARN_CONF_DIR": str(yarn)})
    assert conf["yarn.resourcemanager.webapp.address"] == "rm-h:8088"
    assert ambient_hadoop_conf({"YARN_CONF_DIR": str(yarn)})["fs.defaultFS"] == "hdfs://other:8020"
    assert ambient_hadoop_conf({"HADOOP_CONF_DIR": str(tmp_path / "absent")}) == {}


@pytest.mark.parametrize(("conf", "address"), [
    ({"yarn.resourcemanager.webapp.address": "rm:8088"}, "rm:8088"),
    ({"yarn.resourcemanager.hostname": "rm"}, "rm:8088"),  # yarn-default.xml's ${yarn.resourcemanager.hostname}:8088
    ({"yarn.resourcemanager.webapp.address": "${yarn.resourcemanager.hostname}:8090",
      "yarn.resourcemanager.hostname": "rm"}, "rm:8090"),
    ({"yarn.resourcemanager.ha.rm-ids": "rm1, rm2", "yarn.resourcemanager.webapp.address.rm1": "a:8088",
      "yarn.resourcemanager.webapp.address.rm2": "b:8088"}, "a:8088"),
    ({"yarn.resourcemanager.ha.rm-ids": "rm1,rm2", "yarn.resourcemanager.hostname.rm2": "b"}, "b:8088"),
    ({"yarn.resourcemanager.ha.rm-ids": "rm1", "yarn.resourcemanager.webapp.address.rm1":
      "${yarn.resourcemanager.hostname.rm1}:8088", "yarn.resourcemanager.hostname.rm1": "a1"}, "a1:8088"),
    ({"yarn.resourcemanager.webapp.address": "${yarn.resourcemanager.hostname}:8088"}, None),  # the host unknown
    ({"fs.defaultFS": "hdfs://nn:8020"}, None),
])
def test_the_resourcemanager_web_address_as_yarns_clients_find_it(conf: dict[str, str], address: str | None) -> None:
    assert resourcemanager_webapp_address(conf) == address
