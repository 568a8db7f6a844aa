"""The sink's enumerated settings: its delivery guarantee, where it writes, what runs its executor tasks.

The one spelling of each that the spec, the CLI, the job and the writers' choice share;
:class:`~airflow_provider_eos.core.spec.PipelineSpec` holds one of each.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ExecutorWriter", "Mode", "Writers"]


class Mode(StrEnum):
    """The delivery guarantee of the sink: the one spelling the spec, the CLI and the job share."""

    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"


class Writers(StrEnum):
    """Where the exactly-once sink writes: the driver, the executors, or chosen per plan (docs/architecture.md)."""

    AUTO = "auto"
    DRIVER = "driver"
    EXECUTORS = "executors"


class ExecutorWriter(StrEnum):
    """What runs the sink's tasks on the executors (docs/architecture.md, "The writers"; design notes 32 and 43).

    ``python``: PySpark's Python workers (``mapInArrow``): confluent-kafka producers for the executor
    writers, pyarrow for the driver writer's spill. ``jvm``: the executor JVM (the ``jvm/`` module's
    data sources): the Kafka Java client, and Spark's own Arrow writer for the spill. Same
    transactional ids, markers, task order and spill files; the protocol's decisions stay in Python
    either way.
    """

    PYTHON = "python"
    JVM = "jvm"
