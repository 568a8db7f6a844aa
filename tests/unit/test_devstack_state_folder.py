"""The devstack removes nothing from a folder it did not make, and from its own only what it wrote there.

``--state-dir`` is the user's to choose; a slip (``--state-dir ~``) must not cost a home folder.
Every part that removes state is exercised: the broker, the Spark cluster, the Hadoop MiniCluster
and the Airflow deployment, ``up`` and ``down``. No JVM starts here: where an ``up`` would go on to
start one, the first step after the folder is prepared fails on purpose.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.devstack import broker, jars, yarn
from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow
from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.broker_state import BrokerInfo, NodeInfo
from airflow_provider_eos.devstack.recorded import RecordedDaemons
from airflow_provider_eos.devstack.spark_cluster import SparkCluster
from airflow_provider_eos.devstack.yarn import YarnMiniCluster

PARTS = [SparkCluster, YarnMiniCluster, LocalAirflow]


class StartReached(Exception):
    """Raised where an ``up`` would go on to start a process: the folder was accepted by then."""


def start_reached(*args: object, **kwargs: object) -> None:
    raise StartReached


#: A file of the user's, and files in sub-folders named as the devstack names its own.
USERS_FILES = {"notes.txt", "data/thesis.tex", "logs/diary.txt", "spark/job.py", "yarn/site.xml",
               "airflow/dags/mine.py"}


@pytest.fixture
def users_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    for name in USERS_FILES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("the user's")
    return folder


def files_of(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def refused(raised: pytest.ExceptionInfo[DevstackError], folder: Path) -> None:
    assert str(folder) in raised.value.message and "not made by the devstack" in raised.value.message
    assert raised.value.fix and "empty" in raised.value.fix


def refuses_untouched(action: Callable[[], object], folder: Path) -> None:
    """``action`` refuses ``folder`` with the devstack's error, and every file of the user's is still there."""
    with pytest.raises(DevstackError) as raised:
        action()
    refused(raised, folder)
    assert files_of(folder) == USERS_FILES


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def test_the_broker_down_refuses_a_users_folder_and_leaves_it_untouched(users_folder: Path) -> None:
    refuses_untouched(lambda: LocalKafka(users_folder).down(), users_folder)


def test_the_broker_up_refuses_a_users_folder_before_it_removes_anything(users_folder: Path, monkeypatch) -> None:
    monkeypatch.setattr(broker, "require_java", start_reached)
    refuses_untouched(lambda: LocalKafka(users_folder).up(), users_folder)


@pytest.mark.parametrize("part", PARTS, ids=lambda part: part.__name__)
def test_a_clusters_down_refuses_a_users_folder_and_leaves_it_untouched(
        users_folder: Path, part: type[RecordedDaemons]) -> None:
    refuses_untouched(lambda: part(users_folder).down(), users_folder)


@pytest.mark.parametrize("part", PARTS, ids=lambda part: part.__name__)
def test_a_clusters_up_refuses_a_users_folder_before_it_removes_anything(
        users_folder: Path, part: type[RecordedDaemons], monkeypatch) -> None:
    monkeypatch.setattr(jars, "require_java", start_reached)
    monkeypatch.setattr(yarn, "require_java", start_reached)
    monkeypatch.setattr(LocalAirflow, "_airflow", start_reached)
    refuses_untouched(lambda: part(users_folder).up(), users_folder)


def test_a_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "some-file"
    target.write_text("the user's")
    with pytest.raises(DevstackError, match="not a folder"):
        LocalKafka(target).up()
    assert target.read_text() == "the user's"


def devstack_folder(tmp_path: Path) -> Path:
    """A folder the devstack made, holding a stale single-node broker's files (its pid is gone)."""
    from airflow_provider_eos.devstack.state_folder import StateFolder

    folder = StateFolder(tmp_path / "devstack").claim()
    node = NodeInfo(1, dead_pid(), 1, 2, str(folder))
    (folder / "devstack.json").write_text(BrokerInfo(node.pid, 1, 2, str(folder), 1000, nodes=(node,)).to_json())
    for name in ("server.properties", "data/__cluster_metadata-0/0.log", "logs/server.log"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("the devstack's")
    return folder


def test_the_broker_down_removes_a_devstack_folder_it_made(tmp_path: Path) -> None:
    folder = devstack_folder(tmp_path)
    done = LocalKafka(folder).down()
    assert not folder.exists() and not done and done.kept == ()


def test_the_broker_down_removes_only_its_own_files_from_its_folder(tmp_path: Path) -> None:
    folder = devstack_folder(tmp_path)
    (folder / "mine.txt").write_text("the user's")
    done = LocalKafka(folder).down()
    assert files_of(folder) == {"mine.txt", ".eos-devstack"} and done.kept == ("mine.txt",)


def test_the_broker_up_clears_only_the_stale_brokers_files(tmp_path: Path, monkeypatch) -> None:
    folder = devstack_folder(tmp_path)
    (folder / "mine.txt").write_text("the user's")
    monkeypatch.setattr(broker, "require_java", start_reached)
    with pytest.raises(StartReached):
        LocalKafka(folder).up()
    assert files_of(folder) == {"mine.txt", ".eos-devstack"}


def test_an_empty_folder_is_adopted_and_removed_again(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    monkeypatch.setattr(broker, "require_java", start_reached)
    with pytest.raises(StartReached):
        LocalKafka(folder).up()
    assert files_of(folder) == {".eos-devstack"}
    LocalKafka(folder).down()
    assert not folder.exists()


@pytest.mark.parametrize("part", PARTS, ids=lambda part: part.__name__)
def test_a_clusters_down_removes_only_its_own_files_from_a_devstack_folder(
        tmp_path: Path, part: type[RecordedDaemons]) -> None:
    from airflow_provider_eos.devstack.state_folder import StateFolder

    folder = StateFolder(tmp_path / "devstack").claim()
    cluster = part(folder)
    (cluster.work_dir / "logs").mkdir(parents=True)
    (cluster.work_dir / "logs" / "x.log").write_text("the devstack's")
    cluster.state_file.write_text("{not json")  # unreadable: it names nothing to stop, and is removed
    (folder / "mine.txt").write_text("the user's")
    assert cluster.down() is False
    assert files_of(folder) == {"mine.txt", ".eos-devstack"}
    (folder / "mine.txt").unlink()
    assert cluster.down() is False and not folder.exists(), "with only its marker left, the folder goes"


def test_the_airflow_pipelines_folder_goes_only_when_empty(tmp_path: Path) -> None:
    from airflow_provider_eos.devstack.state_folder import StateFolder

    folder = StateFolder(tmp_path / "devstack").claim()
    (folder / "pipelines").mkdir()
    (folder / "pipelines" / "orders.yaml").write_text("the user's spec")
    LocalAirflow(folder).down()
    assert files_of(folder) == {"pipelines/orders.yaml", ".eos-devstack"}
    (folder / "pipelines" / "orders.yaml").unlink()
    LocalAirflow(folder).down()
    assert not folder.exists()
