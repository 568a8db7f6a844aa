"""Whether the batch in flight advances: progress that shows before its commit does.

A batch commits at its end only, so the commit age and the STOP rule alone take a batch that runs
longer than ``stop_after_ms`` for a job that stopped. The driver writer's batch in particular is not
bounded by the transaction timeout: its tasks first spill the output under the checkpoint, outside
any transaction, and only then does the driver open its transaction and produce. Two samples of the
same batch in flight (:class:`~.samples.InFlightBatch`, ``offsets/N`` without ``commits/N``) show it
advancing when, between them,

* its spill grew (more files, or more bytes: the tasks write the output), or
* an output or dead-letter partition's high watermark grew while a transaction under the prefix is
  ongoing (the driver writer, or an executor writer's task, produces the batch).

A batch that shows neither for ``stop_after_ms`` is judged as before. What no sample can see: a
task that computes for longer than that before writing its first row (one slow task, a large
shuffle stage before the spill); such a batch still needs ``batch_budget_ms`` to be declared.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.health.samples import HealthSample
from airflow_provider_eos.core.transactions import TxnState

__all__ = ["BatchAdvance", "advance_between", "last_advance"]


class BatchAdvance(FrozenModel):
    """The newest evidence in a window that the batch in flight advanced.

    :param batch: the batch.
    :param since_ms: the time of the sample before the advance: it advanced after this.
    :param evidence: what grew, in words.
    """

    batch: int
    since_ms: int
    evidence: str

    def ago_ms(self, now_ms: int) -> int:
        """How long before ``now_ms`` the batch was last seen advancing, at most."""
        return max(0, now_ms - self.since_ms)


def advance_between(older: HealthSample, newer: HealthSample) -> str | None:
    """What shows the batch in flight advancing from ``older`` to ``newer``; ``None`` when nothing does."""
    before, after = older.in_flight, newer.in_flight
    if before is None or after is None or before.batch != after.batch:
        return None
    if after.spill_files > before.spill_files or after.spill_bytes > before.spill_bytes:
        return f"its spill grew to {after.spill_files} file(s), {after.spill_bytes} bytes"
    if any(txn.state is TxnState.ONGOING for txn in newer.transactions):
        hwm_before = {(out.tp, out.role): out.hwm for out in older.outputs}
        grown = sum(max(0, out.hwm - hwm_before.get((out.tp, out.role), out.hwm)) for out in newer.outputs)
        if grown:
            return f"its open transaction wrote {grown} record(s) to the output"
    return None


def last_advance(samples: Sequence[HealthSample]) -> BatchAdvance | None:
    """The newest advance of the batch the newest sample has in flight, over the window (oldest first)."""
    latest = samples[-1] if samples else None
    if latest is None or latest.in_flight is None:
        return None
    batch = latest.in_flight.batch
    for older, newer in reversed(list(itertools.pairwise(samples))):
        evidence = advance_between(older, newer)
        if evidence is not None and newer.in_flight is not None and newer.in_flight.batch == batch:
            return BatchAdvance(batch=batch, since_ms=older.taken_at_ms, evidence=evidence)
    return None
