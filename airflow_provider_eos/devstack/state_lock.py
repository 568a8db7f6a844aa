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

The reapers (the detached processes that stop a part once the process that started it dies) take
the same lock with :func:`hold_state_folder_to_reap`: they wait for it instead of failing (a reaper
that gave up would leave its part running), and a process that already holds the folder's lock
and reaps in itself goes on under the lock it holds (waiting on it would wait on itself for ever).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from airflow_provider_eos.core.errors import DevstackError, StateFolderBusyError
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.state_folder import LOCK, StateFolder

__all__ = ["LockHolder", "hold_state_folder", "hold_state_folder_to_reap"]

#: Times the lock file is opened again when the holder removed it (``down`` removing the folder)
#: between this command's open and its lock: each time the holder was done, so two are plenty.
_REOPENS = 5

#: The folders this process holds the lock of, with the pid that took it (a forked child inherits
#: the dict, not the right to act as the holder). A flock is per open file, so a second lock of the
#: folder in the holding process would conflict with its own first one.
_held: dict[Path, int] = {}
_held_guard = threading.Lock()


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
    holder = _holder(command)
    fd = _lock(state_dir, holder)
    try:
        with _holding(state_dir):
            yield holder
    finally:
        _unlock(fd, state_dir, created=created)


@contextlib.contextmanager
def hold_state_folder_to_reap(state_dir: Path, part: str) -> Iterator[bool]:
    """Hold the lock of ``state_dir`` for a reaper's ``down``, waiting while a command holds it.

    A reaper acts once its owner died, while an ``eos devstack up`` or ``down`` may be changing the
    folder: it waits for that command to finish, then reads the folder anew (what it watched may be
    stopped or replaced by then). It never refuses and never makes the folder.

    :param state_dir: the state folder the part records its daemons in.
    :param part: the part, as the lock file names the holder (``broker`` gives ``reaper of the broker``).
    :returns: (as the ``with`` value) whether the folder is still there: ``False`` when a command
        removed it while the reaper waited (nothing is left to stop); no lock is held then.
    """
    state_dir = Path(state_dir)
    with _held_guard:
        mine = _held.get(state_dir) == os.getpid()
    if mine:  # this process holds it (a command reaping in itself): its lock covers the reaping
        yield state_dir.is_dir()
        return
    fd = _lock(state_dir, _holder(f"reaper of the {part}"), wait=True)
    if fd is None:
        yield False
        return
    try:
        with _holding(state_dir):
            yield True
    finally:
        _unlock(fd, state_dir, created=False)


def _holder(command: str) -> LockHolder:
    return LockHolder(os.getpid(), command, datetime.now(UTC).isoformat(timespec="seconds"))


@contextlib.contextmanager
def _holding(state_dir: Path) -> Iterator[None]:
    with _held_guard:
        _held[state_dir] = os.getpid()
    try:
        yield
    finally:
        with _held_guard:
            _held.pop(state_dir, None)


def _lock(state_dir: Path, holder: LockHolder, *, wait: bool = False) -> int | None:
    """Lock the folder's lock file and write ``holder`` in it; return the locked file's descriptor.

    :param wait: wait while another process holds it (a reaper), and return ``None`` if the folder
        is gone (never made anew); otherwise make the folder if missing and refuse at once.
    """
    path = state_dir / LOCK
    reopens = 0
    while wait or reopens < _REOPENS:
        reopens += 1
        try:
            if not wait:
                state_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            if wait:
                return None  # a command removed the folder (`down`): nothing is left to reap
            continue  # the holder removed the folder between the two calls: it is done
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
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
