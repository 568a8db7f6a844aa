"""A checkpoint's progress read in one pass: query id, last committed and planned batch, their offsets.

``CheckpointReader.snapshot()`` reads it; the :class:`CheckpointSnapshot` is a plain frozen value
that no longer touches storage.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from airflow_provider_eos.core.topic_partition import OffsetMap

__all__ = ["CheckpointSnapshot"]


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
