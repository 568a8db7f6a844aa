"""Batch markers: the metadata string stored with every offset the sink commits.

The sink commits the input offsets of batch ``N`` inside the batch's transaction, each with the
metadata ``eos1:<query id>:<N>``. Reading the marker back tells a restarted query whether batch
``N`` is already in Kafka (skip the replay) or still missing (produce it), and tells verification
how the group relates to the checkpoint. The format is versioned so it can change without
misreading markers written by an older release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from airflow_provider_eos.core.errors import MarkerError
from airflow_provider_eos.core.topic_partition import TopicPartition

#: The version tag every marker starts with.
MARKER_VERSION_PREFIX = "eos1"

_SEPARATOR = ":"
# Spark's query id is a UUID; any id without ':' or whitespace keeps the format unambiguous, and
# accepting the wider set keeps encode/decode symmetric for ids Spark did not make (tests, tools).
_QUERY_ID_RE = re.compile(r"[A-Za-z0-9_.-]+")
_BATCH_ID_RE = re.compile(r"0|[1-9][0-9]*")
# Brokers refuse commits whose metadata exceeds offset.metadata.max.bytes (default 4096).
_MAX_MARKER_LENGTH = 4096


@dataclass(frozen=True)
class BatchMarker:
    """Names the streaming query and micro-batch that committed an offset.

    :param query_id: the query id from the checkpoint's ``metadata`` file (a UUID).
    :param batch_id: the micro-batch id ``N``.
    :raises MarkerError: if either value cannot be encoded unambiguously.
    """

    query_id: str
    batch_id: int

    def __post_init__(self) -> None:
        if not isinstance(self.query_id, str) or not _QUERY_ID_RE.fullmatch(self.query_id):
            raise MarkerError(
                f"query id {self.query_id!r} cannot be put in a batch marker: it must be non-empty "
                "and contain only letters, digits, '.', '_' and '-'",
                fix="pass the query id from the checkpoint's metadata file (a UUID)",
            )
        if isinstance(self.batch_id, bool) or not isinstance(self.batch_id, int) or self.batch_id < 0:
            raise MarkerError(
                f"batch id {self.batch_id!r} is not a non-negative integer",
                fix="pass the micro-batch id Spark gives the sink (0, 1, 2, ...)",
            )

    def encode(self) -> str:
        """Return the committed-offset metadata string, ``eos1:<query_id>:<batch_id>``."""
        text = _SEPARATOR.join((MARKER_VERSION_PREFIX, self.query_id, str(self.batch_id)))
        if len(text) > _MAX_MARKER_LENGTH:
            raise MarkerError(
                f"batch marker is {len(text)} characters, over the broker default "
                f"offset.metadata.max.bytes of {_MAX_MARKER_LENGTH}",
                fix="use the Spark query id (a 36-character UUID) as the query id",
            )
        return text

    @classmethod
    def decode(cls, text: str) -> BatchMarker:
        """Parse a committed-offset metadata string written by :meth:`encode`.

        :param text: the metadata of a committed offset.
        :raises MarkerError: naming ``text`` if it is not a marker this version can read.
        """
        if not isinstance(text, str):
            raise MarkerError(
                f"committed offset metadata {text!r} is not a string",
                fix="pass the metadata string of the committed offset",
            )
        parts = text.split(_SEPARATOR)
        if len(parts) != 3 or parts[0] != MARKER_VERSION_PREFIX:
            version = parts[0] if len(parts) > 1 else None
            hint = (
                f"it has version tag {version!r}, this release reads {MARKER_VERSION_PREFIX!r}"
                if version and version.startswith("eos") and version != MARKER_VERSION_PREFIX
                else f"expected '{MARKER_VERSION_PREFIX}:<query id>:<batch id>'"
            )
            raise MarkerError(
                f"committed offset metadata {text!r} is not a batch marker: {hint}",
                fix="check that the sink group is used only by this pipeline's exactly-once sink; "
                "run `eos verify` to compare the group with the checkpoint",
            )
        _, query_id, batch = parts
        if not _QUERY_ID_RE.fullmatch(query_id) or not _BATCH_ID_RE.fullmatch(batch):
            raise MarkerError(
                f"committed offset metadata {text!r} is not a batch marker: query id {query_id!r} "
                f"or batch id {batch!r} is malformed",
                fix="check that the sink group is used only by this pipeline's exactly-once sink; "
                "run `eos verify` to compare the group with the checkpoint",
            )
        return cls(query_id=query_id, batch_id=int(batch))

    def __str__(self) -> str:
        return self.encode()


def is_marker(text: str | None) -> bool:
    """Tell whether ``text`` is a batch marker this release can read (``None`` and ``""`` are not)."""
    if not text:
        return False
    try:
        BatchMarker.decode(text)
    except MarkerError:
        return False
    return True


@dataclass(frozen=True)
class CommittedOffset:
    """A consumer group's committed offset for one partition, with its metadata string.

    :param offset: the committed offset (the next offset to read).
    :param metadata: the metadata committed with it; ``""`` when none was given.
    """

    offset: int
    metadata: str = ""

    @property
    def marker(self) -> BatchMarker | None:
        """The batch marker in :attr:`metadata`; ``None`` when the metadata is empty.

        :raises MarkerError: if the metadata is non-empty but not a marker.
        """
        if not self.metadata:
            return None
        return BatchMarker.decode(self.metadata)

    def describe(self) -> str:
        """Human-readable ``offset 12 (marker eos1:...:3)`` for error messages and tables."""
        if not self.metadata:
            return f"offset {self.offset} (no marker)"
        if is_marker(self.metadata):
            return f"offset {self.offset} (marker {self.metadata})"
        return f"offset {self.offset} (metadata {self.metadata!r}, not a batch marker)"


#: Committed offsets of the sink group for input partitions; ``None``: nothing committed.
CommittedOffsets = dict[TopicPartition, CommittedOffset | None]
