"""The :class:`HealthReport`: every finding over the window, and the tables behind them.

The report is a pydantic model: ``model_dump(mode="json")`` (alias :meth:`HealthReport.to_dict`)
is what the CLI prints and the sensor and trigger push to XCom, and ``model_validate`` reads it
back. Its text and card forms are in :mod:`airflow_provider_eos.core.presentation`.
"""

from __future__ import annotations

from pydantic import computed_field

from airflow_provider_eos.core.broker_protocol import BrokerProtocol
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.health.findings import Finding, OpenTransaction, PartitionGap
from airflow_provider_eos.core.health.lag_rules import PartitionLag
from airflow_provider_eos.core.health.samples import VerificationSample
from airflow_provider_eos.core.health.statuses import HealthStatus, iso_utc
from airflow_provider_eos.core.health.thresholds import HealthThresholds
from airflow_provider_eos.core.verification.writers import WritersInUse

__all__ = ["HealthReport"]


class HealthReport(FrozenModel):
    """The outcome of :func:`~airflow_provider_eos.core.health.evaluate`.

    Its JSON form adds ``is_healthy``, ``evaluated_at`` and ``last_commit_time`` (ISO 8601, UTC),
    ``commit_age_ms`` and ``total_lag`` to the fields.

    :param pipeline: the pipeline's name.
    :param status: the worst finding's status.
    :param evaluated_at_ms: the newest sample's time, the "now" of every age.
    :param samples: samples in the window.
    :param window_span_ms: time between the oldest and the newest sample.
    :param thresholds: the thresholds used.
    :param checkpoint_exists: whether the checkpoint exists.
    :param query_id: the checkpoint's query id.
    :param last_committed: the newest committed batch.
    :param last_commit_time_ms: when it was committed.
    :param partitions: the lag evaluation per input partition.
    :param gaps: LSO vs HWM per input, output and dead-letter partition.
    :param transactions: the open transactions under the prefix.
    :param verification: the newest sample's verification.
    :param findings: every finding, worst first.
    :param notes: the newest sample's notes.
    :param writers: the writer the job uses, from the newest sample (``None``: not read).
    :param broker_protocol: the cluster's transaction protocol and feature levels, from the newest sample.
    """

    pipeline: str
    status: HealthStatus
    evaluated_at_ms: int
    samples: int
    window_span_ms: int
    thresholds: HealthThresholds
    checkpoint_exists: bool
    query_id: str | None
    last_committed: int | None
    last_commit_time_ms: int | None
    partitions: tuple[PartitionLag, ...]
    gaps: tuple[PartitionGap, ...]
    transactions: tuple[OpenTransaction, ...]
    verification: VerificationSample | None
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()
    writers: WritersInUse | None = None
    broker_protocol: BrokerProtocol | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def is_healthy(self) -> bool:
        """True unless UNHEALTHY: a DEGRADED pipeline still makes progress."""
        return self.status is not HealthStatus.UNHEALTHY

    @computed_field  # type: ignore[prop-decorator]
    @property
    def evaluated_at(self) -> str | None:
        """:attr:`evaluated_at_ms` as ISO 8601 text in UTC."""
        return iso_utc(self.evaluated_at_ms)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def last_commit_time(self) -> str | None:
        """:attr:`last_commit_time_ms` as ISO 8601 text in UTC."""
        return iso_utc(self.last_commit_time_ms)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def commit_age_ms(self) -> int | None:
        """Age of the newest ``commits/N`` at :attr:`evaluated_at_ms` (``None``: no commit)."""
        if self.last_commit_time_ms is None:
            return None
        return max(0, self.evaluated_at_ms - self.last_commit_time_ms)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_lag(self) -> int:
        """The sum of the input partitions' newest lag."""
        return sum(row.lag for row in self.partitions)

    @property
    def problems(self) -> tuple[Finding, ...]:
        """The findings that are not HEALTHY."""
        return tuple(f for f in self.findings if f.status is not HealthStatus.HEALTHY)

    def committed_since(self, moment_ms: int) -> bool:
        """Whether the checkpoint's newest commit is newer than ``moment_ms``."""
        return self.last_commit_time_ms is not None and self.last_commit_time_ms > moment_ms
