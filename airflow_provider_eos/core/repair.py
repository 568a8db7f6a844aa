"""Repairs for the verification verdicts: rewind the checkpoint, align the sink group.

Both repairs follow the same rules (DESIGN.md section 3):

* **Dry run by default.** ``plan_*`` only reads; :func:`rewind` executes only when asked.
* **Idempotent.** Executing a plan whose work is already done is a no-op.
* **Nothing is lost.** A rewind moves files into a backup folder (relative paths preserved,
  plus a manifest); an align plan carries every offset and metadata it replaces.
* **Before/after table.** Every plan and result renders one.

Rewinding the checkpoint to batch ``K`` makes ``K`` its last committed batch. It is the fix
for ``KAFKA_BEHIND`` (group marker ``K`` < last committed ``C``): Spark then replays batches
``K+1..C``, whose output is missing from Kafka, and the sink, finding marker ``K`` (= the
previous batch), produces each of them exactly once.

File naming this module relies on (Apache Spark sources, ``sql/core/src/main/scala/org/
apache/spark/sql/execution/streaming/``):

* ``offsets/N`` and ``commits/N``: ``HDFSMetadataLog`` names batch files by the bare batch id.
* ``MicroBatchExecution.validateOffsetLogAndGetPrevOffset``: restarting from latest batch
  ``K`` needs ``offsets/K-1`` too ("batch K-1 doesn't exist" otherwise).
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

import json
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pendulum

from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffsets
from airflow_provider_eos.core.report_table import render_table
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.verification import Verdict, VerificationReport, verify_checkpoint

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from airflow_provider_eos.core.checkpoint import CheckpointReader

__all__ = [
    "AlignPlan",
    "AlignRow",
    "FileMove",
    "RewindPlan",
    "RewindResult",
    "backup_dir_for",
    "execute_rewind",
    "plan_align",
    "plan_rewind",
    "rewind",
]

BACKUP_INFIX = ".eos-backup-"
"""Backup folders are ``<checkpoint>/../<checkpoint name>.eos-backup-<UTC timestamp>``."""

MANIFEST_NAME = "EOS-REWIND.json"
"""The manifest a rewind writes into its backup folder: what was moved, from where, and why."""

_BATCH_NAME = re.compile(r"^(\d+)$")
_STATE_NAME = re.compile(r"^(\d+)(?:_[^./]+)?\.(?:delta|snapshot|zip|changelog)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class FileMove:
    """One checkpoint file a rewind moves into the backup folder.

    :param path: the path relative to the checkpoint root, ``/``-separated.
    :param kind: ``offsets``, ``commits``, ``state`` or ``operator-metadata``.
    :param number: the batch id (offsets, commits, operator metadata) or state version.
    """

    path: str
    kind: str
    number: int

    def to_dict(self) -> dict[str, Any]:
        """Return the move as JSON-serializable values."""
        return {"path": self.path, "kind": self.kind, "number": self.number}


def _main_name(name: str) -> tuple[str, bool]:
    """Return the name of the file a ``.crc`` sidecar belongs to, and whether it is one."""
    if name.endswith(".crc"):
        if name.startswith("."):
            return name[1:-4], True
        return name[:-4], True
    return name, False


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


def _log_moves(fs: AbstractFileSystem, root: str, log: str, after: int) -> list[FileMove]:
    """Files of ``offsets/`` or ``commits/`` (and their sidecars) for batches > ``after``."""
    moves = []
    for path in _list_files(fs, f"{root}/{log}"):
        relative = _relative(root, path)
        if relative.count("/") != 1:
            continue
        match = _BATCH_NAME.match(_main_name(posixpath.basename(relative))[0])
        if match and int(match.group(1)) > after:
            moves.append(FileMove(relative, log, int(match.group(1))))
    return moves


@dataclass(frozen=True)
class _StateScan:
    moves: list[FileMove]
    # Per state store directory: the lowest state version present at all, and the lowest
    # one that stays in place (None: the rewind would leave the store without any version).
    lowest_present: dict[str, int]
    lowest_kept: dict[str, int | None]


def _scan_state(fs: AbstractFileSystem, root: str, max_version: int, max_batch: int) -> _StateScan:
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
                moves.append(FileMove(relative, "state", version))
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
                moves.append(FileMove(relative, "operator-metadata", batch))
    return _StateScan(moves, lowest_present, lowest_kept)


def _move_order(moves: Sequence[FileMove]) -> tuple[FileMove, ...]:
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
        is_sidecar = _main_name(posixpath.basename(move.path))[1]
        return (group, -move.number, kind_rank[move.kind], 0 if is_sidecar else 1, move.path)

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


@dataclass(frozen=True)
class RewindPlan:
    """What rewinding a checkpoint to batch ``to_batch`` moves; nothing is changed by planning.

    After the rewind, ``to_batch`` is the last committed (and last planned) batch; on restart
    Spark runs ``to_batch + 1`` onwards, reading the same offset ranges as before because
    ``offsets/K`` and the source's initial offsets stay in place.

    :param root: the checkpoint root as the file system spells it.
    :param to_batch: the target batch ``K``; ``-1`` means before the first batch.
    :param last_committed_before: the last committed batch now.
    :param last_planned_before: the last planned batch now.
    :param oldest_planned: the oldest retained ``offsets/`` batch now.
    :param oldest_committed: the oldest retained ``commits/`` batch now.
    :param moves: the files to move, in execution order.
    :param stateful: whether the query has a ``state/`` folder.
    :param warnings: things the operator should read before executing.
    """

    root: str
    to_batch: int
    last_committed_before: int | None
    last_planned_before: int | None
    oldest_planned: int | None
    oldest_committed: int | None
    moves: tuple[FileMove, ...]
    stateful: bool
    warnings: tuple[str, ...] = ()

    @property
    def last_committed_after(self) -> int | None:
        """The last committed batch after the rewind."""
        if self.last_committed_before is None:
            return None
        return self.to_batch if self.to_batch >= 0 else None

    @property
    def last_planned_after(self) -> int | None:
        """The last planned batch after the rewind."""
        if self.last_planned_before is None:
            return None
        return min(self.last_planned_before, self.to_batch) if self.to_batch >= 0 else None

    @property
    def is_noop(self) -> bool:
        """True when there is nothing to move: the checkpoint already ends at ``to_batch``."""
        return not self.moves

    @property
    def paths(self) -> tuple[str, ...]:
        """The relative paths to move, in execution order."""
        return tuple(move.path for move in self.moves)

    def _count(self, *kinds: str) -> int:
        return sum(1 for move in self.moves if move.kind in kinds)

    def to_dict(self) -> dict[str, Any]:
        """Return the plan as JSON-serializable values."""
        return {
            "repair": "rewind",
            "root": self.root,
            "to_batch": self.to_batch,
            "is_noop": self.is_noop,
            "stateful": self.stateful,
            "before": {
                "last_committed": self.last_committed_before,
                "last_planned": self.last_planned_before,
                "oldest_planned": self.oldest_planned,
                "oldest_committed": self.oldest_committed,
            },
            "after": {"last_committed": self.last_committed_after, "last_planned": self.last_planned_after},
            "moves": [move.to_dict() for move in self.moves],
            "warnings": list(self.warnings),
        }

    def render(self, *, max_files: int | None = 50, title: str | None = None) -> str:
        """Render the before/after table and the files to move.

        :param max_files: list at most this many files (``None``: all).
        :param title: the first line (default: says this is a plan and nothing changed yet).
        """
        if title is None:
            title = f"Rewind checkpoint {self.root} to batch {self.to_batch}" + (
                ": nothing to do" if self.is_noop else " (plan; nothing changed yet)"
            )
        lines = [title, ""]
        lines.append(
            render_table(
                ["", "before", "after"],
                [
                    ["last committed batch", self.last_committed_before, self.last_committed_after],
                    ["last planned batch", self.last_planned_before, self.last_planned_after],
                    [
                        "offsets/ batches",
                        _span(self.oldest_planned, self.last_planned_before),
                        _span(self.oldest_planned, self.last_planned_after),
                    ],
                    [
                        "commits/ batches",
                        _span(self.oldest_committed, self.last_committed_before),
                        _span(self.oldest_committed, self.last_committed_after),
                    ],
                ],
            )
        )
        lines.extend(f"Warning: {warning}" for warning in self.warnings)
        if self.moves:
            lines.append("")
            lines.append(
                f"Moves {len(self.moves)} file(s), sidecars included: {self._count('offsets')} in offsets/, "
                f"{self._count('commits')} in commits/, "
                f"{self._count('state', 'operator-metadata')} in state/, "
                f"into {self.root}{BACKUP_INFIX}<UTC timestamp>/ (relative paths kept):"
            )
            # Show the log files first: they say which batches go; state files are many and follow.
            display = sorted(
                self.moves, key=lambda m: (m.kind not in ("offsets", "commits"), m.number, m.path)
            )
            shown = display if max_files is None else display[:max_files]
            lines.extend(f"  {move.path}" for move in shown)
            if len(shown) < len(self.moves):
                lines.append(f"  ... {len(self.moves) - len(shown)} more")
        return "\n".join(lines)


def plan_rewind(reader: CheckpointReader, to_batch: int) -> RewindPlan:
    """Plan rewinding the checkpoint so that ``to_batch`` becomes its last committed batch.

    This is the repair for ``KAFKA_BEHIND``: with group marker ``K`` below the last committed
    batch ``C``, rewinding to ``K`` makes Spark replay ``K+1..C``; their output is missing from
    Kafka, and the sink, seeing marker ``K`` (the previous batch), produces each once.

    Moves ``offsets/N`` and ``commits/N`` for ``N > K`` and, for stateful queries, state
    versions ``> K+1`` (batch ``N`` commits version ``N+1``) and operator metadata of batches
    ``> K``, each with its ``.crc`` sidecars. ``K = -1`` moves every batch: the query restarts
    from the Kafka source's initial offsets (``sources/0/0``) with empty state.

    :param reader: the checkpoint.
    :param to_batch: the batch ``K`` to rewind to, ``-1`` for before the first batch.
    :return: the plan; executing it is :func:`execute_rewind`.
    :raises RepairError: if ``K`` < -1, ``K`` is after the last committed batch, or Spark has
        purged files a restart from ``K`` needs (``offsets/K-1``, ``offsets/K``,
        ``commits/K``, state version ``K+1``).
    """
    root = reader.root.rstrip("/")
    fs = reader.fs
    if to_batch < -1:
        raise RepairError(
            f"cannot rewind to batch {to_batch}: batch ids start at 0",
            fix="pass --to-batch -1 to rewind to before the first batch, or a batch id >= 0",
        )
    offset_batches = sorted(reader.offset_batches())
    commit_batches = set(reader.commit_batches())
    last_committed = reader.latest_committed_batch()
    last_planned = reader.latest_planned_batch()
    if to_batch > (-1 if last_committed is None else last_committed):
        raise RepairError(
            f"cannot rewind forward to batch {to_batch}: the last committed batch of {root} is "
            f"{'none' if last_committed is None else last_committed}",
            fix="pass a batch at or before the last committed batch (verify reports the right one)",
        )

    oldest = offset_batches[0] if offset_batches else None
    earliest = _earliest_rewind_target(offset_batches, commit_batches)
    if to_batch >= 0:
        needed = [f"offsets/{to_batch}", f"commits/{to_batch}"] + (
            [f"offsets/{to_batch - 1}"] if to_batch else []
        )
        have = {f"offsets/{b}" for b in offset_batches} | {f"commits/{b}" for b in commit_batches}
        missing = [name for name in needed if name not in have]
        if missing:
            raise RepairError(
                f"cannot rewind {root} to batch {to_batch}: {', '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} gone "
                f"(oldest retained offsets file: offsets/{oldest}); Spark purges old batches "
                "(spark.sql.streaming.minBatchesToRetain) and needs them to restart from batch "
                f"{to_batch}",
                fix=(
                    f"the earliest batch the retained offsets/ and commits/ allow is {earliest} "
                    "(a stateful query may need a later one)"
                    if earliest is not None
                    else "this checkpoint cannot be rewound; align the group or start a new checkpoint"
                ),
            )
    elif offset_batches and oldest != 0:
        raise RepairError(
            f"cannot rewind {root} to before the first batch: offsets/0 was purged (oldest retained "
            f"offsets file: offsets/{oldest}), so batches before {oldest} cannot be replayed as planned",
            fix=(
                f"the earliest batch the retained offsets/ and commits/ allow is {earliest} "
                "(a stateful query may need a later one)"
                if earliest is not None
                else "start a new checkpoint"
            ),
        )

    moves = _log_moves(fs, root, "offsets", to_batch) + _log_moves(fs, root, "commits", to_batch)
    stateful = bool(reader.state_dir_exists())
    warnings: list[str] = []
    if stateful:
        scan = _scan_state(fs, root, max_version=to_batch + 1, max_batch=to_batch)
        if to_batch >= 0:
            for directory, kept in sorted(scan.lowest_kept.items()):
                if kept is None:
                    raise RepairError(
                        f"cannot rewind {root} to batch {to_batch}: state store {directory} keeps no "
                        f"version at or below {to_batch + 1} (lowest: {scan.lowest_present[directory]}); "
                        "Spark purged the state that batch needs",
                        fix="pick a later batch, or start a new checkpoint and reprocess",
                    )
        moves += scan.moves
    if to_batch == (-1 if last_committed is None else last_committed) and (
        last_planned is not None and last_planned > to_batch
    ):
        warnings.append(
            f"offsets/{last_planned} (planned, not committed) will be moved, so Spark plans batch "
            f"{last_planned} anew, possibly with a different range; if verify says KAFKA_AHEAD_SAFE "
            "do not execute this: the sink would find its marker with other offsets"
        )
    return RewindPlan(
        root=root,
        to_batch=to_batch,
        last_committed_before=last_committed,
        last_planned_before=last_planned,
        oldest_planned=offset_batches[0] if offset_batches else None,
        oldest_committed=min(commit_batches) if commit_batches else None,
        moves=_move_order(moves),
        stateful=stateful,
        warnings=tuple(warnings),
    )


def _span(first: int | None, last: int | None) -> str | None:
    """``first..last`` of a retained batch range, ``None`` when the range is empty."""
    if first is None or last is None or last < first:
        return None
    return str(first) if first == last else f"{first}..{last}"


def _earliest_rewind_target(offset_batches: list[int], commit_batches: set[int]) -> int | None:
    """Lowest ``K`` a rewind accepts: -1 if ``offsets/0`` is retained, else the lowest ``K``
    with ``offsets/K``, ``commits/K`` and ``offsets/K-1`` retained."""
    if offset_batches and offset_batches[0] == 0:
        # With the whole history retained, even "before the first batch" is reachable.
        return -1
    have = set(offset_batches)
    for batch in offset_batches:
        if batch in commit_batches and batch - 1 in have:
            return batch
    return None


@dataclass(frozen=True)
class RewindResult:
    """The outcome of executing a rewind plan (or of a dry run).

    :param plan: the plan that was (or would be) executed.
    :param executed: whether files were moved.
    :param backup_dir: where the files went (``None`` if nothing moved).
    :param moved: the relative paths moved, in order.
    """

    plan: RewindPlan
    executed: bool
    backup_dir: str | None = None
    moved: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_noop(self) -> bool:
        """True when nothing needed moving."""
        return self.plan.is_noop

    def to_dict(self) -> dict[str, Any]:
        """Return the result as JSON-serializable values."""
        return {
            **self.plan.to_dict(),
            "executed": self.executed,
            "backup_dir": self.backup_dir,
            "moved": list(self.moved),
        }

    def render(self, *, max_files: int | None = 50) -> str:
        """Render the before/after table and where the files went."""
        if self.executed:
            head = (
                f"Rewound checkpoint {self.plan.root} to batch {self.plan.to_batch}: moved "
                f"{len(self.moved)} file(s) to {self.backup_dir}"
            )
        elif self.plan.is_noop:
            head = f"Checkpoint {self.plan.root} already ends at batch {self.plan.to_batch}: nothing moved"
        else:
            head = "Dry run: nothing moved. Execute to apply the plan below."
        body = self.plan.render(max_files=max_files, title="Before and after:")
        tail = (
            [
                "",
                f"To undo: stop the query and move the files back from {self.backup_dir} "
                f"(the manifest {MANIFEST_NAME} there lists them).",
            ]
            if self.executed
            else []
        )
        return "\n".join([head, "", body, *tail])


def execute_rewind(
    plan: RewindPlan, reader: CheckpointReader, *, now: datetime | None = None
) -> RewindResult:
    """Execute a rewind plan: move its files into a backup folder next to the checkpoint.

    The checkpoint is planned again first. If that fresh plan has nothing to move (the
    rewind already happened), this is a no-op; if it differs from ``plan`` (the query ran
    or someone edited the checkpoint since), nothing is moved. Stop the query before
    executing: Spark must not write the checkpoint while files move.

    :param plan: the plan from :func:`plan_rewind`.
    :param reader: the same checkpoint the plan was made for.
    :param now: the time for the backup folder's name (default: now, UTC).
    :return: the result with the backup folder and the moved files.
    :raises RepairError: if the checkpoint changed since planning, or a move fails (the
        message names the files already moved; re-planning resumes safely).
    """
    fresh = plan_rewind(reader, plan.to_batch)
    if fresh.root != plan.root.rstrip("/"):
        raise RepairError(
            f"the plan is for checkpoint {plan.root} but the reader opens {fresh.root}",
            fix="execute the plan with a reader for the checkpoint it was made for",
        )
    if fresh.is_noop:
        return RewindResult(plan=fresh, executed=False)
    if fresh.paths != plan.paths:
        raise RepairError(
            f"checkpoint {plan.root} changed since the rewind was planned: the plan moves "
            f"{len(plan.moves)} file(s), the checkpoint now needs {len(fresh.moves)}; nothing was moved",
            fix="make sure the query is stopped, then plan the rewind again (dry run) "
            "and execute the new plan",
        )

    fs = reader.fs
    backup = backup_dir_for(plan.root, now)
    suffix = 1
    base = backup
    while fs.exists(backup):
        backup = f"{base}-{suffix}"
        suffix += 1
    fs.makedirs(backup, exist_ok=True)
    _write_manifest(fs, backup, plan, moved=[], complete=False)
    moved: list[str] = []
    for move in plan.moves:
        source = f"{plan.root}/{move.path}"
        target = f"{backup}/{move.path}"
        try:
            fs.makedirs(posixpath.dirname(target), exist_ok=True)
            fs.mv(source, target)
        except Exception as exc:
            _write_manifest(fs, backup, plan, moved=moved, complete=False)
            raise RepairError(
                f"moving {source} to {target} failed ({exc}); {len(moved)} of {len(plan.moves)} file(s) "
                f"were already moved to {backup}",
                fix="fix the cause, then plan and execute the rewind again: it moves only what remains",
            ) from exc
        moved.append(move.path)
    _write_manifest(fs, backup, plan, moved=moved, complete=True)
    return RewindResult(plan=plan, executed=True, backup_dir=backup, moved=tuple(moved))


def _write_manifest(
    fs: AbstractFileSystem, backup: str, plan: RewindPlan, *, moved: list[str], complete: bool
) -> None:
    manifest = {
        **plan.to_dict(),
        "complete": complete,
        "moved": moved,
        "restore": f"stop the query and move every file listed in 'moved' back under {plan.root}, "
        "at the same relative path",
    }
    with fs.open(f"{backup}/{MANIFEST_NAME}", "w") as handle:
        handle.write(json.dumps(manifest, indent=2, sort_keys=True))


def rewind(
    reader: CheckpointReader, to_batch: int, *, execute: bool = False, now: datetime | None = None
) -> RewindResult:
    """Plan a rewind and, only if ``execute`` is true, carry it out (dry run by default).

    :param reader: the checkpoint.
    :param to_batch: the batch to rewind to (see :func:`plan_rewind`).
    :param execute: move the files; without it nothing changes.
    :param now: the time for the backup folder's name.
    :return: the result; ``executed`` is false for a dry run or a no-op.
    :raises RepairError: see :func:`plan_rewind` and :func:`execute_rewind`.
    """
    plan = plan_rewind(reader, to_batch)
    if not execute:
        return RewindResult(plan=plan, executed=False)
    return execute_rewind(plan, reader, now=now)


@dataclass(frozen=True, slots=True)
class AlignRow:
    """One partition of an align plan: the group's offset before and the target after.

    :param tp: the input partition.
    :param before_offset: the group's committed offset now (``None``: nothing committed).
    :param before_metadata: its metadata now (``None``: nothing committed).
    :param after_offset: ``offsets/C`` for this partition.
    :param after_metadata: the marker of batch ``C`` of the checkpoint's query.
    """

    tp: TopicPartition
    before_offset: int | None
    before_metadata: str | None
    after_offset: int
    after_metadata: str

    @property
    def changed(self) -> bool:
        """True when committing the target changes the group."""
        return (self.before_offset, self.before_metadata) != (self.after_offset, self.after_metadata)

    def to_dict(self) -> dict[str, Any]:
        """Return the row as JSON-serializable values."""
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "before_offset": self.before_offset,
            "before_metadata": self.before_metadata,
            "after_offset": self.after_offset,
            "after_metadata": self.after_metadata,
            "changed": self.changed,
        }


@dataclass(frozen=True)
class AlignPlan:
    """Commit the checkpoint's ``offsets/C`` with marker ``C`` to the sink group.

    The plan holds every offset and metadata it replaces (``before_*``), so the group can be
    put back. Committing needs Kafka and is the shell's job: it commits
    :meth:`offsets_with_metadata` unless :attr:`is_noop`.

    :param query_id: the checkpoint's query id.
    :param batch_id: the last committed batch ``C``.
    :param rows: one row per partition of ``offsets/C``.
    :param untouched: partitions the group has but ``offsets/C`` does not; left as they are.
    :param verdict: the verification verdict the plan was made under.
    :param warnings: things the operator should read before committing.
    """

    query_id: str
    batch_id: int
    rows: tuple[AlignRow, ...]
    untouched: tuple[TopicPartition, ...]
    verdict: Verdict
    warnings: tuple[str, ...] = ()

    @property
    def changes(self) -> tuple[AlignRow, ...]:
        """The rows whose committed offset or metadata would change."""
        return tuple(row for row in self.rows if row.changed)

    @property
    def is_noop(self) -> bool:
        """True when the group already holds the target for every partition."""
        return not self.changes

    def offsets_with_metadata(self) -> dict[TopicPartition, tuple[int, str]]:
        """The complete target, every partition of ``offsets/C``: ``{tp: (offset, metadata)}``.

        All partitions, not only the changed ones, so one commit leaves the group exactly at
        the target; committing an unchanged partition again is harmless.
        """
        return {row.tp: (row.after_offset, row.after_metadata) for row in self.rows}

    def to_dict(self) -> dict[str, Any]:
        """Return the plan as JSON-serializable values."""
        return {
            "repair": "align",
            "query_id": self.query_id,
            "batch_id": self.batch_id,
            "verdict": self.verdict.value,
            "is_noop": self.is_noop,
            "changes": len(self.changes),
            "rows": [row.to_dict() for row in self.rows],
            "untouched": [{"topic": tp.topic, "partition": tp.partition} for tp in self.untouched],
            "warnings": list(self.warnings),
        }

    def render(self, *, max_rows: int | None = None) -> str:
        """Render the before/after table, changed partitions first.

        :param max_rows: show at most this many rows (``None``: all).
        """
        head = (
            f"Align the sink group to checkpoint batch {self.batch_id} of query {self.query_id} "
            f"(verdict {self.verdict.value}): "
            + (
                "nothing to do"
                if self.is_noop
                else f"{len(self.changes)} of {len(self.rows)} partition(s) change"
            )
        )
        ordered = sorted(self.rows, key=lambda row: (not row.changed, row.tp))
        shown = ordered if max_rows is None else ordered[:max_rows]
        lines = [head]
        lines.extend(f"Warning: {warning}" for warning in self.warnings)
        lines.append("")
        lines.append(
            render_table(
                ["partition", "before offset", "before metadata", "after offset", "after metadata", "change"],
                [
                    [
                        str(row.tp),
                        row.before_offset,
                        # An empty metadata string is a finding (offset without marker): show it.
                        '""' if row.before_metadata == "" else row.before_metadata,
                        row.after_offset,
                        row.after_metadata,
                        row.changed,
                    ]
                    for row in shown
                ],
            )
        )
        if len(shown) < len(ordered):
            lines.append(f"... {len(ordered) - len(shown)} more partition(s) not shown")
        if self.untouched:
            lines.append(
                "Not in offsets/{}, left as they are: {}".format(
                    self.batch_id, ", ".join(str(tp) for tp in self.untouched)
                )
            )
        return "\n".join(lines)


_ALIGN_CONSEQUENCE = {
    Verdict.KAFKA_AHEAD_SAFE: "batch {a} is already in Kafka; aligning to batch {c} makes the replay "
    "produce batch {a} a second time (duplicates)",
    Verdict.KAFKA_BEHIND: "the output of the batches after the group's marker is missing; aligning "
    "declares it produced and it is lost. Rewind the checkpoint instead",
    Verdict.DIVERGED: "the group disagrees with the checkpoint in a way no repair explains; aligning "
    "overwrites that evidence and output may be missing or duplicated",
}


def plan_align(reader: CheckpointReader, committed: CommittedOffsets, *, force: bool = False) -> AlignPlan:
    """Plan aligning the sink group to the checkpoint: ``offsets/C`` with marker ``C``.

    This is the repair for ``NO_MARKER`` (the sink never committed for this checkpoint). On
    ``IN_SYNC`` the plan is a no-op. For other verdicts aligning loses or duplicates output,
    so it is refused unless ``force`` is set (the plan then carries a warning).

    :param reader: the checkpoint.
    :param committed: the group's committed offsets for the input partitions.
    :param force: plan even when the verdict says aligning loses or duplicates output.
    :return: the plan.
    :raises RepairError: if the checkpoint has no committed batch, or the verdict forbids
        aligning and ``force`` is not set.
    """
    last_committed = reader.latest_committed_batch()
    if last_committed is None:
        raise RepairError(
            f"checkpoint {reader.root} has no committed batch, so there is nothing to align the group to",
            fix="start the pipeline: the sink's first batch needs no marker in the group",
        )
    report: VerificationReport = verify_checkpoint(reader, committed)
    warnings: list[str] = []
    consequence = _ALIGN_CONSEQUENCE.get(report.overall)
    if consequence is not None:
        message = consequence.format(a=last_committed + 1, c=last_committed)
        if not force:
            raise RepairError(
                f"refusing to align the group to batch {last_committed}: verification says "
                f"{report.overall.value}; {message}",
                fix=report.next_step
                if report.overall is not Verdict.DIVERGED
                else "investigate, then pass --force",
            )
        warnings.append(f"forced despite {report.overall.value}: {message}")

    query_id = reader.query_id()
    target_metadata = BatchMarker(query_id, last_committed).encode()
    target = reader.planned_offsets(last_committed)
    rows = []
    for tp in sorted(target):
        current = committed.get(tp)
        rows.append(
            AlignRow(
                tp=tp,
                before_offset=None if current is None else current.offset,
                before_metadata=None if current is None else current.metadata,
                after_offset=target[tp],
                after_metadata=target_metadata,
            )
        )
    untouched = tuple(sorted(tp for tp, value in committed.items() if tp not in target and value is not None))
    if untouched:
        warnings.append(
            f"{len(untouched)} partition(s) in the group are not in offsets/{last_committed} "
            "and stay as they are"
        )
    return AlignPlan(
        query_id=query_id,
        batch_id=last_committed,
        rows=tuple(rows),
        untouched=untouched,
        verdict=report.overall,
        warnings=tuple(warnings),
    )
