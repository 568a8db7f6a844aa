"""One state-changing devstack command at a time in a state folder: an OS lock on a file in it.

``eos devstack up|down|broker`` and ``eos airflow up|down`` write the folder's state files and
choose its ports; two of them at once overwrote each other's files and both failed, leaving
nothing running. Each now holds :func:`fcntl.flock` on :data:`~.state_folder.LOCK` in the folder
while it runs; the second one fails at once (:class:`StateFolderBusyError`) naming the first.
``status`` takes no lock: it only reads, and must answer while an ``up`` waits on a broker.

The kernel drops a flock when its holder's process ends, however it ends (SIGKILL included), so a
lock never outlives its command the way a pid file can. The file's text (pid, command, since) is
only what the refusal shows; the lock is the flock, never the text. The lock is taken before the
folder is claimed, so a folder the devstack did not make is refused first and gets no lock file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from airflow_provider_eos.core.errors import DevstackError, StateFolderBusyError
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.state_folder import LOCK, StateFolder

__all__ = ["LockHolder", "hold_state_folder"]

#: Times the lock file is opened again when the holder removed it (``down`` removing the folder)
#: between this command's open and its lock: each time the holder was done, so two are plenty.
_REOPENS = 5


@dataclass(frozen=True)
class LockHolder:
    """Who holds a state folder's lock, as its lock file says."""

    pid: int
    command: str
    #: When it took the lock (UTC, ISO 8601).
    since: str

    def describe(self) -> str:
        return f"pid {self.pid} ({self.command}, since {self.since})"


@contextlib.contextmanager
def hold_state_folder(state_dir: Path, command: str) -> Iterator[LockHolder]:
    """Hold the lock of ``state_dir`` while the ``with`` block runs; fail at once if another command holds it.

    :param state_dir: the state folder (absolute, as the parts resolve it); made if missing, and
        removed again afterwards if the command left nothing in it. The lock file is removed afterwards.
    :param command: what holds it, as the refusal names it (``eos devstack up``).
    :raises StateFolderBusyError: another process holds the lock: naming the folder, the holder and the fix.
    :raises DevstackError: the folder is not the devstack's (refused before any file is written).
    """
    StateFolder(state_dir).check()
    created = not state_dir.exists()
    holder = LockHolder(os.getpid(), command, datetime.now(UTC).isoformat(timespec="seconds"))
    fd = _lock(state_dir, holder)
    try:
        yield holder
    finally:
        _unlock(fd, state_dir, created=created)


def _lock(state_dir: Path, holder: LockHolder) -> int:
    path = state_dir / LOCK
    for _ in range(_REOPENS):
        try:
            state_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            continue  # the holder removed the folder between the two calls: it is done
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            found = _read_holder(fd)
            os.close(fd)
            raise _busy(state_dir, found) from None
        if _still_there(fd, path):
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(asdict(holder)).encode(), 0)
            return fd
        os.close(fd)  # locked a file the holder removed as it finished: lock the one there now
    raise DevstackError(f"could not lock {path}: it was removed {_REOPENS} times as it was locked.",
                        fix="run the command again once the other devstack commands on the folder are done.")


def _still_there(fd: int, path: Path) -> bool:
    """Whether the locked file is still the one at ``path`` (not one unlinked by the holder before it let go)."""
    try:
        at_path = path.stat()
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (at_path.st_dev, at_path.st_ino)


def _read_holder(fd: int) -> LockHolder | None:
    try:
        return LockHolder(**json.loads(os.pread(fd, 4096, 0)))
    except (OSError, ValueError, TypeError):
        return None  # not written yet: the holder has only just locked it


def _busy(state_dir: Path, holder: LockHolder | None) -> StateFolderBusyError:
    # A holder whose pid is gone wrote the text, was killed, and the lock is a new command's that
    # has not written its own yet: its text would name the wrong one.
    who = holder.describe() if holder is not None and pid_alive(holder.pid) else "a command that is just starting"
    return StateFolderBusyError(
        f"another devstack command is changing the state folder {state_dir}: {who}.",
        fix=f"wait until it finishes (`eos devstack status --state-dir {state_dir}` shows what runs), or pass "
        "another --state-dir for a devstack of its own.",
    )


def _unlock(fd: int, state_dir: Path, *, created: bool) -> None:
    """Remove the lock file, and the folder if this command made it and left nothing in it; then let go.

    The file goes while still locked: a command that opened it meanwhile finds, once it has the
    lock, that the path no longer names it, and locks a file of its own (:func:`_still_there`). So
    the folder holds the file only while a command runs (or after one was killed).
    """
    try:
        if _still_there(fd, state_dir / LOCK):
            (state_dir / LOCK).unlink()
            if created and not any(state_dir.iterdir()):  # a refused option, a `down` of nothing
                state_dir.rmdir()
    finally:
        os.close(fd)  # the lock goes with the file description
