"""A health sample's settled read: the sink group's offsets, the checkpoint's newest commit and the verification
verdict, read so that the group did not change under the verdict (:func:`settled_read`).

If the group changed while the checkpoint was read (the job committed a batch meanwhile), the read is repeated;
a verdict taken across a commit could report a false ``KAFKA_BEHIND`` or ``DIVERGED``. The group's offsets are
read over kafka-python, never librdkafka: a lost connection under librdkafka's read aborts the process, here the
triggerer or a worker (design note 84).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.health import VerificationSample
from airflow_provider_eos.core.transactions import to_epoch_ms
from airflow_provider_eos.core.verification import verify_checkpoint
from airflow_provider_eos.kafka.group_offset_fetch import read_group_offsets

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.markers import CommittedOffsets
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.core.topic_partition import TopicPartition

__all__ = ["CheckpointFacts", "HealthProbeError", "reading_checkpoint", "settled_read"]

#: ``(exists, query id, newest committed batch, its commit time in ms)``.
CheckpointFacts = tuple[bool, str | None, int | None, int | None]

# Reads of the group and the checkpoint before the verdict is reported as not settled; a job
# commits at most once per trigger interval, so two quiet reads in a row come quickly.
_VERIFY_ATTEMPTS = 4


class HealthProbeError(EosError):
    """The cluster could not be read for a health sample; the message names the request.

    A request no broker answered is not this error but
    :class:`~airflow_provider_eos.core.errors.KafkaNoAnswerError`, as everywhere (design notes 70, 76).
    """


@contextlib.contextmanager
def reading_checkpoint(spec: PipelineSpec) -> Iterator[None]:
    """Turn a storage failure of the checkpoint's reads inside into a retryable :class:`HealthProbeError`."""
    try:
        yield
    except OSError as exc:
        raise HealthProbeError(
            f"reading the checkpoint at {spec.checkpoint_location!r} failed: {type(exc).__name__}: {exc}",
            fix="a transient failure of the checkpoint's storage (network, NameNode, object store) passes, and "
            "the next sample reads it again; if it persists, check that the storage answers with the checkpoint "
            "connection's settings",
        ) from exc


def _checkpoint_facts(reader: CheckpointReader) -> CheckpointFacts:
    """``(exists, query id, newest committed batch, its commit time in ms)``; reads no offsets file."""
    if not reader.exists():
        return False, None, None, None
    query_id = reader.query_id_if_known()
    last = reader.latest_committed_batch()
    when = None if last is None else to_epoch_ms(reader.commit_time(last))
    return True, query_id, last, when


def settled_read(
    spec: PipelineSpec, reader: CheckpointReader, partitions: set[TopicPartition], timeout_s: float
) -> tuple[CommittedOffsets, CheckpointFacts, VerificationSample]:
    """Read group, checkpoint and verdict so that the group did not change under the verdict; the group over one
    kafka-python session (design note 84)."""
    from airflow_provider_eos.kafka.transactions_admin import admin_client

    if not partitions:
        return _settled(lambda: {}, spec, reader)
    with admin_client(spec, timeout_ms=int(timeout_s * 1000)) as group_admin:
        return _settled(lambda: read_group_offsets(group_admin, spec.group_id, partitions,
                                                   transaction_timeout_ms=spec.transaction_timeout_ms, observer=True),
                        spec, reader)


def _settled(
    read: Callable[[], CommittedOffsets], spec: PipelineSpec, reader: CheckpointReader
) -> tuple[CommittedOffsets, CheckpointFacts, VerificationSample]:
    before = read()
    for _ in range(_VERIFY_ATTEMPTS):
        with reading_checkpoint(spec):
            facts = _checkpoint_facts(reader)
            report = verify_checkpoint(reader, before, spec_writers=spec.writers)
        after = read()
        if after == before:
            verification = VerificationSample(verdict=report.overall.value, ok=report.ok, next_step=report.next_step)
            return after, facts, verification
        before = after
    note = f"not settled: the group committed during each of {_VERIFY_ATTEMPTS} reads (the job is alive)"
    with reading_checkpoint(spec):
        facts = _checkpoint_facts(reader)
    return before, facts, VerificationSample(verdict=None, ok=None, note=note)
