"""The base of the operators that run a use case (:mod:`airflow_provider_eos.usecases`): only presentation.

The operator loads the pipeline spec (optionally with a ``kafka`` connection's settings),
builds the :class:`~airflow_provider_eos.usecases.clients.PipelineClients` with its checkpoint
connection's storage options, calls the use case the ``eos`` CLI calls, logs the same text
and returns the same data (XCom). The outcome decides the task's state:

- ``ok``: the task succeeds with the result's data as its return value;
- ``finding``: the data is pushed as the return value, then ``AirflowFailException`` (a
  retry cannot change a verdict or a configuration) with the summary and the text;
- an error (``EosError``) that a retry cannot change (an invalid spec, a malformed or missing
  checkpoint, a refused repair, a missing ACL: its type's ``retryable`` is false) fails with
  ``AirflowFailException``; the rest (Kafka unreachable, the job still looks alive) with
  ``AirflowException``, retried as configured.

What a person reads: a compact Markdown card of the result (:mod:`airflow_provider_eos.core.presentation`:
the verdict table worst rows first, the dry-run plan, why a request was refused; bounded in
size) becomes the task's ``result`` template field, re-sent after execution
(``overwrite_rtif_after_execution``), so Airflow's UI shows it in the task's "Rendered Templates"
tab in every outcome, success, finding or error; it also opens the task log. Airflow 3.3 offers
a task no way to write a run or task-instance note, and its XCom tab shows a string on one
wrapped line, so the rendered field is where a readable table reaches the UI. The XCom
``return_value`` keeps the full data; kafka-python's connection chatter (its ``kafka`` loggers)
is kept at WARNING while a use case runs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

# common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException
from airflow.sdk import BaseOperator

# The Task SDK's own module: Airflow 3.1's `airflow.sdk` (SDK 1.1) does not re-export BaseXCom yet.
from airflow.sdk.bases.xcom import BaseXCom

from airflow_provider_eos.airflow_stats import emit_report
from airflow_provider_eos.core.errors import EosError, RepairError, UnsafeToActError
from airflow_provider_eos.core.flags import parse_flag
from airflow_provider_eos.core.presentation import (
    DEFAULT_MAX_CHARS,
    ResultHeading,
    error_card,
    result_text,
    text_card,
)
from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook
from airflow_provider_eos.hooks.kafka_admin import load_pipeline_spec
from airflow_provider_eos.usecases.clients import DEFAULT_CONNECT_TIMEOUT_S, PipelineClients

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_eos.usecases.result import UseCaseResult

__all__ = [
    "EosUseCaseOperator",
    "ResultFieldMixin",
    "as_batch",
    "as_bool",
    "as_fingerprint",
    "card_budget",
    "heading_of",
    "quiet_kafka_client_logs",
    "task_failures",
]

#: kafka-python's loggers (``kafka.conn``, ``kafka.client`` ...): INFO is a line per connection step.
KAFKA_PYTHON_LOGGER = "kafka"


@contextmanager
def task_failures() -> Iterator[None]:
    """Turn a use case's error into a task failure with its message and fix, retried only if its type says
    a retry can help (:attr:`~airflow_provider_eos.core.errors.EosError.retryable`)."""
    try:
        yield
    except EosError as err:
        raise (AirflowException if err.retryable else AirflowFailException)(str(err)) from err


@contextmanager
def quiet_kafka_client_logs(level: int = logging.WARNING) -> Iterator[None]:
    """Keep kafka-python's INFO connection chatter out of the task log while the block runs.

    Its warnings and errors still show; the level is restored afterwards.
    """
    logger = logging.getLogger(KAFKA_PYTHON_LOGGER)
    saved = logger.level
    if logger.getEffectiveLevel() < level:
        logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(saved)


def card_budget() -> int:
    """How long a result card may be: under ``[core] max_templated_field_length``, so Airflow never cuts it."""
    # common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
    from airflow.providers.common.compat.sdk import conf

    try:
        limit = conf.getint("core", "max_templated_field_length")
    except Exception:  # an unreadable setting keeps the default budget
        return DEFAULT_MAX_CHARS
    return max(500, min(DEFAULT_MAX_CHARS, limit - 100))


def heading_of(result: UseCaseResult[Any], *, dry_run: bool = False) -> ResultHeading:
    """The card's heading of a use case's result."""
    return ResultHeading(
        use_case=result.use_case,
        pipeline=result.pipeline,
        outcome=result.outcome.value,
        summary=result.summary,
        next_step=result.next_step,
        notes=result.notes,
        dry_run=dry_run,
    )


class ResultFieldMixin:
    """A ``result`` template field the task fills during execution; Airflow stores it once more afterwards.

    Put ``"result"`` first in the operator's ``template_fields``; the "Rendered Templates" tab then
    shows the card at the top, in every outcome (Airflow's ``finalize`` re-sends the rendered
    fields after success, failure and skip alike).
    """

    overwrite_rtif_after_execution: bool = True
    result: str

    def show_result(self, card: str) -> None:
        """Make ``card`` the task's ``result`` and open the log with it."""
        self.result = card
        self.log.info("Result (also in this task's Rendered Templates tab, field 'result'):\n%s", card)  # type: ignore[attr-defined]


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


def as_fingerprint(value: str | None) -> str | None:
    """Read a plan fingerprint that may arrive as a rendered template string; empty means none."""
    text = "" if value is None else str(value).strip()
    return None if text in ("", "None", "null") else text


class EosUseCaseOperator(ResultFieldMixin, BaseOperator):
    """Shared arguments: which pipeline, and where its credentials come from.

    :param spec_path: the pipeline spec file (YAML or JSON). (templated)
    :param kafka_conn_id: an Airflow ``kafka`` connection whose librdkafka config replaces the
        spec's connection settings; ``None`` uses the spec's ``kafka`` dict. (templated)
    :param checkpoint_conn_id: an Airflow connection with the checkpoint storage credentials
        (see :class:`~airflow_provider_eos.hooks.checkpoint_storage.CheckpointStorageHook`);
        ``None`` uses the worker's ambient credentials. (templated)
    :param kafka_connect_timeout_s: how long the first contact waits for any broker to answer
        before the task fails with ``KafkaUnreachableError`` (retried as configured); the CLI's
        ``--timeout``.

    After execution the ``result`` field holds the result's card (see the module docstring).
    """

    template_fields: Sequence[str] = ("result", "spec_path", "kafka_conn_id", "checkpoint_conn_id")

    def __init__(
        self,
        *,
        spec_path: str,
        kafka_conn_id: str | None = None,
        checkpoint_conn_id: str | None = None,
        kafka_connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spec_path = spec_path
        self.kafka_conn_id = kafka_conn_id
        self.checkpoint_conn_id = checkpoint_conn_id
        self.kafka_connect_timeout_s = kafka_connect_timeout_s
        self.result = ""
        self._pipeline_name: str | None = None

    def pipeline_clients(self) -> PipelineClients:
        """The spec (with the connection's Kafka settings, secrets masked) and the checkpoint storage options.

        Call inside :func:`task_failures`: an invalid spec raises ``SpecError``.
        """
        # A rendered empty template means "not given", like None.
        spec = load_pipeline_spec(self.spec_path, self.kafka_conn_id or None)
        self._pipeline_name = spec.name
        source = f"connection {self.kafka_conn_id!r}" if self.kafka_conn_id else "the spec"
        self.log.info(
            "Pipeline %r from %s; Kafka %s from %s", spec.name, self.spec_path, spec.kafka["bootstrap.servers"], source
        )
        storage = CheckpointStorageHook(self.checkpoint_conn_id or None).get_storage_options(spec.checkpoint_location)
        return PipelineClients(spec, storage, connect_timeout_s=self.kafka_connect_timeout_s)

    @contextmanager
    def use_case_failures(self, use_case: str) -> Iterator[None]:
        """:func:`task_failures`, with kafka-python kept quiet and the error's card as the ``result``.

        The card says why: e.g. an abort refused because the job looks alive names the signs
        and the fix.
        """
        try:
            with quiet_kafka_client_logs(), task_failures():
                yield
        except Exception as failure:
            cause = failure.__cause__ if isinstance(failure.__cause__, EosError) else failure
            refused = isinstance(cause, UnsafeToActError | RepairError)
            summary = (
                f"{use_case} refused to act: why and the fix below" if refused
                else f"{use_case} did not run to the end: the error and its fix below"
            )
            heading = ResultHeading(use_case, self._pipeline_name or str(self.spec_path),
                                    "refused" if refused else "error", summary)
            self.show_result(error_card(heading, cause))
            raise

    def card(self, result: UseCaseResult[Any], *, max_rows: int | None) -> str:
        """The result's card; the recovery operators draw their own table, the rest show the report's text."""
        return text_card(heading_of(result), result_text(result, max_rows=max_rows), max_chars=card_budget())

    def present(
        self, context: Context, result: UseCaseResult[Any], *, max_rows: int | None = None, hint: str = ""
    ) -> dict[str, Any]:
        """Show the card, log the result's text; return its data, or push the data and fail on a finding.

        :param max_rows: partitions shown in the log's tables (the XCom holds all).
        :param hint: the next step's Airflow spelling, appended to the failure message.

        The report's task metrics (health, verification, abort) go to Airflow's metrics first.
        """
        self.show_result(self.card(result, max_rows=max_rows))
        emit_report(result.pipeline, result.report)
        text = result_text(result, max_rows=max_rows)
        data = result.data()
        if result.ok:
            self.log.info("Full report:\n%s", text)
            return data
        self.log.error("Full report:\n%s", text)
        if self.do_xcom_push:
            # The task is about to fail, so the return value would never reach XCom.
            context["ti"].xcom_push(key=BaseXCom.XCOM_RETURN_KEY, value=data)
        # The table is logged above and shown as the result: the failure names the finding and the step.
        raise AirflowFailException(
            f"pipeline {result.pipeline!r}: {result.summary}. Next step: {result.next_step}{hint}"
        )
