"""The tests' Spark driver class archive: written once under a lock, mapped by every later spark-submit."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from tests.support import class_archive


@pytest.fixture
def archive_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(class_archive, "CACHE_DIR", tmp_path)
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    return tmp_path


def test_no_archive_no_options(archive_dir: Path) -> None:
    assert class_archive.submit_options() == ""
    class_archive.use_in_this_process()
    assert "SPARK_SUBMIT_OPTS" not in os.environ


def test_a_completed_run_promotes_its_archive_and_later_runs_map_it(archive_dir: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dx=1")
    with class_archive.writing_archive() as env:
        assert env is not None and "-XX:ArchiveClassesAtExit=" in env["SPARK_SUBMIT_OPTS"]
        partial = Path(env["SPARK_SUBMIT_OPTS"].split("=", 1)[1].split()[0])
        partial.write_bytes(b"jsa")  # what the driver JVM writes at exit
        class_archive.promote(env)
    archive = class_archive.archive_path()
    assert archive.read_bytes() == b"jsa" and not partial.exists()
    assert f"-XX:SharedArchiveFile={archive}" in class_archive.submit_options()
    # promote() put it into this process's environment, after what was there; never twice.
    assert os.environ["SPARK_SUBMIT_OPTS"].startswith(f"-Dx=1 -XX:SharedArchiveFile={archive}")
    class_archive.use_in_this_process()
    assert os.environ["SPARK_SUBMIT_OPTS"].count("SharedArchiveFile") == 1
    with class_archive.writing_archive() as again:
        assert again is None


def test_a_failed_run_leaves_no_archive(archive_dir: Path) -> None:
    with class_archive.writing_archive() as env:
        assert env is not None
        Path(env["SPARK_SUBMIT_OPTS"].split("=", 1)[1].split()[0]).write_bytes(b"half")
    assert not class_archive.archive_path().exists()
    assert list(archive_dir.glob("*.partial")) == []


def test_another_worker_writing_it_means_this_run_does_not(archive_dir: Path) -> None:
    archive = class_archive.archive_path()
    with (archive.parent / f"{archive.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with class_archive.writing_archive() as env:
            assert env is None
