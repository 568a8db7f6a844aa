"""``hdfs://`` checkpoint locations map to fsspec's ``webhdfs``; where the WebHDFS address comes from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fsspec.implementations.webhdfs import WebHDFS

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.checkpoint.webhdfs import is_hdfs_location, webhdfs_target
from airflow_provider_eos.core.errors import CheckpointError, PrerequisiteError
from airflow_provider_eos.core.hadoop_conf import ambient_hadoop_conf, read_hadoop_conf

LOCATION = "hdfs://nn.example:8020/eos/orders/checkpoint"
CONF = {"fs.defaultFS": "hdfs://nn.example:8020", "dfs.namenode.http-address": "nn-http.example:9870"}


def site_file(folder: Path, name: str, properties: dict[str, str]) -> None:
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in properties.items())
    (folder / name).write_text(f'<?xml version="1.0"?><configuration>{body}</configuration>')


def test_storage_option_port_is_the_address_and_the_host_defaults_to_the_namenode() -> None:
    target = webhdfs_target(LOCATION, {"port": "9870"}, {}, "etl")
    assert target.options == {"host": "nn.example", "port": 9870, "user": "etl"}
    assert target.path == "/eos/orders/checkpoint" and target.location_prefix == "hdfs://nn.example:8020"


def test_options_win_over_the_hadoop_configuration_and_keep_their_identity() -> None:
    target = webhdfs_target(LOCATION, {"host": "gateway", "port": 14000, "token": "t0k"}, CONF, "etl")
    assert target.options == {"host": "gateway", "port": 14000, "token": "t0k"}  # no user beside a token
    assert "t0k" not in repr(target)


def test_hadoop_configuration_of_the_same_namenode_gives_the_address() -> None:
    assert webhdfs_target(LOCATION, None, CONF, None).options == {"host": "nn-http.example", "port": 9870}
    wildcard = {**CONF, "dfs.namenode.http-address": "0.0.0.0:50070"}
    assert webhdfs_target(LOCATION, {}, wildcard, None).options == {"host": "nn.example", "port": 50070}
    https = {**CONF, "dfs.http.policy": "HTTPS_ONLY", "dfs.namenode.https-address": "nn.example:9871"}
    assert webhdfs_target(LOCATION, {}, https, None).options == {"host": "nn.example", "port": 9871,
                                                                 "use_https": True}


def test_a_location_without_namenode_takes_fs_default_fs() -> None:
    target = webhdfs_target("hdfs:///eos/c", {}, CONF, "etl")
    assert target.location_prefix == "hdfs://nn.example:8020" and target.path == "/eos/c"
    assert target.options["port"] == 9870
    with pytest.raises(CheckpointError, match="names no NameNode"):
        webhdfs_target("hdfs:///eos/c", {"port": 9870}, {}, "etl")


@pytest.mark.parametrize("conf", [{}, {**CONF, "fs.defaultFS": "hdfs://other:8020"}, {"fs.defaultFS": LOCATION[:22]}])
def test_no_webhdfs_address_is_a_typed_error_naming_both_fixes(conf: dict[str, str]) -> None:
    with pytest.raises(CheckpointError) as caught:
        webhdfs_target(LOCATION, {"user": "etl"}, conf, None)
    assert "no WebHDFS address" in caught.value.message
    assert "'port'" in caught.value.fix and "HADOOP_CONF_DIR" in caught.value.fix
    assert "dfs.namenode.http-address" in caught.value.fix


@pytest.mark.parametrize("port", ["http", 0, 70000, None])
def test_a_port_that_is_not_one_is_named(port: object) -> None:
    with pytest.raises(CheckpointError, match="not a port number"):
        webhdfs_target(LOCATION, {"port": port}, {}, None)


def test_reader_opens_hdfs_through_webhdfs_and_shows_paths_as_spark_knows_them() -> None:
    reader = CheckpointReader(LOCATION, {"port": 9870, "user": "etl"}, hadoop_conf={})
    assert isinstance(reader.fs, WebHDFS) and reader.fs.url == "http://nn.example:9870/webhdfs/v1"
    assert reader.fs.pars == {"user.name": "etl"}
    assert reader.root == "/eos/orders/checkpoint"
    assert reader.display(reader.path("offsets", "3")) == f"{LOCATION}/offsets/3"
    assert is_hdfs_location("HDFS://nn/x") and not is_hdfs_location("/tmp/hdfs://x")


def test_reader_finds_the_address_in_hadoop_conf_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site_file(tmp_path, "core-site.xml", {"fs.defaultFS": CONF["fs.defaultFS"]})
    site_file(tmp_path, "hdfs-site.xml", {"dfs.namenode.http-address": "127.0.0.1:9870"})
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    monkeypatch.setenv("HADOOP_USER_NAME", "spark")
    reader = CheckpointReader(LOCATION)
    assert reader.fs.url == "http://127.0.0.1:9870/webhdfs/v1" and reader.fs.pars == {"user.name": "spark"}
    monkeypatch.delenv("HADOOP_CONF_DIR")
    with pytest.raises(CheckpointError, match="no WebHDFS address"):
        CheckpointReader(LOCATION)


def test_hadoop_conf_reads_the_site_files_and_rejects_a_broken_one(tmp_path: Path) -> None:
    site_file(tmp_path, "core-site.xml", {"fs.defaultFS": "hdfs://a:1"})
    site_file(tmp_path, "yarn-site.xml", {"yarn.resourcemanager.webapp.address": "127.0.0.1:8088"})
    assert read_hadoop_conf(tmp_path) == {"fs.defaultFS": "hdfs://a:1",
                                          "yarn.resourcemanager.webapp.address": "127.0.0.1:8088"}
    assert ambient_hadoop_conf({"HADOOP_CONF_DIR": str(tmp_path / "absent")}) == {}
    (tmp_path / "hdfs-site.xml").write_text("<configuration><property>")
    with pytest.raises(PrerequisiteError, match=r"hdfs-site\.xml is not a Hadoop configuration"):
        read_hadoop_conf(tmp_path)


def test_the_driver_writer_with_an_hdfs_checkpoint_is_accepted_by_the_spec() -> None:
    from airflow_provider_eos.core.spec import PipelineSpec

    fields = {"name": "orders", "kafka": {"bootstrap.servers": "b:9092"}, "input_topics": ["in"],
              "output_topic": "out", "group_id": "g", "transactional_id_prefix": "orders-txn",
              "checkpoint_location": LOCATION}
    # Its tasks spill over WebHDFS with the driver's address (design note 39).
    assert PipelineSpec.from_dict({**fields, "writers": "driver"}).writers == "driver"
    assert PipelineSpec.from_dict({**fields, "writers": "executors"}).writers == "executors"


def test_the_readers_storage_options_reopen_the_same_webhdfs_without_a_hadoop_configuration() -> None:
    """What the driver writer's tasks get: the driver's resolved address and user, no HADOOP_CONF_DIR needed."""
    driver = CheckpointReader(LOCATION, {"user": "spark"}, hadoop_conf=CONF)
    assert driver.storage_options == {"host": "nn-http.example", "port": 9870, "user": "spark"}

    task = CheckpointReader(LOCATION, driver.storage_options, hadoop_conf={})

    assert isinstance(task.fs, WebHDFS) and task.fs.url == driver.fs.url == "http://nn-http.example:9870/webhdfs/v1"
    assert task.fs.pars == driver.fs.pars == {"user.name": "spark"}
    assert task.root == driver.root and task.display(task.path("eos")) == f"{LOCATION}/eos"
    with pytest.raises(CheckpointError, match="no WebHDFS address"):  # what a task without them would hit
        CheckpointReader(LOCATION, {"user": "spark"}, hadoop_conf={})


def test_a_non_hdfs_readers_storage_options_are_the_ones_it_was_given(tmp_path: Path) -> None:
    assert CheckpointReader(str(tmp_path)).storage_options == {}
    assert CheckpointReader("memory://eos-opts", {"skip_instance_cache": True}).storage_options == {
        "skip_instance_cache": True}


def test_webhdfs_connection_gives_the_address_and_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.common.compat.sdk import AirflowException

    from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook

    monkeypatch.setenv("AIRFLOW_CONN_EOS_HDFS", json.dumps(
        {"conn_type": "webhdfs", "host": "nn-http", "port": 9870, "login": "etl", "extra": {"use_ssl": True}}))
    hook = CheckpointStorageHook("eos_hdfs")
    assert hook.get_storage_options(LOCATION) == {"host": "nn-http", "port": 9870, "user": "etl", "use_https": True}
    reader = hook.get_reader(LOCATION)
    assert reader.fs.url == "https://nn-http:9870/webhdfs/v1" and reader.fs.pars == {"user.name": "etl"}
    with pytest.raises(AirflowException, match="'webhdfs'"):
        hook.get_storage_options("s3://bucket/c")
    monkeypatch.setenv("AIRFLOW_CONN_EOS_GENERIC", json.dumps({"conn_type": "generic", "extra": {"port": 9870}}))
    assert CheckpointStorageHook("eos_generic").get_reader(LOCATION).fs.url == "http://nn.example:9870/webhdfs/v1"


def test_a_namenode_error_without_a_python_type_is_an_os_error_naming_the_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # fsspec's webhdfs raises a RemoteException it has no type for as RuntimeError; a lease read
    # while its driver rewrites it in place met "Block could not be located" (design note 48).
    reader = CheckpointReader(LOCATION, {"port": 9870})

    def rewritten(path: str) -> bytes:
        raise RuntimeError(f"Block could not be located. Path={path}, offset=0")

    monkeypatch.setattr(reader.fs, "cat_file", rewritten)
    with pytest.raises(OSError, match=r"checkpoint file hdfs://nn\.example:8020/eos/orders/checkpoint/eos/x\.json "
                       r"could not be read: Block could not be located"):
        reader.read_text(reader.path("eos", "x.json"), "a record")
