"""A failed JVM write task as the typed error the Python writer raises for the same case.

Spark carries a failed task's exception to the driver as text (the stage failure's message). The
``jvm/`` writer (``TaskFailure.java``) puts its facts there as ``EOS-TASK-FAILURE:<base64 JSON>``;
this module reads them and builds the error with the code that owns each case: an inconsistent
committed offset goes to :func:`~airflow_provider_eos.core.sink_protocol.decide_partition` (the
protocol's one owner), a Kafka failure to :func:`~airflow_provider_eos.core.sink_failures.sink_failure_error`,
dead letters without a topic to :func:`~.record_producer.require_dlq_topic`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.errors import (
    EosError,
    KafkaNoAnswerError,
    ScanRangeMismatchError,
    SinkError,
    SpecError,
)
from airflow_provider_eos.core.markers import CommittedOffset
from airflow_provider_eos.core.output_columns import column_type_error, null_header_error
from airflow_provider_eos.core.sink_failures import KafkaFailure, sink_failure_error, sink_init_error
from airflow_provider_eos.core.sink_protocol import decide_partition
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.group_offsets import (
    GroupOffsetsError,
    metadata_read_back,
    offset_fetch_request,
    offsets_pending_error,
)
from airflow_provider_eos.spark.record_producer import require_dlq_topic

if TYPE_CHECKING:
    from airflow_provider_eos.spark.executor_writers import BatchTasks

__all__ = ["task_failure", "typed_task_error"]

_TAG = re.compile(r"EOS-TASK-FAILURE:([A-Za-z0-9+/]+={0,2})")
_REPLAYED = "the batch is not complete; Spark replays it on restart (committed partitions skip)"


def task_failure(exc: BaseException) -> dict[str, Any] | None:
    """The first ``EOS-TASK-FAILURE`` facts in the exception's text (the message, and the JVM's stack when given)."""
    text = f"{exc}\n{getattr(exc, '_stackTrace', '') or ''}"
    for match in _TAG.finditer(text):
        try:
            return json.loads(base64.b64decode(match.group(1)))
        except (binascii.Error, ValueError):
            continue
    return None


def typed_task_error(exc: BaseException, tasks: BatchTasks) -> EosError | None:
    """The typed error for a write that failed in a JVM task; ``None`` when the JVM named nothing."""
    facts = task_failure(exc)
    if facts is None:
        return None
    try:
        return _error(facts, tasks)
    except EosError as err:  # the owners raise their errors; the caller raises them from the Spark exception
        return err


def _error(facts: dict[str, Any], tasks: BatchTasks) -> EosError:
    handler = _BY_KIND.get(facts.get("kind") or "")
    found = handler(facts, tasks) if handler is not None else None
    return found or SinkError(f"batch {tasks.batch_id}: a JVM write task failed: {facts}", fix=_REPLAYED)


def _inconsistent(facts: dict[str, Any], tasks: BatchTasks) -> EosError:
    spec, batch_id = tasks.spec, tasks.batch_id
    tp = TopicPartition(facts["topic"], facts["partition"])
    offset = facts.get("offset")
    committed = None if offset is None else CommittedOffset(offset, metadata_read_back(facts.get("metadata") or ""))
    action = decide_partition(tp, tasks.planned, committed, spec.group_id)
    found = committed.describe() if committed else "nothing committed"
    return SinkError(
        f"batch {batch_id}: the JVM executor writer refused {tp} at {found}, which the protocol decides as "
        f"{action.value}: the writer's plan and the protocol disagree",
        fix=f"{_REPLAYED}. Set `executor_writer: python` and report this")


def _kafka(facts: dict[str, Any], tasks: BatchTasks) -> EosError:
    spec, batch_id = tasks.spec, tasks.batch_id
    failure = KafkaFailure(facts["code"], fatal=bool(facts.get("fatal")), retriable=bool(facts.get("retriable")),
                           detail=facts.get("detail") or "", outlived_timeout=bool(facts.get("outlived_timeout")))
    if facts.get("stage") == "init":
        return sink_init_error(failure, spec=spec, transactional_id=facts.get("transactional_id") or "",
                               batch_id=batch_id)
    stage = facts.get("stage") if facts.get("stage") in ("init", "offsets", "produce") else "produce"
    return sink_failure_error(failure, batch_id=batch_id, spec=spec, stage=stage,
                              transactional_id=facts.get("transactional_id"),
                              unauthorized_topics=facts.get("unauthorized_topics") or ())


def _no_dlq_topic(facts: dict[str, Any], tasks: BatchTasks) -> EosError | None:
    require_dlq_topic(tasks.spec, int(facts["dead"]))  # raises the owner's error
    return None


def _scan_partition(facts: dict[str, Any], tasks: BatchTasks) -> EosError | None:
    tasks.mapping.for_spark_partition(int(facts["spark_partition"]))  # raises the owner's error
    return None


def _foreign_rows(facts: dict[str, Any], tasks: BatchTasks) -> EosError:
    r = tasks.mapping.for_spark_partition(int(facts["spark_partition"]))
    return ScanRangeMismatchError(
        f"batch {tasks.batch_id}: Spark partition {r.spark_partition} reads {r.describe()} but holds rows with "
        f"{facts['column']} {[facts.get('found')]}",
        fix="the plan moved rows between partitions; set `writers: driver` and report the plan")


def _scan_partitions(facts: dict[str, Any], tasks: BatchTasks) -> EosError:
    return ScanRangeMismatchError(
        f"batch {tasks.batch_id}: Spark planned the write with {facts['spark_partitions']} partitions, expected "
        f"{facts['partitions']} (one per input partition)",
        fix=f"{_REPLAYED}. If this repeats, set `writers: driver` and report the plan")


def _fenced_twice(facts: dict[str, Any], tasks: BatchTasks) -> EosError:
    return SinkError(
        f"batch {tasks.batch_id}: the producer of {facts.get('transactional_id')} was fenced twice before it wrote; "
        "another task attempt is writing the same input partition",
        fix="Spark retries the task; if this repeats, check that no second job runs this pipeline")


def _group_offsets(facts: dict[str, Any], tasks: BatchTasks) -> EosError:
    if facts.get("no_answer"):  # as the Python writer's read of the same: the retryable error naming the brokers
        return KafkaNoAnswerError(tasks.spec.brokers, offset_fetch_request(str(facts.get("group_id"))),
                                  round(int(facts.get("waited_ms") or 0) / 1000, 1), detail=facts.get("detail"))
    return GroupOffsetsError(
        f"could not read committed offsets of group {facts.get('group_id')!r} for "
        f"{facts.get('topic')}-{facts.get('partition')}: {facts.get('detail')}",
        fix="check that the broker is reachable with the spec's kafka settings and that the principal may "
        "Describe the group")


def _offsets_pending(facts: dict[str, Any], tasks: BatchTasks) -> EosError:
    return offsets_pending_error(str(facts.get("group_id")), [f"{facts.get('topic')}-{facts.get('partition')}"],
                                 waited_s=int(facts.get("waited_ms") or 0) / 1000,
                                 transaction_timeout_ms=int(facts.get("transaction_timeout_ms") or 0))


def _output_columns(facts: dict[str, Any], tasks: BatchTasks) -> EosError:
    transform, column, found = tasks.spec.transform or "identity", str(facts.get("column")), str(facts.get("type"))
    return column_type_error(transform, column, found) or SpecError(
        f"transform {transform!r} returned column {column!r} of type {found}; the JVM writer takes "
        f"{facts.get('expected')}", fix=f"cast it in the transform to {facts.get('expected')}")


def _null_header(facts: dict[str, Any], tasks: BatchTasks) -> EosError:
    return null_header_error(tasks.spec.transform or "identity", tasks.batch_id, str(facts.get("what")))


def _fault(facts: dict[str, Any], tasks: BatchTasks) -> EosError:
    return SinkError(f"batch {tasks.batch_id}: a test fault point crashed the task ({facts.get('where')}) and Spark "
                     "did not retry it", fix="run with task retries (a master such as local[2,4]) or disarm it")


#: Per ``kind`` of the Java writer's failure facts (``TaskFailure.java``): the error that owns it.
_BY_KIND: dict[str, Callable[[dict[str, Any], BatchTasks], EosError | None]] = {
    "inconsistent": _inconsistent,
    "kafka": _kafka,
    "no_dlq_topic": _no_dlq_topic,
    "scan_partition": _scan_partition,
    "foreign_rows": _foreign_rows,
    "scan_partitions": _scan_partitions,
    "fenced_twice": _fenced_twice,
    "group_offsets": _group_offsets,
    "offsets_pending": _offsets_pending,
    "fault": _fault,
    "output_columns": _output_columns,
    "null_header": _null_header,
}
