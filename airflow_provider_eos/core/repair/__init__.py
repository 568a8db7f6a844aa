"""Repairs for the verification verdicts: rewind the checkpoint, align the sink group.

Both repairs follow the same rules (docs/architecture.md, recovery):

* **Dry run by default.** ``plan_*`` only reads; :func:`rewind` executes only when asked.
* **Idempotent.** Executing a plan whose work is already done is a no-op.
* **Nothing is lost.** A rewind moves files into a backup folder (relative paths preserved,
  plus a manifest); an align plan carries every offset and metadata it replaces.
* **Before/after table.** Every plan and result renders one.
* **The plan the person saw.** Every plan has a fingerprint (:mod:`.fingerprint`); an execution
  given the one its dry run showed refuses a plan that is no longer that one.

Rewind (``KAFKA_BEHIND``): :mod:`.rewind_plan` plans by the rules of :mod:`.rewind_rules`,
:mod:`.rewind_files` knows Spark's checkpoint files and the backup folder, :mod:`.rewind_execute`
moves them. Align
(``NO_MARKER``): :mod:`.align`, and :mod:`.align_in_flight` when the batch in flight's offsets may have
expired and only the person can say whether it was written. Plans and results are frozen pydantic models
(:class:`~airflow_provider_eos.core.frozen_model.FrozenModel`): ``model_dump(mode="json")`` is what the
recovery operators push to XCom, what ``eos rewind``/``eos align --json`` print and what a
rewind's manifest records; ``model_validate`` reads it back.
"""

from __future__ import annotations

from airflow_provider_eos.core.repair.align import AlignPlan, AlignRow, plan_align
from airflow_provider_eos.core.repair.fingerprint import check_expected_plan, expectation_notes, plan_fingerprint
from airflow_provider_eos.core.repair.rewind_execute import RewindResult, execute_rewind, rewind
from airflow_provider_eos.core.repair.rewind_files import BACKUP_INFIX, MANIFEST_NAME, FileMove, backup_dir_for
from airflow_provider_eos.core.repair.rewind_plan import CheckpointBatches, RewindPlan, plan_rewind

__all__ = [
    "BACKUP_INFIX",
    "MANIFEST_NAME",
    "AlignPlan",
    "AlignRow",
    "CheckpointBatches",
    "FileMove",
    "InFlightBatch",
    "RewindPlan",
    "RewindResult",
    "backup_dir_for",
    "check_expected_plan",
    "execute_rewind",
    "expectation_notes",
    "parse_in_flight",
    "plan_align",
    "plan_fingerprint",
    "plan_rewind",
    "rewind",
]
