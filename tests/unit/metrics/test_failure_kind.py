"""The ``kind`` of ``eos_batch_failures_total`` (core/metrics/failure_kind.py): the error a write task raised.

The wrapped texts are what PySpark 4.2 handed the driver for a ``mapInArrow`` task that raised (``str()`` of its
``PythonException``, and the JVM's stack trace Spark keeps with it), captured from a real local Spark; the chained
ones are Python's own traceback of a real chained exception, with PySpark's header.
"""

from __future__ import annotations

import traceback

import pytest

from airflow_provider_eos.core.errors import TransactionTimedOutError
from airflow_provider_eos.core.metrics.failure_kind import failure_kind, worker_exception_type

# str() of the PythonException of a task that raised a TransactionTimedOutError whose message and fix span lines.
PYSPARK_STR = (
    'An exception was thrown from the Python worker:\nTraceback (most recent call last):\n'
    '  File "/tmp/wtc/probe.py", line 9, in task\n'
    '    raise TransactionTimedOutError("batch 2 was not written: the transaction timed out (INVALID_TXN_STATE: x)'
    '\\nmore", fix="lower it\\nnext: Foo") from exc\n'
    'airflow_provider_eos.core.errors.TransactionTimedOutError: batch 2 was not written: the transaction timed out '
    '(INVALID_TXN_STATE: x)\nmore\nFix: lower it\nnext: Foo\n'
)
# The same failure in the JVM's words (a Py4JJavaError's text has it so), the header on the traceback's line.
JVM_STACK = (
    'org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown from the Python worker: '
    'Traceback (most recent call last):\n  File "/tmp/wtc/probe.py", line 9, in task\n'
    '    raise TransactionTimedOutError("batch 2 was not written: the transaction timed out (INVALID_TXN_STATE: x)'
    '\\nmore", fix="lower it\\nnext: Foo") from exc\n'
    'airflow_provider_eos.core.errors.TransactionTimedOutError: batch 2 was not written: the transaction timed out '
    '(INVALID_TXN_STATE: x)\nmore\nFix: lower it\nnext: Foo\n SQLSTATE: 38000\n'
    '\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:665)\n'
    '\tat org.apache.spark.sql.execution.python.PythonArrowOutput$$anon$1.read(PythonArrowOutput.scala:142)\n'
)
# A worker that could not import pyarrow: Python 3.11's caret lines under the frame.
CARETS = (
    'An exception was thrown from the Python worker:\nTraceback (most recent call last):\n'
    '  File "/work/main/.venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/worker.py", '
    'line 3602, in main\n    func, profiler, deserializer, serializer = read_udfs(\n'
    '                                               ^^^^^^^^^^\n'
    '  File "/work/main/.venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/worker.py", '
    'line 2530, in read_udfs\n    import pyarrow as pa\nModuleNotFoundError: No module named \'pyarrow\'\n'
)


def _chained() -> str:
    """PySpark's header on the full traceback of a sink error raised from a Kafka client's (no simplified traceback)."""
    try:
        try:
            raise RuntimeError("KafkaError{code=_FENCED,val=-144,str=\"Failed to end transaction\"}")
        except RuntimeError as exc:
            raise TransactionTimedOutError("batch 2 was not written: the transaction timed out",
                                           fix="lower max_offsets_per_trigger") from exc
    except TransactionTimedOutError as err:
        formatted = "".join(traceback.format_exception(err))
    return ("\n  An exception was thrown from the Python worker. Please see the stack trace below.\n" + formatted)


@pytest.mark.parametrize(("text", "kind"), [
    (PYSPARK_STR, "TransactionTimedOutError"),
    (JVM_STACK, "TransactionTimedOutError"),
    (CARETS, "ModuleNotFoundError"),
    (_chained(), "TransactionTimedOutError"),
    ("Traceback (most recent call last):\n  File \"w.py\", line 1, in t\nRuntimeError\n", "RuntimeError"),
])
def test_a_python_workers_failure_is_counted_as_the_error_the_task_raised(text: str, kind: str) -> None:
    assert worker_exception_type(text) == kind
    assert failure_kind("PythonException", text) == kind
    # PySpark leaves a JVM error it does not convert as py4j's, whose text holds the same traceback.
    assert failure_kind("Py4JJavaError", f"An error occurred while calling o81.collectToPython.\n: {text}") == kind


def test_the_last_traceback_is_the_raised_exception() -> None:
    # Spark repeats the task's failure in the driver's stack trace ("Caused by:"), and a chain lists the cause first.
    assert "RuntimeError" in _chained()
    assert worker_exception_type(_chained() + "\n\tat org.apache.spark.Foo\nCaused by: " + JVM_STACK) == (
        "TransactionTimedOutError")


@pytest.mark.parametrize("text", [
    "Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times",  # no traceback
    "Traceback (most recent call last):\n  File \"w.py\", line 1, in t\n",  # cut before the exception line
    "Traceback (most recent call last):\n  File \"w.py\", line 1, in t\n(not an exception line)\n",
])
def test_a_wrapper_without_a_readable_worker_exception_keeps_its_own_type(text: str) -> None:
    assert failure_kind("PythonException", text) == "PythonException"


def test_an_error_raised_in_the_driver_is_its_own_type_whatever_its_text() -> None:
    assert failure_kind("InconsistentOffsetsError", PYSPARK_STR) == "InconsistentOffsetsError"
    assert failure_kind("TransactionTimedOutError", "batch 2 was not written") == "TransactionTimedOutError"
