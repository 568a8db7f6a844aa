"""Benchmark only: reads and transforms, writes nothing, no delivery guarantee.

``eos run --mode noop`` runs the pipeline's source and transform into Spark's ``noop`` data
source inside ``foreachBatch`` (the same query shape as the at-least-once baseline), so the
bench can measure what Spark alone costs on the same input: the ceiling of any sink here. It is
never a spec value (:class:`~airflow_provider_eos.core.spec.Mode` does not know it) and must
never run a real pipeline: it commits no offsets to the sink group and produces nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["BENCH_NOOP_MODE", "NoopSink"]

#: The ``--mode`` value of ``eos run`` and the job's entry that selects :class:`NoopSink`.
BENCH_NOOP_MODE = "noop"

log = logging.getLogger("airflow_provider_eos.sink")


class NoopSink:
    """Benchmark only: Spark's ``noop`` writer inside ``foreachBatch``; writes nothing, guarantees nothing."""

    def __init__(self) -> None:
        # The progress logger pops per-batch stats; this sink has none.
        self.stats: dict[int, Any] = {}
        self.in_batch = False

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.in_batch = True
        try:
            # The noop source still runs the whole read and transform: every row is computed, then dropped.
            batch.write.format("noop").mode("overwrite").save()
        finally:
            self.in_batch = False

    def close(self) -> None:
        """Nothing to release."""
