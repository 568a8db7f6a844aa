"""One service per test run, shared by every pytest-xdist worker.

A broker, a Spark standalone cluster, a YARN MiniCluster or an Airflow deployment takes seconds to
minutes of JVM and Python start-up; one per worker doubles that and the memory the workers compete
for. The first worker to need a service starts it in a folder beside the workers' own; each worker
counts itself in and out under an ``flock``, and the last one out stops it. The service is tied to the
pytest controller's pid, so a reaper stops it if the whole run is killed.

A worker that joins a running service takes what the first one's ``start`` returned (pickled
beside it) and never calls ``start`` itself: a service's ``up()`` restarts one that looks partly
down, and a test of the other worker may be holding one of its nodes down on purpose.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _count_users(path: Path, change: int) -> int:
    count = (int(path.read_text() or 0) if path.exists() else 0) + change
    path.write_text(str(count))
    return count


@contextlib.contextmanager
def shared_service(
    tmp_path_factory: pytest.TempPathFactory,
    worker_id: str,
    name: str,
    start: Callable[[Path, int], T],
    stop: Callable[[Path], None],
) -> Iterator[T]:
    """Yield the run's one ``name`` service: ``start(folder, owner_pid)`` by the first worker, what it
    returned for the others, ``stop(folder)`` by the last one out.

    :param worker_id: pytest-xdist's ``worker_id`` fixture (``master`` without xdist).
    :param start: starts the service in ``folder`` (or returns the running one); ``owner_pid`` is the
        process whose death must stop it (the xdist controller, which outlives every worker).
    """
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base
    folder = shared / name
    lock, users = shared / f"{name}.lock", shared / f"{name}.users"
    owner = os.getppid() if worker_id != "master" else os.getpid()
    handed = shared / f"{name}.pickle"
    with _locked(lock):
        if _count_users(users, 0) > 0:
            service = pickle.loads(handed.read_bytes())
        else:
            service = start(folder, owner)
            handed.write_bytes(pickle.dumps(service))
        _count_users(users, +1)
    try:
        yield service
    finally:
        with _locked(lock):
            if _count_users(users, -1) <= 0:
                handed.unlink(missing_ok=True)
                stop(folder)
