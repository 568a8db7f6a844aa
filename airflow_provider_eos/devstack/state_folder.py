"""The devstack's state folder: the one place that decides what in it the devstack may remove.

``--state-dir`` is the user's to choose, and a slip (``--state-dir ~``) must not cost a home
folder. So the devstack removes nothing from a folder it did not make. :meth:`StateFolder.claim`
creates the folder, or adopts an empty one, and writes the marker :data:`MARKER` in it; every
removal (:meth:`StateFolder.clear`) first checks the marker, and then removes only the entries its
caller names, each part (the broker, the Spark cluster, the Hadoop MiniCluster, the Airflow
deployment) naming its own files and folders. What else the folder holds (a file the user put
there) stays, and so does the folder: it goes (:meth:`StateFolder.release`) only once nothing but
the marker is left.

The folder also holds :data:`LOCK`, the file a state-changing command locks while it runs
(:mod:`.state_lock`): the devstack's own, never taken for the user's, and removed with the marker.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from airflow_provider_eos.core.errors import DevstackError

__all__ = ["LOCK", "MARKER", "StateFolder"]

#: The file that makes a folder the devstack's: written when the devstack creates or adopts it.
MARKER = ".eos-devstack"
#: The file a state-changing command holds an OS lock on (:mod:`.state_lock`); the devstack's too.
LOCK = ".eos-devstack.lock"
_MARKER_TEXT = ("This folder was made by `eos devstack` (airflow-provider-eos): `eos devstack down` removes the\n"
                "files the devstack wrote here, and the folder once nothing else is left in it.\n")


class StateFolder:
    """A devstack state folder, made or adopted by the devstack, from which only named entries are removed.

    :param path: the folder (``--state-dir``).
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    @property
    def marked(self) -> bool:
        """Whether the devstack made (or adopted) this folder."""
        return (self.path / MARKER).is_file()

    def claim(self) -> Path:
        """Make the folder the devstack's: create it, adopt it when empty, keep it when the devstack made it.

        :returns: the folder.
        :raises DevstackError: it is not a folder, or holds what the devstack did not put there.
        """
        if self.path.is_dir() and self.marked:
            return self.path
        self._refuse_foreign()
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / MARKER).write_text(_MARKER_TEXT)
        return self.path

    def check(self) -> None:
        """Refuse, before anything is stopped or removed, a folder the devstack may not clear.

        A missing or empty folder passes (nothing in it to harm), as does a folder the devstack made.

        :raises DevstackError: it is not a folder, or holds what the devstack did not put there.
        """
        if not self.marked:
            self._refuse_foreign()

    def clear(self, *entries: str) -> None:
        """Remove ``entries`` of the folder: names, or glob patterns, of its direct children.

        :raises DevstackError: the folder holds what the devstack did not put there (see :meth:`check`).
        """
        self.check()
        if not self.marked:
            return  # missing or empty: nothing to remove
        for pattern in entries:
            if "/" in pattern or pattern in ("", ".", "..", MARKER, LOCK):
                raise ValueError(f"{pattern!r} is not an entry of the folder")  # a caller's bug, not the user's
            for path in self.path.glob(pattern):
                _remove(path)

    def clear_if_empty(self, *folders: str) -> None:
        """Remove the named folders of the folder that are empty (the devstack made them for the user to fill)."""
        self.check()
        for name in folders:
            path = self.path / name
            if self.marked and path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
                path.rmdir()

    def release(self) -> tuple[str, ...]:
        """Remove the folder if nothing but the marker (and the lock file) is left in it.

        Called under the lock (:mod:`.state_lock`), whose file goes too: a command waiting on it
        finds the file gone and locks the one it creates.

        :returns: the names of what it still holds (nothing once removed): the folder then stays.
        """
        if not self.marked:
            return ()
        left = tuple(sorted(p.name for p in self.path.iterdir() if p.name not in (MARKER, LOCK)))
        if not left:
            (self.path / LOCK).unlink(missing_ok=True)
            (self.path / MARKER).unlink()
            self.path.rmdir()
        return left

    def _refuse_foreign(self) -> None:
        if self.path.exists() and not self.path.is_dir():
            raise DevstackError(f"the devstack state folder {self.path} is not a folder.",
                                fix="pass --state-dir a new or empty folder, or one the devstack made.")
        if not self.path.is_dir():
            return
        found = sorted(p.name for p in self.path.iterdir() if p.name != LOCK)
        if found:
            shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
            raise DevstackError(
                f"{self.path} was not made by the devstack (it has no {MARKER}) and holds {shown}: the devstack "
                "removes nothing from a folder it did not make.",
                fix=f"pass --state-dir a new or empty folder, or one the devstack made. If {self.path} is a devstack "
                f"folder of a version before the marker, stop what it runs and `touch {self.path / MARKER}`.",
            )


def _remove(path: Path) -> None:
    # A link is removed, never followed: what it points to is not in the folder.
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)
