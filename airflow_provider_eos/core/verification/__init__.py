"""Verification: does the sink group's committed state agree with the Spark checkpoint?

Per input partition, the checkpoint (last committed batch ``C``, last planned batch, the
write-ahead log ``offsets/N``, query id ``Q``) is compared with the sink group's committed
offset and its batch marker (docs/architecture.md, verdicts), giving one :class:`Verdict` per partition
and overall: ``IN_SYNC < KAFKA_AHEAD_SAFE < KAFKA_BEHIND < NO_MARKER < DIVERGED``.

- :mod:`.verdict`: the verdicts, their table and ranking, and the per-partition row;
- :mod:`.partition_evidence`: what is compared for one partition (the checkpoint's side and the
  group's), with the lazy WAL and marker readers;
- :mod:`.partition_rules`: the rules that classify one partition, one predicate each;
- :mod:`.compare`: :func:`verify` and :func:`verify_checkpoint`, the group-level checks and
  the overall verdict;
- :mod:`.writers`: which writer's rules apply (:class:`WritersInUse`): the checkpoint's recorded
  choice, else the spec's explicit ``writers``, else the driver writer's;
- :mod:`.report`: :class:`VerificationReport`, its derived values and the next step;
- its text and card forms are in :mod:`airflow_provider_eos.core.presentation`.

Everything here is pure dictionary work, O(partitions).
"""

from __future__ import annotations

from airflow_provider_eos.core.verification.compare import verify, verify_checkpoint
from airflow_provider_eos.core.verification.partition_rules import OffsetsSource
from airflow_provider_eos.core.verification.report import VerificationReport
from airflow_provider_eos.core.verification.verdict import PartitionVerdict, Verdict
from airflow_provider_eos.core.verification.writers import WritersInUse, WritersSource, writers_in_use

__all__ = [
    "OffsetsSource",
    "PartitionVerdict",
    "Verdict",
    "VerificationReport",
    "WritersInUse",
    "WritersSource",
    "verify",
    "verify_checkpoint",
    "writers_in_use",
]
