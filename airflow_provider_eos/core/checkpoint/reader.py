"""The one reader of Spark Structured Streaming checkpoints, for local paths and fsspec URLs.

:class:`CheckpointReader` addresses the checkpoint through fsspec (opened by :mod:`.location`),
lists the batch logs, reads files and hands their content to the parsers of :mod:`.formats`.
Every listing invalidates fsspec's cache, because object-store listing caches would hide
batches Spark wrote since the last call.
"""

from __future__ import annotations

import datetime as dt
import posixpath
from collections.abc import Callable, Mapping
from typing import Any

from fsspec.spec import AbstractFileSystem

from airflow_provider_eos.core.checkpoint.formats import (
    COMMIT_LOG_EXPECTED,
    INITIAL_OFFSETS_EXPECTED,
    METADATA_EXPECTED,
    OFFSET_LOG_EXPECTED,
    OffsetLogEntry,
    parse_commit_log,
    parse_initial_offsets,
    parse_kafka_offsets,
    parse_metadata,
    parse_offset_log,
)
from airflow_provider_eos.core.checkpoint.location import EOS_FOLDER, normalize_location, open_location
from airflow_provider_eos.core.checkpoint.snapshot import CheckpointSnapshot
from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition

__all__ = ["EOS_FOLDER", "CheckpointReader", "normalize_location"]


class CheckpointReader:
    """Reads a Spark checkpoint without Spark, through fsspec.

    :param location: the checkpoint location: a local path, ``file:`` URL or any fsspec URL
        (``s3://``, ``gs://``, ``abfs://``, ``memory://`` ...); ``s3a://`` and ``s3n://`` are read
        as ``s3://``; ``hdfs://`` is read over WebHDFS (:mod:`.webhdfs` says where its address comes from).
    :param storage_options: passed to the fsspec filesystem (credentials, endpoint, WebHDFS ``port`` ...).
    :param hadoop_conf: for ``hdfs://``: the Hadoop client properties to find the WebHDFS address
        in when the options give none; default: the site files in ``HADOOP_CONF_DIR``.
    :raises CheckpointError: if no filesystem can serve the location (for ``hdfs://``: no WebHDFS address).

    Attributes ``fs`` (the fsspec filesystem) and ``root`` (the checkpoint root as ``fs`` spells
    it, without trailing ``/``) let repair code move files with the same addressing;
    ``storage_options`` open the same filesystem in another process with no Hadoop configuration
    (for ``hdfs://`` the resolved WebHDFS address and user: what the driver writer's tasks get).
    """

    def __init__(
        self,
        location: str,
        storage_options: Mapping[str, Any] | None = None,
        *,
        hadoop_conf: Mapping[str, str] | None = None,
    ) -> None:
        self.location = str(location)
        opened = open_location(self.location, storage_options, hadoop_conf=hadoop_conf)
        self.fs: AbstractFileSystem = opened.fs
        self.storage_options: dict[str, Any] = opened.storage_options
        self.root: str = opened.root
        # hdfs:// paths are shown as Spark knows them, not as the webhdfs:// they are read through.
        self._location_prefix = opened.location_prefix

    def __repr__(self) -> str:
        return f"CheckpointReader({self.location!r})"

    # -- addressing ----------------------------------------------------------------------------

    def path(self, *parts: str) -> str:
        """The ``fs`` path of a file under the checkpoint root, e.g. ``path("offsets", "3")``."""
        return posixpath.join(self.root, *parts)

    @property
    def is_local(self) -> bool:
        """Whether the checkpoint is on this host's filesystem (where a rename replaces a file atomically)."""
        return self._protocol in ("file", "local")

    def display(self, path: str) -> str:
        """A path as the operator knows it: the local path, or a URL with its scheme (``hdfs://`` as given)."""
        if self._location_prefix is not None:
            return self._location_prefix + path
        if self.is_local:
            return path
        return self.fs.unstrip_protocol(path)

    def _batches(self, log: str) -> list[int]:
        directory = self.path(log)
        # Listing caches (s3fs, gcsfs) would hide batches written since the last call.
        self.fs.invalidate_cache(directory)
        try:
            entries = self.fs.ls(directory, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return []
        batches: set[int] = set()
        for entry in entries:
            if entry.get("type") != "file":
                continue
            name = posixpath.basename(str(entry["name"]).rstrip("/"))
            # Spark names batch files by decimal id; ".3.crc", ".3.<uuid>.tmp", "_..." are not batches.
            if name.isascii() and name.isdecimal():
                batches.add(int(name))
        return sorted(batches)

    def read_text(self, path: str, expected: str, missing_fix: Callable[[], str] | None = None) -> str:
        """The file at ``path`` (from :meth:`path`) as UTF-8 text.

        :param expected: what the file should hold, as the error names it.
        :param missing_fix: the fix to state when the file is missing, computed only then.
        :raises CheckpointError: naming the file when it is missing or not UTF-8.
        """
        data = self._read_bytes(path, expected, missing_fix)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise CheckpointError(
                f"checkpoint file {self.display(path)} is not UTF-8 text ({err}); expected {expected}",
                fix="the file is corrupt: restore it from a backup, or rewind the checkpoint before it "
                "with `eos repair`",
            ) from err

    def _read_bytes(self, path: str, expected: str, missing_fix: Callable[[], str] | None = None) -> bytes:
        try:
            return self.fs.cat_file(path)
        except (FileNotFoundError, IsADirectoryError):
            raise CheckpointError(
                f"checkpoint file {self.display(path)} is missing; expected {expected}",
                # Computed only on failure: it lists the log, which costs a request on object stores.
                fix=missing_fix()
                if missing_fix
                else f"check that checkpoint location {self.location!r} is the pipeline's (spec "
                "checkpoint_location) and that the query has run",
            ) from None
        except RuntimeError as err:
            # fsspec's webhdfs raises the NameNode's RemoteExceptions it has no type for as RuntimeError;
            # "Block could not be located" is a file rewritten in place while it was read (design note 48).
            raise OSError(f"checkpoint file {self.display(path)} could not be read: {err}") from err

    def _missing_batch_fix(self, log: str) -> str:
        batches = self._batches(log)
        present = f"batches {batches[0]}..{batches[-1]}" if batches else "no batches"
        return (
            f"{log}/ holds {present}; ask for one of those, and check that checkpoint location "
            f"{self.location!r} is the pipeline's (spec checkpoint_location)"
        )

    # -- existence and identity ----------------------------------------------------------------

    def exists(self) -> bool:
        """Whether a checkpoint is there: the root holds ``metadata`` or a non-empty ``offsets/`` log."""
        self.fs.invalidate_cache(self.root)
        if self.fs.isfile(self.path("metadata")):
            return True
        return bool(self._batches("offsets"))

    def query_id(self) -> str:
        """The streaming query id from ``metadata``.

        :raises CheckpointError: if ``metadata`` is missing or not ``{"id": "..."}``.
        """
        path = self.path("metadata")
        return parse_metadata(self.display(path), self.read_text(path, METADATA_EXPECTED))

    def query_id_if_known(self) -> str | None:
        """The query id, or ``None`` when ``metadata`` is not there (yet); malformed still raises."""
        return self.query_id() if self.fs.isfile(self.path("metadata")) else None

    def recent_partitions(self, source_index: int | str = 0) -> set[TopicPartition]:
        """Partitions named by the last committed and the last planned batch (empty without batches)."""
        found: set[TopicPartition] = set()
        for batch in {self.latest_committed_batch(), self.latest_planned_batch()} - {None}:
            found.update(self.planned_offsets(batch, source_index))
        return found

    def state_dir_exists(self) -> bool:
        """Whether the query keeps operator state (``state/``), so rewinds must consider it."""
        return bool(self.fs.isdir(self.path("state")))

    # -- batch listings ------------------------------------------------------------------------

    def offset_batches(self) -> list[int]:
        """Batch ids with an ``offsets/`` file (planned batches), ascending."""
        return self._batches("offsets")

    def commit_batches(self) -> list[int]:
        """Batch ids with a ``commits/`` file (completed batches), ascending."""
        return self._batches("commits")

    def latest_planned_batch(self) -> int | None:
        """The newest planned batch id, ``None`` if none was planned."""
        batches = self.offset_batches()
        return batches[-1] if batches else None

    def latest_committed_batch(self) -> int | None:
        """The newest completed batch id, ``None`` if none completed."""
        batches = self.commit_batches()
        return batches[-1] if batches else None

    # -- offsets log ---------------------------------------------------------------------------

    def _offset_log_entry(self, batch_id: int) -> OffsetLogEntry:
        path = self.path("offsets", str(batch_id))
        text = self.read_text(path, OFFSET_LOG_EXPECTED, lambda: self._missing_batch_fix("offsets"))
        return parse_offset_log(self.display(path), text)

    def offset_log_version(self, batch_id: int) -> int:
        """The format version (1 or 2) of ``offsets/<batch_id>``."""
        return self._offset_log_entry(batch_id).version

    def source_ids(self, batch_id: int) -> list[str]:
        """The source ids in ``offsets/<batch_id>``: positions ``"0"``, ``"1"``... or v2 names."""
        return list(self._offset_log_entry(batch_id).sources)

    def batch_metadata(self, batch_id: int) -> dict[str, Any]:
        """The metadata line of ``offsets/<batch_id>`` (``batchWatermarkMs``, ``batchTimestampMs``, ``conf``)."""
        return self._offset_log_entry(batch_id).metadata

    def planned_offsets(self, batch_id: int, source_index: int | str = 0) -> OffsetMap:
        """The Kafka source's end offsets of batch ``batch_id`` (from ``offsets/<batch_id>``).

        :param batch_id: the batch.
        :param source_index: the source's position in the query (v1) or id (v2; ``0`` means
            ``"0"``); a string names a v2 source given a name with ``DataStreamReader.name()``.
        :raises CheckpointError: if the file is missing or malformed, the source is absent or has
            no offset (``-``), or its offset is not a Kafka source offset.
        """
        path = self.path("offsets", str(batch_id))
        entry = self._offset_log_entry(batch_id)
        key = str(source_index)
        if key not in entry.sources:
            raise CheckpointError(
                f"checkpoint file {self.display(path)} has no source {key!r}; it lists sources {list(entry.sources)}",
                fix="pass the source index (or v2 source id) of the Kafka source in the query",
            )
        offset_json = entry.sources[key]
        if offset_json is None:
            raise CheckpointError(
                f"checkpoint file {self.display(path)} records no offset ('-') for source {key!r}",
                fix="check that source " + key + " is the query's Kafka source; a source without an "
                "offset has not produced its first batch",
            )
        return parse_kafka_offsets(self.display(path), offset_json, f"source {key!r}")

    def initial_offsets(self, source_index: int | str = 0) -> OffsetMap:
        """The Kafka source's initial offsets, from ``sources/<source id>/0``.

        These are the start of the query's first batch (``startingOffsets`` resolved when the
        query first ran).

        :raises CheckpointError: if the file is missing or not Kafka initial offsets.
        """
        path = self.path("sources", str(source_index), "0")
        data = self._read_bytes(path, INITIAL_OFFSETS_EXPECTED)
        return parse_initial_offsets(self.display(path), data, source_index)

    def start_offsets(self, batch_id: int, source_index: int | str = 0) -> OffsetMap:
        """Where batch ``batch_id`` starts reading: ``offsets/<batch_id - 1>``, or for batch 0 the
        initial offsets (``sources/<i>/0``).

        Partitions added to a topic between two batches are in ``offsets/N`` but not in
        ``offsets/N-1``; Spark reads them from their earliest available offset, which the
        checkpoint does not record, so they are absent from the result (callers treat an absent
        partition as "new in this batch").

        :raises CheckpointError: if batch ``batch_id > 0`` has no ``offsets/<batch_id - 1>``
            (purged by ``spark.sql.streaming.minBatchesToRetain`` or deleted): using the initial
            offsets instead would silently be wrong.
        """
        if batch_id < 0:
            raise CheckpointError(f"batch id {batch_id} is negative", fix="pass a batch id listed by offset_batches()")
        if batch_id == 0:
            return self.initial_offsets(source_index)
        previous = batch_id - 1
        if previous not in self.offset_batches():
            raise CheckpointError(
                f"checkpoint file {self.display(self.path('offsets', str(previous)))} is missing, so "
                f"the start of batch {batch_id} is unknown",
                fix="Spark keeps only the last spark.sql.streaming.minBatchesToRetain batches (default "
                "100); ask about a recent batch, or restore the file",
            )
        return self.planned_offsets(previous, source_index)

    # -- commits log ---------------------------------------------------------------------------

    def commit_metadata(self, batch_id: int) -> dict[str, Any]:
        """The JSON of ``commits/<batch_id>`` (``nextBatchWatermarkMs``; v2 adds ``stateUniqueIds``).

        :raises CheckpointError: if the file is missing or malformed.
        """
        path = self.path("commits", str(batch_id))
        text = self.read_text(path, COMMIT_LOG_EXPECTED, lambda: self._missing_batch_fix("commits"))
        return parse_commit_log(self.display(path), text)

    def commit_time(self, batch_id: int) -> dt.datetime:
        """Modification time (UTC) of ``commits/<batch_id>``: when Spark finished the batch."""
        return self._modified(self.path("commits", str(batch_id)))

    def _modified(self, path: str) -> dt.datetime:
        missing = CheckpointError(
            f"checkpoint file {self.display(path)} is missing; expected a commit log entry",
            fix="re-read the checkpoint; a repair may have moved the file",
        )
        try:
            info = self.fs.info(path)
        except FileNotFoundError:
            raise missing from None
        # The epoch the filesystem reports is unambiguous; fsspec's WebHDFS turns it into a naive
        # datetime in this machine's local time zone, which read as UTC is off by the UTC offset.
        epoch = _epoch_seconds(info)
        if epoch is not None:
            return dt.datetime.fromtimestamp(epoch, tz=dt.UTC)
        value: Any
        try:
            value = self.fs.modified(path)
        except FileNotFoundError:
            raise missing from None
        except (NotImplementedError, AttributeError):
            value = next(
                (info[k] for k in ("mtime", "LastModified", "last_modified", "updated", "created") if info.get(k)),
                None,
            )
        return _as_utc(value, self.display(path), naive_is_local=self._protocol in NAIVE_LOCAL_TIME_PROTOCOLS)

    @property
    def _protocol(self) -> str:
        return self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]

    # -- snapshot ------------------------------------------------------------------------------

    def snapshot(self, source_index: int | str = 0) -> CheckpointSnapshot:
        """Read the query's progress in one pass.

        :raises CheckpointError: if there is no checkpoint at the location, or a file is malformed.
        """
        if not self.exists():
            raise CheckpointError(
                f"no Spark checkpoint at {self.location!r} (no metadata file, no offsets)",
                fix="check the spec's checkpoint_location; a pipeline that never ran has no checkpoint",
            )
        query_id = self.query_id()
        last_committed = self.latest_committed_batch()
        last_planned = self.latest_planned_batch()
        return CheckpointSnapshot(
            query_id=query_id,
            last_committed=last_committed,
            last_planned=last_planned,
            committed_offsets=None if last_committed is None else self.planned_offsets(last_committed, source_index),
            planned_offsets=None if last_planned is None else self.planned_offsets(last_planned, source_index),
            last_commit_time=None if last_committed is None else self.commit_time(last_committed),
        )


#: fsspec protocols whose ``modified()`` is a naive datetime in this machine's local time zone
#: (WebHDFS: ``datetime.fromtimestamp(modificationTime / 1000)``), not in UTC.
NAIVE_LOCAL_TIME_PROTOCOLS = frozenset({"webhdfs", "swebhdfs"})


def _epoch_seconds(info: Mapping[str, Any]) -> float | None:
    """The modification time as seconds since the epoch, from a file's fsspec ``info``, if it has one as a number.

    WebHDFS reports ``modificationTime`` in milliseconds, the local filesystem ``mtime`` in seconds.
    """
    for key, per_second in (("modificationTime", 1000), ("mtime", 1)):
        value = info.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value / per_second
    return None


def _as_utc(value: Any, where: str, *, naive_is_local: bool = False) -> dt.datetime:
    """A modification time as an aware UTC datetime.

    :param naive_is_local: a naive datetime is in this machine's local time zone (the filesystem
        is one of :data:`NAIVE_LOCAL_TIME_PROTOCOLS`); otherwise a naive datetime means UTC.
    """
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value.astimezone(dt.UTC)
        # astimezone() of a naive datetime reads it in the local time zone; filesystems that return
        # naive times without saying so (memory, some object stores) mean UTC.
        return value.astimezone(dt.UTC) if naive_is_local else value.replace(tzinfo=dt.UTC)
    if isinstance(value, int | float):
        return dt.datetime.fromtimestamp(value, tz=dt.UTC)
    if isinstance(value, str):
        try:
            return _as_utc(dt.datetime.fromisoformat(value), where, naive_is_local=naive_is_local)
        except ValueError:
            pass
    raise CheckpointError(
        f"the filesystem reports no usable modification time for {where} (got {value!r})",
        fix="use a filesystem whose fsspec implementation reports modification times",
    )
