"""The base of the operators that run a use case (:mod:`airflow_provider_eos.usecases`): only presentation.

The operator loads the pipeline spec (optionally with a ``kafka`` connection's settings),
builds the :class:`~airflow_provider_eos.usecases.clients.PipelineClients` with its checkpoint
connection's storage options, calls the use case the ``eos`` CLI calls, logs the same text
and returns the same data (XCom). The outcome decides the task's state:

- ``ok``: the task succeeds with the result's data as its return value;
- ``finding``: the data is pushed as the return value, then ``AirflowFailException`` (a
  retry cannot change a verdict or a configuration) with the summary and the text;
- an error (``EosError``) that a retry cannot change (an invalid spec, a malformed or missing
  checkpoint, a refused repair) fails with ``AirflowFailException``; the rest (Kafka
  unreachable, the job still looks alive) with ``AirflowException``, retried as configured.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, BaseXCom
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_provider_eos.core.errors import (
    CheckpointError,
    EosError,
    InconsistentOffsetsError,
    MarkerError,
    RepairError,
    SpecError,
)
from airflow_provider_eos.core.flags import parse_flag
from airflow_provider_eos.core.transactional_ids import TransactionalIdError
from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook
from airflow_provider_eos.hooks.kafka_admin import load_pipeline_spec
from airflow_provider_eos.usecases.clients import PipelineClients

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_eos.usecases.result import UseCaseResult

__all__ = ["EosUseCaseOperator", "as_batch", "as_bool", "task_failures"]

# Errors about durable state or the task's own arguments: retrying cannot change the outcome.
_NOT_RETRYABLE: tuple[type[EosError], ...] = (
    SpecError,
    CheckpointError,
    MarkerError,
    RepairError,
    InconsistentOffsetsError,
    TransactionalIdError,
)


@contextmanager
def task_failures() -> Iterator[None]:
    """Turn a use case's error into a task failure with its message and fix."""
    try:
        yield
    except _NOT_RETRYABLE as err:
        raise AirflowFailException(str(err)) from err
    except EosError as err:
        raise AirflowException(str(err)) from err


def as_bool(value: bool | str, field: str) -> bool:
    """Read a flag that may arrive as a rendered template string (``"False"``)."""
    flag = parse_flag(value)
    if flag is None:
        raise AirflowFailException(f"{field} is {value!r}; use true or false")
    return flag


def as_batch(value: int | str | None, field: str) -> int | None:
    """Read a batch id that may arrive as a rendered template string; empty means none."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if text in ("", "None", "null"):
        return None
    try:
        return int(text)
    except ValueError:
        raise AirflowFailException(
            f"{field} is {value!r}; use a batch id (an integer, -1 for before the first batch)"
        ) from None


class EosUseCaseOperator(BaseOperator):
    """Shared arguments: which pipeline, and where its credentials come from.

    :param spec_path: the pipeline spec file (YAML or JSON). (templated)
    :param kafka_conn_id: an Airflow ``kafka`` connection whose librdkafka config replaces the
        spec's connection settings; ``None`` uses the spec's ``kafka`` dict. (templated)
    :param checkpoint_conn_id: an Airflow connection with the checkpoint storage credentials
        (see :class:`~airflow_provider_eos.hooks.checkpoint_storage.CheckpointStorageHook`);
        ``None`` uses the worker's ambient credentials. (templated)
    """

    template_fields: Sequence[str] = ("spec_path", "kafka_conn_id", "checkpoint_conn_id")

    def __init__(
        self,
        *,
        spec_path: str,
        kafka_conn_id: str | None = None,
        checkpoint_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spec_path = spec_path
        self.kafka_conn_id = kafka_conn_id
        self.checkpoint_conn_id = checkpoint_conn_id

    def pipeline_clients(self) -> PipelineClients:
        """The spec (with the connection's Kafka settings, secrets masked) and the checkpoint storage options.

        Call inside :func:`task_failures`: an invalid spec raises ``SpecError``.
        """
        # A rendered empty template means "not given", like None.
        spec = load_pipeline_spec(self.spec_path, self.kafka_conn_id or None)
        source = f"connection {self.kafka_conn_id!r}" if self.kafka_conn_id else "the spec"
        self.log.info(
            "Pipeline %r from %s; Kafka %s from %s", spec.name, self.spec_path, spec.kafka["bootstrap.servers"], source
        )
        storage = CheckpointStorageHook(self.checkpoint_conn_id or None).get_storage_options(spec.checkpoint_location)
        return PipelineClients(spec, storage)

    def present(
        self, context: Context, result: UseCaseResult[Any], *, max_rows: int | None = None, hint: str = ""
    ) -> dict[str, Any]:
        """Log the result's text; return its data, or push the data and fail on a finding.

        :param max_rows: partitions shown in the log's tables (the XCom holds all).
        :param hint: the next step's Airflow spelling, appended to the failure message.
        """
        text = result.render(max_rows=max_rows)
        data = result.data()
        if result.ok:
            self.log.info("%s", text)
            return data
        self.log.error("%s", text)
        if self.do_xcom_push:
            # The task is about to fail, so the return value would never reach XCom.
            context["ti"].xcom_push(key=BaseXCom.XCOM_RETURN_KEY, value=data)
        raise AirflowFailException(f"pipeline {result.pipeline!r}: {result.summary}.\n{text}{hint}")
