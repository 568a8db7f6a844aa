"""A checkpoint's progress read in one pass: query id, last committed and planned batch, their offsets.

:func:`read_snapshot` (``CheckpointReader.snapshot()``) asks the reader for each value; the
:class:`CheckpointSnapshot` it returns is a plain frozen value that no longer touches storage.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.topic_partition import OffsetMap

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint.reader import CheckpointReader

__all__ = ["CheckpointSnapshot", "read_snapshot"]


@dataclass(frozen=True)
class CheckpointSnapshot:
    """What a checkpoint says about a query's progress, read in one pass.

    :param query_id: the query id from ``metadata``.
    :param last_committed: the newest batch with a ``commits/`` file, ``None`` before the first.
    :param last_planned: the newest batch with an ``offsets/`` file, ``None`` before the first.
    :param committed_offsets: the Kafka source's end offsets of ``last_committed``.
    :param planned_offsets: the Kafka source's end offsets of ``last_planned``.
    :param last_commit_time: modification time (UTC) of ``commits/<last_committed>``.
    """

    query_id: str
    last_committed: int | None
    last_planned: int | None
    committed_offsets: OffsetMap | None
    planned_offsets: OffsetMap | None
    last_commit_time: dt.datetime | None

    @property
    def batch_in_flight(self) -> bool:
        """Whether a batch was planned but not committed (it will be replayed on restart)."""
        if self.last_planned is None:
            return False
        return self.last_committed is None or self.last_planned > self.last_committed


def read_snapshot(reader: CheckpointReader, source_index: int | str = 0) -> CheckpointSnapshot:
    """Read the query's progress in one pass (see :meth:`CheckpointReader.snapshot`).

    :raises CheckpointError: if there is no checkpoint at the location, or a file is malformed.
    """
    if not reader.exists():
        raise CheckpointError(
            f"no Spark checkpoint at {reader.location!r} (no metadata file, no offsets)",
            fix="check the spec's checkpoint_location; a pipeline that never ran has no checkpoint",
        )
    query_id = reader.query_id()
    last_committed = reader.latest_committed_batch()
    last_planned = reader.latest_planned_batch()
    return CheckpointSnapshot(
        query_id=query_id,
        last_committed=last_committed,
        last_planned=last_planned,
        committed_offsets=(None if last_committed is None else reader.planned_offsets(last_committed, source_index)),
        planned_offsets=None if last_planned is None else reader.planned_offsets(last_planned, source_index),
        last_commit_time=None if last_committed is None else reader.commit_time(last_committed),
    )
