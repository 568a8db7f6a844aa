"""Benchmark only: reads and transforms, writes nothing, no delivery guarantee.

The bench's ``n`` runs ``eos run --mode noop`` with this sink plug-in acknowledged (:func:`noop_env`;
the product's extension point, :mod:`airflow_provider_eos.spark.sink_points`): the pipeline's source
and transform go into Spark's ``noop`` data source inside ``foreachBatch`` (the same query shape as
the at-least-once baseline), so the bench can measure what Spark alone costs on the same input:
the ceiling of any sink here. It is never a spec value (:class:`~airflow_provider_eos.core.spec.Mode`
does not know it) and must never run a real pipeline: it commits no offsets to the sink group and
produces nothing.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.spark.sink_points import ACK_ENV, ACK_VALUE, PLUGIN_ENV, SinkPlugin

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["BENCH_NOOP_MODE", "NoopPlugin", "NoopSink", "noop_env", "plugin"]

#: The ``--mode`` value of ``eos run`` that selects :class:`NoopSink` (with the plug-in acknowledged).
BENCH_NOOP_MODE = "noop"
_REPO_ROOT = Path(__file__).resolve().parents[1]

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


class NoopPlugin(SinkPlugin):
    """The sink plug-in that has the ``noop`` mode; it observes nothing."""

    def sink(self, mode: str, spec: PipelineSpec, session: SparkSession) -> NoopSink | None:
        return NoopSink() if mode == BENCH_NOOP_MODE else None


def plugin() -> NoopPlugin:
    """The factory ``EOS_SINK_PLUGIN`` names."""
    return NoopPlugin()


def noop_env() -> dict[str, str]:
    """The variables ``eos run --mode noop`` needs: this plug-in, its acknowledgement, the repository on the path."""
    path = os.pathsep.join(filter(None, [str(_REPO_ROOT), os.environ.get("PYTHONPATH")]))
    return {PLUGIN_ENV: f"{__name__}:plugin", ACK_ENV: ACK_VALUE, "PYTHONPATH": path}
