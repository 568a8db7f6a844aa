"""Recovery tasks (DESIGN.md section 3): abort open transactions, verify, rewind, align.

Each operator loads the pipeline spec from ``spec_path``, optionally takes the Kafka settings
from a ``kafka`` connection and the checkpoint storage credentials from another connection,
calls the core, logs the core's table, and returns the core's machine-readable result (so it
lands in XCom). Core errors become task failures carrying the core's message and fix:
conditions a retry cannot change (an invalid spec, a malformed checkpoint, a refused repair, a
verdict that needs a repair) raise ``AirflowFailException``, so the task fails without
retrying; the rest (Kafka unreachable, the job still looks alive) raise ``AirflowException``
and are retried as configured.
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
from airflow_provider_eos.core.repair import plan_align, rewind
from airflow_provider_eos.core.transactional_ids import TransactionalIdError
from airflow_provider_eos.core.verification import VerificationReport, verify_checkpoint
from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook
from airflow_provider_eos.hooks.kafka_admin import load_pipeline_spec
from airflow_provider_eos.kafka.client_config import admin_config
from airflow_provider_eos.kafka.group_offsets import sink_group_offsets, write_committed_offsets

if TYPE_CHECKING:
    from airflow.sdk import Context
    from confluent_kafka.admin import AdminClient

    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.markers import CommittedOffsets
    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = [
    "AbortOpenTransactionsOperator",
    "AlignGroupOffsetsOperator",
    "RewindCheckpointOperator",
    "VerifyCommittedOffsetsOperator",
]

# Errors about durable state or the task's own arguments: retrying cannot change the outcome.
_NOT_RETRYABLE: tuple[type[EosError], ...] = (
    SpecError,
    CheckpointError,
    MarkerError,
    RepairError,
    InconsistentOffsetsError,
    TransactionalIdError,
)
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_METADATA_TIMEOUT_S = 30


@contextmanager
def _as_task_failure() -> Iterator[None]:
    """Turn a core error into a task failure with the core's message and fix."""
    try:
        yield
    except _NOT_RETRYABLE as err:
        raise AirflowFailException(str(err)) from err
    except EosError as err:
        raise AirflowException(str(err)) from err


def _as_bool(value: bool | str, field: str) -> bool:
    """Read a flag that may arrive as a rendered template string (``"False"``)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise AirflowFailException(f"{field} is {value!r}; use true or false")


def _as_batch(value: int | str | None, field: str) -> int | None:
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


class _EosRecoveryOperator(BaseOperator):
    """Shared arguments: which pipeline, and where its credentials come from.

    :param spec_path: the pipeline spec file (YAML or JSON). (templated)
    :param kafka_conn_id: an Airflow ``kafka`` connection whose librdkafka config replaces the
        spec's connection settings; ``None`` uses the spec's ``kafka`` dict. (templated)
    :param checkpoint_conn_id: an Airflow connection with the checkpoint storage credentials
        (see :class:`~airflow_provider_eos.hooks.checkpoint_storage.CheckpointStorageHook`);
        ``None`` uses the worker's ambient credentials. (templated)
    """

    template_fields: Sequence[str] = ("spec_path", "kafka_conn_id", "checkpoint_conn_id")
    ui_color = "#fde2c4"

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

    def load_spec(self) -> PipelineSpec:
        """Return the spec with the connection's Kafka settings applied, secrets masked."""
        spec = load_pipeline_spec(self.spec_path, self.kafka_conn_id or None)
        source = f"connection {self.kafka_conn_id!r}" if self.kafka_conn_id else "the spec"
        self.log.info(
            "Pipeline %r from %s; Kafka %s from %s",
            spec.name,
            self.spec_path,
            spec.kafka["bootstrap.servers"],
            source,
        )
        return spec

    def checkpoint_reader(self, spec: PipelineSpec) -> CheckpointReader:
        """Return the reader of the spec's checkpoint, with the storage connection's credentials."""
        return CheckpointStorageHook(self.checkpoint_conn_id or None).get_reader(spec.checkpoint_location)

    @staticmethod
    def admin_client(spec: PipelineSpec) -> AdminClient:
        """Return a confluent-kafka admin client on the spec's connection settings."""
        from confluent_kafka.admin import AdminClient

        return AdminClient(admin_config(spec))

    def committed_offsets(self, spec: PipelineSpec, reader: CheckpointReader, admin: AdminClient) -> CommittedOffsets:
        """The sink group's committed offsets on every partition the verification compares."""
        return sink_group_offsets(admin, spec, reader, timeout_s=_METADATA_TIMEOUT_S)

    def push_before_failing(self, context: Context, value: dict[str, Any]) -> None:
        """Make ``value`` the task's XCom ``return_value`` although the task is about to fail."""
        if self.do_xcom_push:
            context["ti"].xcom_push(key=BaseXCom.XCOM_RETURN_KEY, value=value)

    def verification(self, spec: PipelineSpec, reader: CheckpointReader, admin: AdminClient) -> VerificationReport:
        """Verify the sink group against the checkpoint.

        A checkpoint that does not exist yet verifies as "nothing committed": a pipeline's first
        run must pass, and a wrong location of a pipeline that ran before still fails, because
        the group's markers then name a query the (missing) checkpoint does not have.
        """
        if not reader.exists():
            self.log.info("No checkpoint at %s yet: the pipeline has not committed a batch", spec.checkpoint_location)
        return verify_checkpoint(reader, self.committed_offsets(spec, reader, admin))


class AbortOpenTransactionsOperator(_EosRecoveryOperator):
    """Abort the pipeline's lingering and hanging transactions (those under its transactional id prefix).

    Run it after a failure and before restarting the job, so ``read_committed`` consumers of the
    output move on. Logs the report's table, returns its ``to_dict()`` (XCom) and fails when a
    transaction under the prefix could not be aborted.

    :param force: act even if the job looks alive (a recent checkpoint commit, or an ongoing
        transaction younger than its timeout); fencing then breaks a live job's next commit.
        (templated)
    :param dry_run: only report what would be aborted. (templated)
    """

    template_fields: Sequence[str] = (*_EosRecoveryOperator.template_fields, "force", "dry_run")

    def __init__(self, *, force: bool | str = False, dry_run: bool | str = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.force = force
        self.dry_run = dry_run

    def execute(self, context: Context) -> dict[str, Any]:
        """Scan, abort unless dry-running, rescan; return the report."""
        from airflow_provider_eos.kafka.transactions_admin import abort_open_transactions

        force = _as_bool(self.force, "force")
        dry_run = _as_bool(self.dry_run, "dry_run")
        with _as_task_failure():
            spec = self.load_spec()
            # The liveness check reads the checkpoint's newest commit, with the same credentials.
            storage_options = CheckpointStorageHook(self.checkpoint_conn_id or None).get_storage_options(
                spec.checkpoint_location
            )
            report = abort_open_transactions(spec, force=force, execute=not dry_run, storage_options=storage_options)
        self.log.info("%s", report.render())
        result = report.to_dict()
        if report.executed and not report.ok:
            self.push_before_failing(context, result)
            raise AirflowException(
                f"transactions under prefix {spec.transactional_id_prefix!r} are still open after "
                f"aborting:\n{report.render()}"
            )
        return result

    def _push_before_failing(self, context: Any, value: dict[str, Any]) -> None:
        if self.do_xcom_push:
            context["ti"].xcom_push(key=BaseXCom.XCOM_RETURN_KEY, value=value)


class VerifyCommittedOffsetsOperator(_EosRecoveryOperator):
    """Verify the sink group's committed offsets and batch markers against the checkpoint.

    Passes on ``IN_SYNC`` and ``KAFKA_AHEAD_SAFE``. Fails, without retrying, on
    ``KAFKA_BEHIND``, ``NO_MARKER`` and ``DIVERGED``: each needs a repair or a person, which a
    retry would only delay. The verification table and the next step go to the log and into
    the failure message. The report's ``to_dict()`` is the task's XCom ``return_value`` in
    every outcome (pushed before failing), so a downstream repair task can template, e.g.,
    ``{{ ti.xcom_pull(task_ids='verify')['rewind_to_batch'] }}``.

    :param max_table_rows: partitions shown in the log table, worst first (the XCom holds all).
    """

    def __init__(self, *, max_table_rows: int = 100, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_table_rows = max_table_rows

    def execute(self, context: Context) -> dict[str, Any]:
        """Verify; return the report, or push it and fail."""
        with _as_task_failure():
            spec = self.load_spec()
            reader = self.checkpoint_reader(spec)
            report = self.verification(spec, reader, self.admin_client(spec))
        table = report.render(max_rows=self.max_table_rows)
        result = report.to_dict()
        if report.ok:
            self.log.info("%s", table)
            return result
        self.log.error("%s", table)
        self.push_before_failing(context, result)
        raise AirflowFailException(
            f"pipeline {spec.name!r}: the sink group {spec.group_id!r} and checkpoint "
            f"{spec.checkpoint_location} disagree ({report.overall.value}).\n{table}{_airflow_hint(report)}"
        )


def _airflow_hint(report: VerificationReport) -> str:
    """The next step's Airflow spelling, after the CLI spelling the core gives."""
    if report.rewind_to_batch is not None:
        return (
            f"\nIn Airflow: RewindCheckpointOperator(to_batch={report.rewind_to_batch}) shows the plan; "
            "with dry_run=False it executes it (stop the job first)."
        )
    if report.overall.value == "NO_MARKER":
        return "\nIn Airflow: AlignGroupOffsetsOperator shows the plan; with dry_run=False it commits it."
    return ""


class RewindCheckpointOperator(_EosRecoveryOperator):
    """Rewind the checkpoint to batch ``to_batch``: later batch files move into a backup folder.

    The repair for ``KAFKA_BEHIND``. Dry run by default: logs the before/after table and the
    files that would move, changes nothing. With ``dry_run=False`` the files move into
    ``<checkpoint>.eos-backup-<UTC time>/`` next to the checkpoint (nothing is deleted); stop
    the job first. Returns the result's ``to_dict()``.

    :param to_batch: the batch to rewind to (``-1``: before the first batch). ``None`` (or an
        empty rendered template) runs the verification and takes the batch it names, failing
        when the verdict is not ``KAFKA_BEHIND``. (templated)
    :param dry_run: only plan. (templated)
    """

    template_fields: Sequence[str] = (*_EosRecoveryOperator.template_fields, "to_batch", "dry_run")

    def __init__(self, *, to_batch: int | str | None = None, dry_run: bool | str = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.to_batch = to_batch
        self.dry_run = dry_run

    def execute(self, context: Context) -> dict[str, Any]:
        """Plan (and unless dry-running, execute) the rewind; return the result."""
        dry_run = _as_bool(self.dry_run, "dry_run")
        to_batch = _as_batch(self.to_batch, "to_batch")
        with _as_task_failure():
            spec = self.load_spec()
            reader = self.checkpoint_reader(spec)
            if to_batch is None:
                report = self.verification(spec, reader, self.admin_client(spec))
                if report.rewind_to_batch is None:
                    raise AirflowFailException(
                        f"no to_batch given and verification names no batch to rewind to "
                        f"(verdict {report.overall.value}); nothing to rewind.\n{report.render(max_rows=20)}"
                    )
                to_batch = report.rewind_to_batch
                self.log.info("Verification says %s: rewinding to batch %d", report.overall.value, to_batch)
            result = rewind(reader, to_batch, execute=not dry_run)
        self.log.info("%s", result.render())
        return result.to_dict()


class AlignGroupOffsetsOperator(_EosRecoveryOperator):
    """Commit the checkpoint's last committed batch ``offsets/C`` with marker ``C`` to the sink group.

    The repair for ``NO_MARKER``; a no-op on ``IN_SYNC``; refused for the other verdicts unless
    ``force`` (aligning then loses or duplicates output). Dry run by default: logs the
    before/after table and changes nothing. With ``dry_run=False`` it commits, then verifies
    again and logs the result. The group must have no active members (stop the job first).
    Returns the plan's ``to_dict()`` plus ``executed`` and ``verdict_after``.

    :param dry_run: only plan. (templated)
    :param force: align despite a verdict that makes aligning lose or duplicate output. (templated)
    :param max_table_rows: partitions shown in the log table (the XCom holds all).
    """

    template_fields: Sequence[str] = (*_EosRecoveryOperator.template_fields, "dry_run", "force")

    def __init__(
        self, *, dry_run: bool | str = True, force: bool | str = False, max_table_rows: int = 100, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.dry_run = dry_run
        self.force = force
        self.max_table_rows = max_table_rows

    def execute(self, context: Context) -> dict[str, Any]:
        """Plan (and unless dry-running, commit) the alignment; return the plan and outcome."""
        dry_run = _as_bool(self.dry_run, "dry_run")
        force = _as_bool(self.force, "force")
        with _as_task_failure():
            spec = self.load_spec()
            reader = self.checkpoint_reader(spec)
            admin = self.admin_client(spec)
            plan = plan_align(reader, self.committed_offsets(spec, reader, admin), force=force)
            self.log.info("%s", plan.render(max_rows=self.max_table_rows))
            result: dict[str, Any] = {**plan.to_dict(), "executed": False, "verdict_after": None}
            if dry_run:
                if not plan.is_noop:
                    self.log.info("Dry run: nothing committed. Set dry_run=False to commit the plan above.")
                return result
            if plan.is_noop:
                return result
            write_committed_offsets(admin, spec.group_id, plan.offsets_with_metadata())
            after = self.verification(spec, reader, admin)
        table = after.render(max_rows=self.max_table_rows)
        result = {**result, "executed": True, "verdict_after": after.overall.value}
        if not after.ok and not force:
            # The commit was acknowledged, yet the group does not hold the plan: say so, not "done".
            self.push_before_failing(context, result)
            raise AirflowException(
                f"committed the plan, but verification afterwards says {after.overall.value}:\n{table}"
            )
        self.log.info("Committed. Verification afterwards:\n%s", table)
        return result
