"""The driver's own lag reading (spark/input_lag.py): at the first commit at once, then every interval."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from types import SimpleNamespace

from confluent_kafka import IsolationLevel, KafkaError, KafkaException

from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.spark.input_lag import InputLagWatch

IN0, IN1 = TopicPartition("in", 0), TopicPartition("in", 1)


class _Admin:
    """ListOffsets as confluent-kafka's admin answers it; records each request's isolation level."""

    def __init__(self, ends: dict[TopicPartition, int]) -> None:
        self.ends, self.isolations, self.fail = ends, [], False

    def list_offsets(self, request, isolation_level, request_timeout):
        self.isolations.append(isolation_level)
        futures = {}
        for tp in request:
            future: Future = Future()
            if self.fail:
                future.set_exception(KafkaException(KafkaError(KafkaError._TRANSPORT)))
            else:
                future.set_result(SimpleNamespace(offset=self.ends[TopicPartition(tp.topic, tp.partition)]))
            futures[tp] = future
        return futures


class _Exporter:
    def __init__(self) -> None:
        self.lag: dict[str, float] = {}
        self.applied = threading.Event()

    def apply(self, updates) -> None:
        for update in updates:
            self.lag[dict(update.labels)["partition"]] = update.value
        self.applied.set()


def test_the_first_commit_is_read_at_once_and_the_lag_is_the_stable_end_less_the_committed_one() -> None:
    admin, exporter = _Admin({IN0: 958, IN1: 200}), _Exporter()
    watch = InputLagWatch(exporter, "orders", admin, interval_s=300)
    watch.start()
    try:
        assert not exporter.applied.wait(0.3)  # nothing committed yet: nothing to read against
        watch.committed({IN0: 250, IN1: 200})
        assert exporter.applied.wait(5)  # not 300 s later
    finally:
        watch.stop()
    assert exporter.lag == {"0": 708, "1": 0}
    assert set(admin.isolations) == {IsolationLevel.READ_COMMITTED}


def test_a_failed_read_keeps_the_last_lag() -> None:
    admin, exporter = _Admin({IN0: 300}), _Exporter()
    watch = InputLagWatch(exporter, "orders", admin)
    watch.committed({IN0: 250})
    watch.read_once()
    admin.fail, admin.ends = True, {IN0: 900}
    watch.read_once()
    assert exporter.lag == {"0": 50}
