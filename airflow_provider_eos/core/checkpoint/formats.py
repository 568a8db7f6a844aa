"""The formats of the files Spark writes into a Structured Streaming checkpoint, parsed without Spark.

What Spark writes (Spark 3.x and 4.x; file names are batch ids, written atomically through a
temporary file and a rename, each with a Hadoop ``.<name>.crc`` sidecar on local and HDFS paths):

``metadata``
    ``{"id":"<query id uuid>"}`` (the query id; older Spark ends it with a newline).
``offsets/<N>`` (``OffsetSeqLog``, the write-ahead log, written before batch ``N`` runs)
    v1: ``v1``, a metadata JSON line (``batchWatermarkMs``, ``batchTimestampMs``, ``conf``), then
    one line per source in query order: the source's offset JSON, or ``-`` for none.
    v2 (Spark 4.1+, ``spark.sql.streaming.offsetLog.formatVersion=2``): ``v2``, the metadata
    line (adds ``sourceMetadataInfo``), then one ``<source id>:<offset JSON or ->`` line per
    source in no particular order. Source ids are ``"0"``, ``"1"``... or names given with
    ``DataStreamReader.name()``.
``commits/<N>`` (``CommitLog``, written after batch ``N`` completed)
    ``v1`` or ``v2``, then JSON (``{"nextBatchWatermarkMs":0}``; v2 may add ``stateUniqueIds``).
``sources/<source id>/0`` (the Kafka source's initial offsets, ``KafkaSourceInitialOffsetWriter``)
    a 0x00 byte (SPARK-19517), ``v1``, a newline, then the offset JSON without newline.

A Kafka source offset is ``{"<topic>":{"<partition>":<next offset to read>,...},...}``, the same
meaning as a committed consumer-group offset.

Each parser takes the file's content and ``where``, the file as the operator knows it (named
in every error), and raises :class:`CheckpointError` with a fix for anything it does not
understand. Reading the files is :mod:`.reader`'s job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition

__all__ = [
    "COMMIT_LOG_EXPECTED",
    "INITIAL_OFFSETS_EXPECTED",
    "MAX_COMMITS_VERSION",
    "MAX_INITIAL_OFFSETS_VERSION",
    "MAX_OFFSETS_VERSION",
    "METADATA_EXPECTED",
    "OFFSET_LOG_EXPECTED",
    "OffsetLogEntry",
    "malformed",
    "parse_commit_log",
    "parse_initial_offsets",
    "parse_kafka_offsets",
    "parse_metadata",
    "parse_offset_log",
]

#: Highest ``offsets/`` format version this reader understands.
MAX_OFFSETS_VERSION = 2
#: Highest ``commits/`` format version this reader understands.
MAX_COMMITS_VERSION = 2
#: Highest ``sources/<i>/0`` (Kafka initial offsets) format version this reader understands.
MAX_INITIAL_OFFSETS_VERSION = 1

_VOID_OFFSET = "-"
_UPGRADE_FIX = "upgrade airflow-provider-eos to a release that reads this Spark version's checkpoint"


@dataclass(frozen=True)
class OffsetLogEntry:
    """One ``offsets/<N>`` file, parsed."""

    version: int
    metadata: dict[str, Any]
    # Source id ("0", "1", ... or a v2 name) -> offset JSON text, None for "-".
    sources: dict[str, str | None]
    # v1 keeps positions; v2 has none.
    ordered: bool


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def malformed(where: str, expected: str, found: str, fix: str | None = None) -> CheckpointError:
    """The error for a file that is not what Spark writes: what was expected, what was found."""
    return CheckpointError(
        f"checkpoint file {where} is malformed: expected {expected}, found {_clip(found)}",
        fix=fix
        or "if Spark wrote it, the format may be newer than this reader ("
        + _UPGRADE_FIX
        + "); otherwise restore the file or rewind the checkpoint before it with `eos repair`",
    )


def _version(where: str, line: str, maximum: int, expected: str) -> int:
    text = line.strip()
    if not (text.startswith("v") and text[1:].isascii() and text[1:].isdecimal()):
        raise malformed(where, f"a version line such as 'v1' ({expected})", repr(line))
    version = int(text[1:])
    if not 1 <= version <= maximum:
        raise CheckpointError(
            f"checkpoint file {where} has format version v{version}; this reader supports v1..v{maximum}",
            fix=_UPGRADE_FIX,
        )
    return version


def _json(where: str, text: str, expected: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise malformed(where, expected, repr(text)) from None


#: What the reader says it expected when ``metadata`` is missing or malformed.
METADATA_EXPECTED = 'the query metadata {"id":"<query id>"}'
#: ... ``offsets/<N>``.
OFFSET_LOG_EXPECTED = "Spark's offset log entry ('v1' or 'v2', a metadata line, one line per source)"
#: ... ``commits/<N>``.
COMMIT_LOG_EXPECTED = "Spark's commit log entry ('v1' or 'v2', then a JSON object)"
#: ... ``sources/<i>/0``.
INITIAL_OFFSETS_EXPECTED = "the Kafka source's initial offsets ('v1', newline, offset JSON)"


def parse_metadata(where: str, text: str) -> str:
    """The query id of a ``metadata`` file.

    :raises CheckpointError: if it is not ``{"id": "..."}``.
    """
    data = _json(where, text.strip(), METADATA_EXPECTED)
    query_id = data.get("id") if isinstance(data, dict) else None
    if not isinstance(query_id, str) or not query_id:
        raise malformed(where, METADATA_EXPECTED, repr(text))
    return query_id


def parse_offset_log(where: str, text: str) -> OffsetLogEntry:
    """An ``offsets/<N>`` file (v1 or v2): its version, metadata line and source offsets (unparsed).

    :raises CheckpointError: if the file is malformed or of a newer version.
    """
    expected = OFFSET_LOG_EXPECTED
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    # Spark writes no trailing newline, but files edited by hand often gain one.
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise malformed(where, expected, repr(text))
    version = _version(where, lines[0], MAX_OFFSETS_VERSION, expected)
    meta_text = lines[1].strip()
    metadata = _json(where, meta_text, "a batch metadata JSON object on line 2") if meta_text else {}
    if not isinstance(metadata, dict):
        raise malformed(where, "a batch metadata JSON object on line 2", repr(lines[1]))
    sources: dict[str, str | None] = {}
    if version == 1:
        for index, line in enumerate(lines[2:]):
            sources[str(index)] = None if line.strip() == _VOID_OFFSET else line
    else:
        for line in lines[2:]:
            source_id, sep, offset = line.partition(":")
            if not sep or not source_id:
                raise malformed(where, "'<source id>:<offset json>' lines after the metadata", repr(line))
            sources[source_id] = None if offset.strip() == _VOID_OFFSET else offset
    return OffsetLogEntry(version=version, metadata=metadata, sources=sources, ordered=version == 1)


def parse_kafka_offsets(where: str, text: str, what: str) -> OffsetMap:
    """A Kafka source offset JSON as ``{partition: offset}``, sorted by partition.

    :param what: the source the offset belongs to, named in the error.
    :raises CheckpointError: if it is not a Kafka source offset (another source's offset, a
        negative offset, a non-numeric partition).
    """
    expected = f'a Kafka source offset for {what}, e.g. {{"topic":{{"0":123,"1":456}}}}'
    fix = (
        f"check that {what} belongs to the query's Kafka source (other sources write other "
        "offsets; pass the Kafka source's index or id); if it does, the file is corrupt: restore "
        "it or rewind the checkpoint before it with `eos repair`"
    )
    try:
        data = json.loads(text.strip())
    except json.JSONDecodeError:
        raise malformed(where, expected, repr(text), fix) from None
    if not isinstance(data, dict) or not data:
        raise malformed(where, expected, repr(text), fix)
    offsets: OffsetMap = {}
    for topic, partitions in data.items():
        if not isinstance(topic, str) or not topic or not isinstance(partitions, dict):
            raise malformed(where, expected, repr(text), fix)
        for partition, offset in partitions.items():
            if not (partition.isascii() and partition.isdecimal()):
                raise malformed(where, expected, f"partition key {partition!r} in {text!r}", fix)
            # Spark resolves -1/-2 (latest/earliest) before writing; a negative value here is
            # not an offset this package can compare with a committed one.
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise malformed(where, expected, f"offset {offset!r} for {topic}-{partition}", fix)
            offsets[TopicPartition(topic, int(partition))] = offset
    return dict(sorted(offsets.items()))


def parse_initial_offsets(where: str, data: bytes, source_index: int | str) -> OffsetMap:
    """The Kafka source's initial offsets from ``sources/<source id>/0``.

    :raises CheckpointError: if the file is not Kafka initial offsets.
    """
    expected = INITIAL_OFFSETS_EXPECTED
    # KafkaSourceInitialOffsetWriter writes a 0x00 byte first so Spark 2.1.0 can tell its format.
    if data[:1] == b"\x00":
        data = data[1:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise malformed(where, expected, repr(data[:80])) from None
    if text.startswith("v"):
        first, sep, body = text.partition("\n")
        if not sep:
            raise malformed(where, expected, repr(text))
        _version(where, first, MAX_INITIAL_OFFSETS_VERSION, expected)
    else:
        # Spark 2.1.0 wrote the bare JSON.
        body = text
    return parse_kafka_offsets(where, body, f"initial offsets of source {str(source_index)!r}")


def parse_commit_log(where: str, text: str) -> dict[str, Any]:
    """The JSON of a ``commits/<N>`` file (``nextBatchWatermarkMs``; v2 adds ``stateUniqueIds``).

    :raises CheckpointError: if the file is malformed or of a newer version.
    """
    expected = COMMIT_LOG_EXPECTED
    first, _, rest = text.partition("\n")
    _version(where, first, MAX_COMMITS_VERSION, expected)
    body = rest.split("\n", 1)[0].strip()
    # Spark itself reads a commit file without a JSON line as "{}".
    data = _json(where, body, expected) if body else {}
    if not isinstance(data, dict):
        raise malformed(where, expected, repr(text))
    return data
