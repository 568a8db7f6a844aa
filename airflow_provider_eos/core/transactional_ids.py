"""The one owner of the transactional-id scheme: ``<prefix>-<writer index>`` and ``<prefix>-<t>_<p>``.

- ``<prefix>-<writer index>``: the driver writer's producer is ``<prefix>-0`` (docs/architecture.md, driver writer); the
  executor writers' driver also commits the partitions without a task under ``<prefix>-0``.
- ``<prefix>-<t>_<p>``: the executor writer of input partition ``p`` of the spec's ``t``-th input
  topic (docs/architecture.md, executor writers), in the style of Kafka Streams' task ids. One id per input partition,
  stable across batches, restarts and executors, so a retried, speculative or zombie attempt is
  fenced by the next ``init_transactions`` for the same partition, and the number of ids stays
  bounded by the number of input partitions (never one per batch).

Recovery lists ongoing transactions and aborts those under a pipeline's prefix, so the test
"does this id belong to the prefix" must be exact: anything it wrongly claims may belong to
another application and would be fenced. Every other module builds and parses ids through
this one.
"""

from __future__ import annotations

import re

from airflow_provider_eos.core.errors import EosError, SpecError

#: Kafka does not bound transactional ids itself; 249 is the topic-name limit, used here so ids
#: stay printable in tools and metrics that assume topic-sized names.
MAX_TRANSACTIONAL_ID_LENGTH = 249

#: Room kept for the longest suffix, ``-<t>_<p>`` (``-``, up to 3 digits, ``_``, up to 6 digits).
WRITER_SUFFIX_RESERVED = 11

#: The longest prefix whose ids always fit :data:`MAX_TRANSACTIONAL_ID_LENGTH`.
MAX_PREFIX_LENGTH = MAX_TRANSACTIONAL_ID_LENGTH - WRITER_SUFFIX_RESERVED

#: The highest writer index whose id is guaranteed to fit (6 digits).
MAX_WRITER_INDEX = 999_999

_PREFIX_RE = re.compile(r"[A-Za-z0-9._-]+")
# Canonical decimal only: "pfx-01" is never produced by this module, so it is not claimed either.
_INDEX_RE = re.compile(r"0|[1-9][0-9]*")
_PARTITION_WRITER_RE = re.compile(r"(0|[1-9][0-9]*)_(0|[1-9][0-9]*)")

#: The highest input-topic position and Kafka partition whose partition-writer id is guaranteed to fit.
MAX_TOPIC_INDEX = 999
MAX_PARTITION = 999_999

_SEPARATOR = "-"


class TransactionalIdError(EosError):
    """A transactional id does not follow ``<prefix>-<writer index>`` for the given prefix."""

    retryable = False


def validate_prefix(prefix: str) -> str:
    """Check that ``prefix`` can start transactional ids and return it unchanged.

    :param prefix: the pipeline's ``transactional_id_prefix``.
    :returns: ``prefix``, so the call can be used inline.
    :raises SpecError: naming the prefix and what to change.
    """
    if not isinstance(prefix, str) or not prefix:
        raise SpecError(
            f"transactional_id_prefix {prefix!r} is empty or not a string",
            fix="set transactional_id_prefix to a name unique to this pipeline, e.g. 'orders-eos'",
        )
    if not _PREFIX_RE.fullmatch(prefix):
        bad = sorted({c for c in prefix if not _PREFIX_RE.fullmatch(c)})
        raise SpecError(
            f"transactional_id_prefix {prefix!r} contains {''.join(bad)!r}; "
            "only letters, digits, '.', '_' and '-' are allowed",
            fix="use only [A-Za-z0-9._-] in transactional_id_prefix",
        )
    if len(prefix) > MAX_PREFIX_LENGTH:
        raise SpecError(
            f"transactional_id_prefix is {len(prefix)} characters long; at most {MAX_PREFIX_LENGTH} "
            f"leave room for the writer suffix within {MAX_TRANSACTIONAL_ID_LENGTH} characters",
            fix=f"shorten transactional_id_prefix to {MAX_PREFIX_LENGTH} characters or fewer",
        )
    return prefix


def transactional_id(prefix: str, writer_index: int = 0) -> str:
    """Build the transactional id of one writer of a pipeline.

    :param prefix: the pipeline's transactional id prefix (validated here).
    :param writer_index: ``0`` for the driver-mode producer; executor writers count from 0.
    :returns: ``<prefix>-<writer_index>``.
    :raises SpecError: if the prefix is invalid.
    :raises TransactionalIdError: if the writer index is negative or too large.
    """
    validate_prefix(prefix)
    # bool is an int subclass; True would silently become writer 1.
    if isinstance(writer_index, bool) or not isinstance(writer_index, int):
        raise TransactionalIdError(
            f"writer index {writer_index!r} is not an integer",
            fix="pass the writer index as an int (0 for the driver-mode producer)",
        )
    if not 0 <= writer_index <= MAX_WRITER_INDEX:
        raise TransactionalIdError(
            f"writer index {writer_index} is outside 0..{MAX_WRITER_INDEX}",
            fix=f"use a writer index between 0 and {MAX_WRITER_INDEX}",
        )
    return f"{prefix}{_SEPARATOR}{writer_index}"


def belongs_to_prefix(prefix: str, txn_id: str) -> bool:
    """Tell whether ``txn_id`` is one of the ids :func:`transactional_id` builds for ``prefix``.

    ``pfx-0`` belongs to ``pfx``; ``pfx-extra-0``, ``pfx2-0``, ``pfx-`` and ``pfx-01`` do not.

    :param prefix: the pipeline's transactional id prefix.
    :param txn_id: a transactional id as listed by the broker.
    """
    head = prefix + _SEPARATOR
    if not txn_id.startswith(head):
        return False
    tail = txn_id[len(head) :]
    return _INDEX_RE.fullmatch(tail) is not None or _PARTITION_WRITER_RE.fullmatch(tail) is not None


def writer_index(prefix: str, txn_id: str) -> int:
    """Return the writer index encoded in ``txn_id``.

    :param prefix: the pipeline's transactional id prefix.
    :param txn_id: a transactional id under ``prefix``.
    :raises TransactionalIdError: if ``txn_id`` does not belong to ``prefix`` or is a partition
        writer's id (``<prefix>-<t>_<p>``, see :func:`partition_of_writer`).
    """
    if not belongs_to_prefix(prefix, txn_id) or "_" in txn_id[len(prefix) + len(_SEPARATOR) :]:
        raise TransactionalIdError(
            f"transactional id {txn_id!r} does not belong to prefix {prefix!r} "
            f"(expected {prefix}{_SEPARATOR}<writer index>)",
            fix="only act on transactional ids under this pipeline's transactional_id_prefix; "
            "an id outside it may belong to another application",
        )
    return int(txn_id[len(prefix) + len(_SEPARATOR) :])


def _bounded(name: str, value: int, highest: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= highest:
        raise TransactionalIdError(
            f"{name} {value!r} is outside 0..{highest}",
            fix=f"executor writers support input topics with at most {MAX_PARTITION + 1} partitions and at most "
            f"{MAX_TOPIC_INDEX + 1} input topics; use `writers: driver` beyond that",
        )
    return value


def partition_transactional_id(prefix: str, topic_index: int, partition: int) -> str:
    """The transactional id of the executor writer of one input partition: ``<prefix>-<t>_<p>``.

    :param prefix: the pipeline's transactional id prefix (validated here).
    :param topic_index: the input topic's position in the spec's ``input_topics``.
    :param partition: the Kafka partition of that topic.
    :raises TransactionalIdError: if either number is negative or too large.
    """
    validate_prefix(prefix)
    t = _bounded("input topic position", topic_index, MAX_TOPIC_INDEX)
    p = _bounded("input partition", partition, MAX_PARTITION)
    return f"{prefix}{_SEPARATOR}{t}_{p}"


def partition_of_writer(prefix: str, txn_id: str) -> tuple[int, int] | None:
    """``(topic position, partition)`` of a partition writer's id; ``None`` for ``<prefix>-<writer index>``.

    :raises TransactionalIdError: if ``txn_id`` does not belong to ``prefix``.
    """
    if not belongs_to_prefix(prefix, txn_id):
        raise TransactionalIdError(
            f"transactional id {txn_id!r} does not belong to prefix {prefix!r}",
            fix="only act on transactional ids under this pipeline's transactional_id_prefix",
        )
    match = _PARTITION_WRITER_RE.fullmatch(txn_id[len(prefix) + len(_SEPARATOR) :])
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def owned_transactional_id(prefix: str, txn_id: str) -> str:
    """``txn_id`` built back through this scheme: the id to act on, only if it is one of the prefix's.

    Recovery fences with the rebuilt id, so nothing that merely resembles the prefix is touched.

    :raises TransactionalIdError: if ``txn_id`` does not belong to ``prefix``.
    """
    partition_writer = partition_of_writer(prefix, txn_id)
    if partition_writer is not None:
        return partition_transactional_id(prefix, *partition_writer)
    return transactional_id(prefix, writer_index(prefix, txn_id))
