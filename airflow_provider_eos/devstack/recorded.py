"""A devstack part whose daemons are recorded in a state file, so any process can find and stop them.

The Spark standalone cluster and the Hadoop MiniCluster share the lifecycle: ``up`` records what
it started in ``<state folder>/<state file>`` (a pydantic model), ``status`` and ``down`` in
another process read it back, ``down`` stops each recorded process group (SIGTERM, then SIGKILL)
and removes the part's work folder, and a detached reaper stops it when the process that asked
for it dies. Each part says only what is its own: the model, its error type, the processes to
stop (pid -> the JVM main class its command line must still hold) and its work folder. The state
folder is a :class:`~airflow_provider_eos.devstack.state_folder.StateFolder`: ``up`` claims it,
and ``down`` removes only the part's own files, from a folder the devstack made.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.devstack.broker import default_state_dir
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.process_groups import Marker, start_reaper, stop_groups
from airflow_provider_eos.devstack.state_folder import StateFolder
from airflow_provider_eos.devstack.state_lock import hold_state_folder_to_reap

__all__ = ["RecordedDaemons"]

InfoT = TypeVar("InfoT", bound=BaseModel)


class RecordedDaemons(Generic[InfoT]):
    """Read, stop and reap the daemons a state file in ``state_dir`` records.

    :param state_dir: the devstack folder (shared with the broker); one of each part per folder.
    """

    #: The state file's name in the state folder.
    state_name: ClassVar[str]
    #: The part, as messages name it ("Spark cluster").
    what: ClassVar[str]
    #: Its work folder under the state folder (logs, data), removed by :meth:`down`.
    work_name: ClassVar[str]
    info_type: type[InfoT]
    error_type: ClassVar[type[DevstackError]]
    #: Folders of the state folder it makes for the user to fill (Airflow's pipelines): :meth:`down`
    #: removes them only when empty.
    user_folders: ClassVar[tuple[str, ...]] = ()

    def __init__(self, state_dir: Path | str | None = None) -> None:
        # Absolute at once: the JVMs get paths on their command lines (a relative one resolves against
        # their own working folder) and Airflow's SQLite URL refuses a relative path.
        self.state_dir = Path(state_dir).resolve() if state_dir else default_state_dir()

    @property
    def state_file(self) -> Path:
        return self.state_dir / self.state_name

    @property
    def work_dir(self) -> Path:
        return self.state_dir / self.work_name

    @property
    def folder(self) -> StateFolder:
        return StateFolder(self.state_dir)

    def _fresh_work_dir(self) -> Path:
        """Claim the state folder and empty the work folder (an earlier start's logs and data); return it.

        :raises DevstackError: the state folder is not the devstack's (see :meth:`StateFolder.claim`).
        """
        self.folder.claim()
        self.folder.clear(self.work_name)
        self.work_dir.mkdir()
        return self.work_dir

    def leaders(self, info: InfoT) -> dict[int, Marker]:
        """The process groups to stop: leader pid -> the main class its command line holds."""
        raise NotImplementedError

    def watched(self, info: InfoT) -> set[int]:
        """The pids whose set identifies one start of the part, for the reaper: by default its leaders'."""
        return set(self.leaders(info))

    def recorded(self) -> InfoT | None:
        """What the state file records (running or not), or None.

        :raises DevstackError: (the part's type) if the file is not this part's state file.
        """
        if not self.state_file.exists():
            return None
        try:
            return self.info_type.model_validate_json(self.state_file.read_text())
        except ValueError as exc:
            raise self.error_type(
                f"{self.state_file} is not a {self.what} state file ({exc}).",
                fix=f"stop the processes it names by hand, remove {self.state_file} and start again.",
            ) from exc

    def _record(self, info: InfoT) -> InfoT:
        # Atomic, and as each process starts: a `down` in another process must find every pid.
        partial = self.state_file.with_suffix(".tmp")
        partial.write_text(info.model_dump_json(indent=2))
        os.replace(partial, self.state_file)
        return info

    def down(self, *, timeout_s: float = 20, keep_logs: bool = False) -> bool:
        """Stop every recorded process group (SIGTERM, SIGKILL after ``timeout_s``) and their descendants.

        :param keep_logs: remove only the state file and keep the work folder (after a failed start).
        :returns: whether anything recorded was running.
        :raises DevstackError: (the part's type) if a process survives SIGKILL; the files are kept then.
            A state folder the devstack did not make is refused before anything is read or stopped.
        """
        self.folder.check()
        try:
            info = self.recorded()
        except DevstackError:
            info = None  # unreadable: it names nothing to stop; it is removed below
        was_running, survivors = stop_groups(self.leaders(info) if info else {}, timeout_s)
        if survivors:
            raise self.error_type(
                f"{self.what} processes {survivors} survived SIGKILL.",
                fix=f"inspect them (`ps -o pid,stat,cmd -p {','.join(map(str, survivors))}`; state D is stuck in "
                "the kernel), then run `eos devstack down` again.",
            )
        self.folder.clear(self.state_name, self.state_file.with_suffix(".tmp").name,
                          *(() if keep_logs else (self.work_name,)))
        self.folder.clear_if_empty(*self.user_folders)
        self.folder.release()
        return was_running

    def _start_reaper(self, owner_pid: int) -> None:
        start_reaper(type(self).__module__, owner_pid, self.state_dir)

    @classmethod
    def reap(cls, owner_pid: int, state_dir: str) -> None:
        """Stop what ``state_dir`` records once ``owner_pid`` dies (the body of the reaper process).

        Only what this reaper watched: by then the folder may record another start, or nothing. It
        stops it under the state folder's lock (waiting while a command changes the folder), so it
        never stops a part halfway through a command's ``up`` or ``down`` of it.
        """
        part = cls(state_dir)
        info = part.recorded()
        if info is None:
            return
        watched = part.watched(info)
        while pid_alive(owner_pid) and any(pid_alive(pid) for pid in watched):
            time.sleep(2)
        if pid_alive(owner_pid):
            return  # what it watched stopped while its owner lives: nothing of this start is left to reap
        with hold_state_folder_to_reap(part.state_dir, part.what) as there:
            current = part.recorded() if there and part.state_file.exists() else None
            if current is not None and part.watched(current) == watched:
                part.down()
