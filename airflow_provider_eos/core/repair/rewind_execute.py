"""Carrying out a rewind: move the planned files into a backup folder, never delete them.

Dry run by default (:func:`rewind` without ``execute``), idempotent (executing a plan whose work
is done is a no-op) and resumable (an interrupted rewind leaves a manifest of what moved;
planning again moves only what remains). The manifest is a journal: rewritten before each move,
so even a SIGKILL between two moves leaves one that puts the checkpoint back exactly.
"""

from __future__ import annotations

import json
import posixpath
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import SerializerFunctionWrapHandler, model_serializer, model_validator

from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.repair.rewind_files import MANIFEST_NAME, backup_dir_for
from airflow_provider_eos.core.repair.rewind_plan import RewindPlan, plan_rewind

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from airflow_provider_eos.core.checkpoint import CheckpointReader

__all__ = ["RewindResult", "execute_rewind", "rewind"]

_RESULT_KEYS = ("executed", "backup_dir", "moved")


class RewindResult(FrozenModel):
    """The outcome of executing a rewind plan (or of a dry run).

    JSON: the plan's keys, flat, plus ``executed``, ``backup_dir`` and ``moved``.

    :param plan: the plan that was (or would be) executed.
    :param executed: whether files were moved.
    :param backup_dir: where the files went (``None`` if nothing moved).
    :param moved: the relative paths moved, in order.
    """

    plan: RewindPlan
    executed: bool
    backup_dir: str | None = None
    moved: tuple[str, ...] = ()

    @model_serializer(mode="wrap")
    def _flatten_plan(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Readers know the result as the plan's keys plus three; the nesting is a Python detail.
        data = handler(self)
        return {**data.pop("plan"), **data}

    @model_validator(mode="before")
    @classmethod
    def _nest_plan(cls, data: Any) -> Any:
        if isinstance(data, dict) and "plan" not in data:
            plan = {key: value for key, value in data.items() if key not in _RESULT_KEYS}
            return {"plan": plan, **{key: data[key] for key in _RESULT_KEYS if key in data}}
        return data

    @property
    def is_noop(self) -> bool:
        """True when nothing needed moving."""
        return self.plan.is_noop


def execute_rewind(plan: RewindPlan, reader: CheckpointReader, *, now: datetime | None = None) -> RewindResult:
    """Execute a rewind plan: move its files into a backup folder next to the checkpoint.

    The checkpoint is planned again first. If that fresh plan has nothing to move (the
    rewind already happened), this is a no-op; if it differs from ``plan`` (the query ran
    or someone edited the checkpoint since), nothing is moved. Stop the query before
    executing: Spark must not write the checkpoint while files move.

    :param plan: the plan from :func:`~airflow_provider_eos.core.repair.plan_rewind`.
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
            fix="make sure the query is stopped, then plan the rewind again (dry run) and execute the new plan",
        )

    fs = reader.fs
    backup = backup_dir_for(plan.root, now)
    suffix = 1
    base = backup
    while fs.exists(backup):
        backup = f"{base}-{suffix}"
        suffix += 1
    fs.makedirs(backup, exist_ok=True)
    moved: list[str] = []
    for move in plan.moves:
        source = f"{plan.root}/{move.path}"
        target = f"{backup}/{move.path}"
        # The journal first: a process killed during the move still leaves a manifest naming
        # every file that may have left the checkpoint.
        _write_manifest(fs, backup, plan, moved=moved, moving=move.path)
        try:
            fs.makedirs(posixpath.dirname(target), exist_ok=True)
            fs.mv(source, target)
        except Exception as exc:
            raise RepairError(
                f"moving {source} to {target} failed ({exc}); {len(moved)} of {len(plan.moves)} file(s) "
                f"were already moved to {backup}",
                fix="fix the cause, then plan and execute the rewind again: it moves only what remains",
            ) from exc
        moved.append(move.path)
    _write_manifest(fs, backup, plan, moved=moved, moving=None)
    return RewindResult(plan=plan, executed=True, backup_dir=backup, moved=tuple(moved))


def _write_manifest(
    fs: AbstractFileSystem, backup: str, plan: RewindPlan, *, moved: list[str], moving: str | None
) -> None:
    """Write the journal: the plan, the files moved, and the one being moved (``moving``).

    Rewritten before every move and once at the end (``complete``), so it is never behind the
    folder: a kill at any point leaves every moved file listed under ``moved`` or ``moving``.
    """
    complete = moving is None and len(moved) == len(plan.moves)
    manifest = {
        **plan.to_dict(),
        "complete": complete,
        "moved": moved,
        "moving": moving,
        "restore": f"stop the query and move every file listed in 'moved' back under {plan.root}, at the "
        "same relative path, and the file named in 'moving' too if it is in this folder (the rewind stopped "
        "while moving it)",
    }
    # In place, not written aside and renamed: HDFS does not rename over an existing file. A kill
    # inside this one write can damage the manifest, never the backup folder, which holds only
    # moved files at their relative paths.
    with fs.open(f"{backup}/{MANIFEST_NAME}", "w") as handle:
        handle.write(json.dumps(manifest, indent=2, sort_keys=True))


def rewind(
    reader: CheckpointReader, to_batch: int, *, execute: bool = False, now: datetime | None = None
) -> RewindResult:
    """Plan a rewind and, only if ``execute`` is true, carry it out (dry run by default).

    :param reader: the checkpoint.
    :param to_batch: the batch to rewind to (see :func:`~airflow_provider_eos.core.repair.plan_rewind`).
    :param execute: move the files; without it nothing changes.
    :param now: the time for the backup folder's name.
    :return: the result; ``executed`` is false for a dry run or a no-op.
    :raises RepairError: see ``plan_rewind`` and :func:`execute_rewind`.
    """
    plan = plan_rewind(reader, to_batch)
    if not execute:
        return RewindResult(plan=plan, executed=False)
    return execute_rewind(plan, reader, now=now)
