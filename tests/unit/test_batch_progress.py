"""The EOS-PROGRESS line and the metrics Spark's progress feeds, from the progress as Spark's JSON."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_eos.spark.batch_progress import BatchProgressLogger, _QueryEvents
from airflow_provider_eos.spark.record_producer import BatchStats

PROGRESS = {"id": "q", "runId": "r", "batchId": 7, "numInputRows": 1200,
            "durationMs": {"triggerExecution": 640, "addBatch": 500},
            "sources": [{"description": "KafkaV2[Subscribe[in]]", "startOffset": {"in": {"0": 10}},
                         "endOffset": {"in": {"0": 1210}}, "latestOffset": {"in": {"0": 1300}},
                         "numInputRows": 1200, "metrics": {}}],
            "sink": {"description": "ForeachBatchSink", "numOutputRows": -1}}


class _Exporter:
    def __init__(self) -> None:
        self.applied: list[Any] = []

    def apply(self, updates: Any) -> None:
        self.applied.extend(updates)


class _JavaEvent:
    """What py4j hands the listener: a Java progress event, read through its ``json()``."""

    def progress(self) -> Any:
        return SimpleNamespace(json=lambda: json.dumps(PROGRESS))


def _progress_line(caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("EOS-PROGRESS ")]
    return json.loads(line.removeprefix("EOS-PROGRESS "))


def test_a_progress_event_is_read_as_its_json_and_joined_with_the_sinks_batch(caplog) -> None:
    sink = SimpleNamespace(stats={7: BatchStats(7, "produce", rows_out=1190, rows_dlq=10, produce_ms=300,
                                                extra={"writers": "executors", "tasks": 4, "tasks_ms": 410})})
    exporter = _Exporter()
    events = _QueryEvents(BatchProgressLogger(sink, "exactly-once", exporter, "orders"))  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="airflow_provider_eos.job"):
        events.onQueryProgress(_JavaEvent())
    line = _progress_line(caplog)
    assert line["batch_id"] == 7 and line["rows_in"] == 1200 and line["batch_ms"] == 640
    assert line["rows_out"] == 1190 and line["rows_dlq"] == 10 and line["writers"] == "executors"
    assert line["tasks"] == 4 and line["tasks_ms"] == 410
    assert line["spark_ms"] == {"addBatch": 500}, "Spark's phases beside the total, which is batch_ms"
    assert sink.stats == {}, "the batch's stats are logged once"
    # The exporter gets the lag and batch time Spark's progress says (core/metrics/updates.py decides them).
    assert exporter.applied and all(dict(u.labels)["pipeline"] == "orders" for u in exporter.applied)


def test_a_batch_the_sink_did_not_see_is_logged_with_sparks_counts_only(caplog) -> None:
    logger = BatchProgressLogger(SimpleNamespace(stats={}), "noop")  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="airflow_provider_eos.job"):
        logger.log_progress({**PROGRESS, "durationMs": {}})
    assert _progress_line(caplog) == {"batch_id": 7, "batch_ms": None, "mode": "noop", "rows_in": 1200,
                                     "spark_ms": {}}
