"""One look at the pipeline: the :class:`HealthSample` and the per-partition values it holds.

The Kafka and checkpoint I/O that takes a sample lives in
:mod:`airflow_provider_eos.kafka.health_probe`. Samples are pydantic models: the health trigger
carries them between polls as ``model_dump(mode="json")`` and reads them back with
``model_validate``.
"""

from __future__ import annotations

from airflow_provider_eos.core.broker_protocol import BrokerProtocol
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.topic_partition import PartitionRow
from airflow_provider_eos.core.transactions import Transaction
from airflow_provider_eos.core.verification.writers import WritersInUse

__all__ = ["HealthSample", "InFlightBatch", "InputPartitionSample", "OutputPartitionSample", "VerificationSample"]


class InputPartitionSample(PartitionRow):
    """One input partition in one sample.

    :param tp: the partition.
    :param lso: last stable offset (``read_committed`` end offset).
    :param hwm: high watermark (``read_uncommitted`` end offset).
    :param log_start: the earliest retained offset (``None``: not read).
    :param committed: the sink group's committed offset (``None``: none).
    :param marker_batch: the batch its marker names (``None``: no readable marker).
    :param waiting_ms: how long, at least, the oldest record the group has not read has waited, by the
        brokers' record timestamps: the longest of the ages the probe asked about (ListOffsets by
        timestamp, at the warn and stop thresholds) that a waiting record is older than, 0 when none is;
        ``None``: not read (no lag, or a sample taken without it).
    """

    lso: int
    hwm: int
    log_start: int | None = None
    committed: int | None = None
    marker_batch: int | None = None
    waiting_ms: int | None = None

    @property
    def lag(self) -> int:
        """Records readable at ``read_committed`` that the group has not committed past.

        Without a committed offset everything retained is unread; a negative lag (the group
        committed after the LSO was read) counts as 0, as in Burrow.
        """
        base = self.committed if self.committed is not None else (self.log_start or 0)
        return max(0, self.lso - base)


class OutputPartitionSample(PartitionRow):
    """LSO and HWM of one output or dead-letter partition in one sample.

    :param tp: the partition.
    :param role: ``output`` or ``dlq``.
    :param lso: last stable offset.
    :param hwm: high watermark.
    """

    role: str
    lso: int
    hwm: int


class VerificationSample(FrozenModel):
    """What verification said in one sample.

    :param verdict: the overall verdict (``None``: not settled, see ``note``).
    :param ok: whether the verdict lets the pipeline run as is (``None`` when not settled).
    :param next_step: the verification's next step.
    :param note: why there is no verdict, or other context.
    """

    verdict: str | None
    ok: bool | None
    next_step: str | None = None
    note: str | None = None


class InFlightBatch(FrozenModel):
    """The batch the checkpoint has planned (``offsets/N``) and not committed (no ``commits/N``) in one sample.

    :param batch: its id ``N``.
    :param spill_files: the files the driver writer's tasks have spilled for it so far (0 for the
        executor writers, which spill nothing, and before the first task wrote).
    :param spill_bytes: their size so far.
    """

    batch: int
    spill_files: int = 0
    spill_bytes: int = 0


class HealthSample(FrozenModel):
    """One look at the pipeline; the I/O that takes it is :func:`airflow_provider_eos.kafka.health_probe.probe`.

    :param taken_at_ms: when the sample was taken (ms since the epoch, UTC).
    :param inputs: every input partition.
    :param outputs: every output and dead-letter partition.
    :param checkpoint_exists: whether the checkpoint location holds a checkpoint.
    :param query_id: the checkpoint's query id.
    :param last_committed: the newest batch with a ``commits/`` file.
    :param last_commit_time_ms: that file's modification time (ms since the epoch).
    :param verification: the verification verdict (``None``: not taken).
    :param transactions: the coordinators' descriptions of the transactional ids under the prefix
        (in JSON each transaction's partitions are ``[topic, partition]`` pairs).
    :param notes: anything the probe wants the report to mention.
    :param writers: the writer the job uses (the checkpoint's recorded choice, else the spec's);
        ``None``: not read.
    :param broker_protocol: what a broker announced (transaction protocol, feature levels); ``None``: not read.
    :param transaction_max_timeout_ms: the brokers' ``transaction.max.timeout.ms`` (the largest among
        them); ``None``: not read (no input partition was pinned, or the principal may not describe
        the brokers' configuration).
    :param transaction_max_timeout_unread: why the brokers' ``transaction.max.timeout.ms`` could not be read
        while an input partition was pinned (the refusal's message: the health role's ACL set does not hold
        DESCRIBE_CONFIGS on the cluster); ``None``: read, or not needed.
    :param run_active: for an ``available_now`` pipeline, whether a run is active: its driver's lease
        in the checkpoint holds (not released, renewed within its ttl). ``None``: a pipeline that runs
        continuously, or not read.
    :param run_started_at_ms: when the active run's driver took its lease (``None``: no active run known).
    :param in_flight: the batch planned and not committed yet, and how much of it was spilled (``None``: none,
        or not read).
    """

    taken_at_ms: int
    inputs: tuple[InputPartitionSample, ...] = ()
    outputs: tuple[OutputPartitionSample, ...] = ()
    checkpoint_exists: bool = True
    query_id: str | None = None
    last_committed: int | None = None
    last_commit_time_ms: int | None = None
    verification: VerificationSample | None = None
    transactions: tuple[Transaction, ...] = ()
    notes: tuple[str, ...] = ()
    writers: WritersInUse | None = None
    broker_protocol: BrokerProtocol | None = None
    transaction_max_timeout_ms: int | None = None
    transaction_max_timeout_unread: str | None = None
    run_active: bool | None = None
    run_started_at_ms: int | None = None
    in_flight: InFlightBatch | None = None

    @property
    def total_lag(self) -> int:
        """The sum of the input partitions' lag."""
        return sum(item.lag for item in self.inputs)
