"""The ``kind`` label of ``eos_batch_failures_total``: the type of the error that failed the batch.

A failure in the driver is its own type. A Python executor writer's task fails in a Python worker,
and Spark hands the driver a wrapper (PySpark's ``PythonException``, or py4j's ``Py4JJavaError`` when
PySpark does not convert the JVM's error) whose text holds the worker's traceback: the kind is the
type the task raised there (e.g. ``TransactionTimedOutError``, the kind the JVM writer reports for the
same failure, whose driver side rebuilds it from the task's facts), not the wrapper's.
"""

from __future__ import annotations

import re

__all__ = ["PYTHON_WORKER_WRAPPERS", "failure_kind", "worker_exception_type"]

#: The driver-side types that carry a Python worker's exception as text (by name: the core imports no PySpark).
PYTHON_WORKER_WRAPPERS = frozenset({"PythonException", "Py4JJavaError"})

_TRACEBACK = "Traceback (most recent call last):"
# The exception line ends a traceback at column 0: ``package.module.Name: message`` or a bare ``Name``.
_EXCEPTION_LINE = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?::|$)")


def worker_exception_type(text: str) -> str | None:
    """The type name (without its module) of the exception the last Python traceback in ``text`` ends with.

    The last one: with chained exceptions, and when Spark repeats the task's failure as the JVM's
    ``Caused by``, the last traceback is the exception that was raised. ``None`` when ``text`` holds no
    complete traceback.
    """
    at = text.rfind(_TRACEBACK)
    if at < 0:
        return None
    for line in text[at + len(_TRACEBACK):].splitlines()[1:]:
        if not line.strip() or line[0].isspace():
            continue  # the frames, their source lines and caret lines are indented
        found = _EXCEPTION_LINE.match(line)
        return found.group(1).rsplit(".", 1)[-1] if found else None
    return None


def failure_kind(error_type: str, text: str) -> str:
    """The ``kind`` of a batch's failure.

    :param error_type: the type name of the exception the driver caught.
    :param text: its text (``str()``), which for a Python worker's wrapper holds the worker's traceback.
    :returns: the worker's exception type for a wrapper whose text names one, else ``error_type``.
    """
    if error_type in PYTHON_WORKER_WRAPPERS:
        return worker_exception_type(text) or error_type
    return error_type
