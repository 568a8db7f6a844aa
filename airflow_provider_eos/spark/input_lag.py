"""``eos_input_lag_records`` measured by the driver itself, every :data:`LAG_READ_INTERVAL_S`, batch or no batch.

Spark reports progress only when a batch finishes (Spark 4's idle event carries no offsets): a
driver stuck between batches, or one whose JVM stopped, would leave the lag it last reported (0
once caught up) however much input then waits, and ``EosPipelineLagging`` could never fire. So a
thread of the driver's Python reads the input partitions' last stable offsets (one ListOffsets
``read_committed`` per interval, with the sink's own admin client) and subtracts the end offsets of
the newest batch the sink committed (the checkpoint's newest commit at start, then each batch the
sink finishes). The metric changes are :func:`~airflow_provider_eos.core.metrics.updates.input_lag_updates`'.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from confluent_kafka import IsolationLevel, KafkaException

from airflow_provider_eos.core.metrics.updates import input_lag_updates
from airflow_provider_eos.kafka.log_offsets import list_log_offsets

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

    from airflow_provider_eos.core.topic_partition import TopicPartition
    from airflow_provider_eos.spark.metrics_exporter import PrometheusExporter

__all__ = ["LAG_READ_INTERVAL_S", "InputLagWatch"]

log = logging.getLogger("airflow_provider_eos.metrics")

#: Seconds between two reads of the input's last stable offsets: well under the 5 minutes of
#: ``EosPipelineLagging`` and near Prometheus's usual scrape interval, at one small request each.
LAG_READ_INTERVAL_S = 10.0


class InputLagWatch:
    """Reads the input partitions' last stable offsets every ``interval_s`` and sets their lag on ``exporter``.

    :param admin: the sink's admin client (thread-safe: the sink's own requests go on meanwhile).
    """

    def __init__(self, exporter: PrometheusExporter, pipeline: str, admin: AdminClient,
                 interval_s: float = LAG_READ_INTERVAL_S) -> None:
        self.exporter, self.pipeline, self.admin, self.interval_s = exporter, pipeline, admin, interval_s
        self._committed: dict[TopicPartition, int] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._wake = threading.Event()
        self._read = False
        self._thread: threading.Thread | None = None

    def committed(self, end: Mapping[TopicPartition, int]) -> None:
        """The sink committed a batch ending at ``end`` (the input partitions' end offsets).

        The first one is read at once (a new pipeline has a lag as soon as its first batch commits);
        later ones at the next interval.
        """
        with self._lock:
            self._committed = dict(end)
        if not self._read:
            self._wake.set()

    def start(self) -> None:
        """Read now and every ``interval_s`` until :meth:`stop`, on a daemon thread (it never holds the job)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="eos-input-lag", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self.interval_s)

    def _run(self) -> None:
        while not self._stopped.is_set():
            self.read_once()
            self._wake.wait(self.interval_s)
            self._wake.clear()

    def read_once(self) -> None:
        """One read; a failed one leaves the last lag and is tried again at the next interval."""
        with self._lock:
            committed = dict(self._committed)
        if not committed:
            return
        try:
            stable = list_log_offsets(self.admin, committed, isolation=IsolationLevel.READ_COMMITTED,
                                      timeout_s=self.interval_s)
        except (KafkaException, TimeoutError) as exc:
            log.warning("EOS-METRICS could not read the input's last stable offsets for the lag: %s", exc)
            return
        self.exporter.apply(input_lag_updates(self.pipeline, stable, committed))
        self._read = True
