"""Which checkpoint files a rewind moves, in which order, and where the backup goes.

File naming this module relies on (Apache Spark sources, ``sql/core/src/main/scala/org/
apache/spark/sql/execution/streaming/``):

* ``offsets/N`` and ``commits/N``: ``HDFSMetadataLog`` names batch files by the bare batch id.
* ``state/HDFSBackedStateStoreProvider.scala``: ``<version>.delta`` and
  ``<version>.snapshot``; ``state/RocksDBFileManager.scala``: ``<version>.zip`` and
  ``<version>.changelog`` (``<version>_<checkpoint id>.zip``/``.changelog`` with state
  checkpoint format v2), next to ``SSTs/`` and ``logs/`` that no version owns. Batch ``N``
  commits state version ``N+1``.
* ``state/OperatorStateMetadata.scala``: operator metadata v2 is ``_metadata/v2/<batch id>``.
* ``.crc`` sidecars: Hadoop's checksummed local file system writes ``.<name>.crc``;
  ``checkpointing/ChecksumCheckpointFileManager.scala`` writes ``<name>.crc``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

import pendulum

from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.frozen_model import FrozenModel

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = [
    "BACKUP_INFIX",
    "MANIFEST_NAME",
    "FileMove",
    "StateScan",
    "backup_dir_for",
    "is_sidecar",
    "log_moves",
    "move_order",
    "scan_state",
]

BACKUP_INFIX = ".eos-backup-"
"""Backup folders are ``<checkpoint>/../<checkpoint name>.eos-backup-<UTC timestamp>``."""

MANIFEST_NAME = "EOS-REWIND.json"
"""The manifest a rewind writes into its backup folder: what was moved, from where, and why."""

_BATCH_NAME = re.compile(r"^(\d+)$")
_STATE_NAME = re.compile(r"^(\d+)(?:_[^./]+)?\.(?:delta|snapshot|zip|changelog)$", re.IGNORECASE)

MoveKind = Literal["offsets", "commits", "state", "operator-metadata"]


class FileMove(FrozenModel):
    """One checkpoint file a rewind moves into the backup folder.

    :param path: the path relative to the checkpoint root, ``/``-separated.
    :param kind: ``offsets``, ``commits``, ``state`` or ``operator-metadata``.
    :param number: the batch id (offsets, commits, operator metadata) or state version.
    """

    path: str
    kind: MoveKind
    number: int


def _main_name(name: str) -> tuple[str, bool]:
    """Return the name of the file a ``.crc`` sidecar belongs to, and whether it is one."""
    if name.endswith(".crc"):
        if name.startswith("."):
            return name[1:-4], True
        return name[:-4], True
    return name, False


def is_sidecar(path: str) -> bool:
    """True for a ``.crc`` checksum sidecar of another checkpoint file."""
    return _main_name(posixpath.basename(path))[1]


def _relative(root: str, path: str) -> str:
    path = path.rstrip("/")
    prefix = root + "/"
    if not path.startswith(prefix):
        # fsspec returns protocol-less paths; a mismatch means the reader's root is not how
        # this file system spells paths, and guessing could move the wrong files.
        raise RepairError(
            f"file {path!r} listed by the file system is not under the checkpoint root {root!r}",
            fix="pass the checkpoint location exactly as the file system spells it",
        )
    return path[len(prefix) :]


def _list_files(fs: AbstractFileSystem, directory: str) -> list[str]:
    if not fs.exists(directory):
        return []
    return sorted(fs.find(directory, withdirs=False))


def log_moves(fs: AbstractFileSystem, root: str, log: Literal["offsets", "commits"], after: int) -> list[FileMove]:
    """Files of ``offsets/`` or ``commits/`` (and their sidecars) for batches > ``after``."""
    moves = []
    for path in _list_files(fs, f"{root}/{log}"):
        relative = _relative(root, path)
        if relative.count("/") != 1:
            continue
        match = _BATCH_NAME.match(_main_name(posixpath.basename(relative))[0])
        if match and int(match.group(1)) > after:
            moves.append(FileMove(path=relative, kind=log, number=int(match.group(1))))
    return moves


@dataclass(frozen=True)
class StateScan:
    """The state files a rewind moves, and what each state store keeps.

    :param moves: state versions and operator metadata to move.
    :param lowest_present: per state store directory, the lowest state version present at all.
    :param lowest_kept: per directory, the lowest version that stays in place (``None``: the
        rewind would leave the store without any version).
    """

    moves: list[FileMove]
    lowest_present: dict[str, int]
    lowest_kept: dict[str, int | None]


def scan_state(fs: AbstractFileSystem, root: str, max_version: int, max_batch: int) -> StateScan:
    """Find state versions > ``max_version`` and operator metadata of batches > ``max_batch``."""
    moves: list[FileMove] = []
    lowest_present: dict[str, int] = {}
    lowest_kept: dict[str, int | None] = {}
    for path in _list_files(fs, f"{root}/state"):
        relative = _relative(root, path)
        directory, name = posixpath.split(relative)
        main, is_crc = _main_name(name)
        state_match = _STATE_NAME.match(main)
        if state_match:
            version = int(state_match.group(1))
            if version > max_version:
                moves.append(FileMove(path=relative, kind="state", number=version))
            if is_crc:
                continue
            lowest_present[directory] = min(lowest_present.get(directory, version), version)
            kept = lowest_kept.get(directory)
            if version <= max_version:
                lowest_kept[directory] = version if kept is None else min(kept, version)
            else:
                lowest_kept.setdefault(directory, None)
            continue
        parts = directory.split("/")
        batch_match = _BATCH_NAME.match(main)
        if batch_match and parts[-1] == "v2" and "_metadata" in parts:
            batch = int(batch_match.group(1))
            if batch > max_batch:
                moves.append(FileMove(path=relative, kind="operator-metadata", number=batch))
    return StateScan(moves, lowest_present, lowest_kept)


def move_order(moves: Sequence[FileMove]) -> tuple[FileMove, ...]:
    """Order moves so that an interrupted rewind fails loudly instead of corrupting state.

    State goes first: a checkpoint whose commits still claim a batch whose state version is
    gone makes Spark fail to load the store, whereas stale state versions left behind next
    to rewound commits would be picked up silently. Then newest batch first, ``commits/N``
    before ``offsets/N``, so every intermediate checkpoint is one Spark can restart from.
    Sidecars precede their file so no file is ever left with a stale checksum.
    """
    kind_rank = {"state": 0, "operator-metadata": 1, "commits": 2, "offsets": 3}

    def key(move: FileMove) -> tuple[int, int, int, int, str]:
        group = 0 if move.kind in ("state", "operator-metadata") else 1
        return (group, -move.number, kind_rank[move.kind], 0 if is_sidecar(move.path) else 1, move.path)

    return tuple(sorted(moves, key=key))


def backup_dir_for(root: str, now: datetime | None = None) -> str:
    """Return the backup folder path for a checkpoint root at a given time.

    :param root: the checkpoint root as the file system spells it.
    :param now: the time to stamp (default: now); naive datetimes are taken as UTC.
    :return: ``<parent>/<name>.eos-backup-<YYYYMMDDTHHMMSSZ>``.
    :raises RepairError: if the root has no parent folder to hold the backup.
    """
    root = root.rstrip("/")
    parent, name = posixpath.split(root)
    if not name or not parent:
        raise RepairError(
            f"the checkpoint root {root!r} has no parent folder to hold a backup next to it",
            fix="keep checkpoints in a folder below the file system root or bucket",
        )
    stamp = pendulum.instance(now if now is not None else pendulum.now("UTC")).in_timezone("UTC")
    return f"{parent}/{name}{BACKUP_INFIX}{stamp.format('YYYYMMDD[T]HHmmss[Z]')}"
