"""The package's own records beside Spark's checkpoint files: ``<checkpoint>/eos/<name>``, read and written here.

Spark ignores the ``eos`` folder. Two records live there: the writer the query chose
(``writers.json``, :mod:`airflow_provider_eos.core.writers_choice`) and the driver's lease
(``driver-lease.json``, :mod:`airflow_provider_eos.core.driver_lease`). Their formats are their
modules'; where they are, how they reach the checkpoint's filesystem and how a reader gets
through a record rewritten in place (:func:`read_through_rewrite`) is this module's.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

from airflow_provider_eos.core.checkpoint.location import EOS_FOLDER
from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.retry import RetryPolicy

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint.reader import CheckpointReader

__all__ = ["CREATE_CONFIRM_BEAT_S", "RECORD_REWRITE_REREAD", "create_eos_record", "delete_eos_record",
           "eos_record_display", "read_eos_record", "read_through_rewrite", "write_eos_record"]

_T = TypeVar("_T")

#: On a store with no create-if-absent (object stores), how long a writer waits before it reads its
#: record back to confirm that no other writer's landed over it: far longer than a small put takes.
CREATE_CONFIRM_BEAT_S = 2.0

#: A record written in place (HDFS cannot rename over a file) reads empty, half-written or as a
#: missing block while its writer rewrites it, for as long as a write takes (a few hundred ms on
#: HDFS): read again for a while before calling it unreadable (design notes 48 and 60).
RECORD_REWRITE_REREAD = RetryPolicy("a record rewritten in place to read whole", timeout_s=3.0, first_delay_s=0.1,
                                    max_delay_s=0.5)


def read_through_rewrite(checkpoint: CheckpointReader, read: Callable[[], _T], *, what: str) -> _T:
    """``read()``, one read and parse of a record, called again while it fails as a reader inside a rewrite fails.

    On a local checkpoint it is called once: records there are renamed into place
    (:func:`write_eos_record`), so a reader never meets half of one. Elsewhere a reader that lands
    inside an in-place rewrite meets an empty or half-written record (``CheckpointError``), a
    record gone between the look and the read (``CheckpointError``: missing) or WebHDFS's "Block
    could not be located" (``OSError``): each is read again, 0.1-0.5 s apart for up to 3 s
    (:data:`RECORD_REWRITE_REREAD`), and the last failure is raised unchanged, so a record that
    stays malformed is reported with its own message and fix.

    :param read: reads and parses the record; any other error than those above propagates at once.
    :param what: the read, for the log ("read the writers record in hdfs://...").
    """
    if checkpoint.is_local:
        return read()

    def once() -> tuple[_T | None, CheckpointError | OSError | ValueError | None]:
        try:
            return read(), None
        except (CheckpointError, OSError, ValueError) as err:
            return None, err

    value, error = RECORD_REWRITE_REREAD.poll(once, until=lambda result: result[1] is None, what=what).value
    if error is not None:
        raise error
    return cast("_T", value)  # what read() returned


def eos_record_display(checkpoint: CheckpointReader, name: str) -> str:
    """Where the record ``name`` is, as errors and logs name it."""
    return checkpoint.display(checkpoint.path(EOS_FOLDER, name))


def read_eos_record(checkpoint: CheckpointReader, name: str, expected: str) -> str | None:
    """The record's text, ``None`` when there is none.

    :param expected: what the file should hold, as an error names it.
    :raises CheckpointError: if it is there but cannot be read as text.
    """
    path = checkpoint.path(EOS_FOLDER, name)
    # Listing caches (s3fs, gcsfs) would hide a record written since the last look.
    checkpoint.fs.invalidate_cache(checkpoint.path(EOS_FOLDER))
    if not checkpoint.fs.isfile(path):
        return None
    return checkpoint.read_text(path, expected)


def write_eos_record(checkpoint: CheckpointReader, name: str, text: str, *, writer: str) -> None:
    """Write the record, replacing the one there.

    On a local filesystem the record is written to ``<name>.<writer>.tmp`` and renamed into place:
    a rename replaces a file atomically there, so a reader never meets half a record and a writer
    killed mid-write leaves the previous record whole. Elsewhere it is written in place: HDFS cannot
    rename over an existing file (and fsspec's WebHDFS ``mv`` ignores the NameNode's ``false``, so
    the record stayed the first run's and a ``.tmp`` was left behind), and an object store's put
    replaces an object whole. A reader that lands inside an in-place rewrite meets a malformed or
    missing record (design note 48).

    :param writer: who writes (a query id, a lease token): concurrent writers stage under different names.
    :raises CheckpointError: if the staged record could not be renamed into place.
    """
    checkpoint.fs.makedirs(checkpoint.path(EOS_FOLDER), exist_ok=True)
    path = checkpoint.path(EOS_FOLDER, name)
    if not checkpoint.is_local:
        with checkpoint.fs.open(path, "w") as out:
            out.write(text)
        return
    staged = checkpoint.path(EOS_FOLDER, f"{name}.{writer}.tmp")
    with checkpoint.fs.open(staged, "w") as out:
        out.write(text)
    try:
        checkpoint.fs.mv(staged, path)
        # A filesystem may report a refused rename by leaving the staged file rather than raising.
        moved = not checkpoint.fs.exists(staged)
        problem = "the staged file is still there"
    except OSError as err:
        moved, problem = False, str(err)
    if not moved:
        raise CheckpointError(
            f"could not rename {eos_record_display(checkpoint, f'{name}.{writer}.tmp')} onto "
            f"{eos_record_display(checkpoint, name)} ({problem}); the record there is the previous one",
            fix="check that the checkpoint's eos folder is writable by this user, delete the .tmp file and retry",
        )


def create_eos_record(checkpoint: CheckpointReader, name: str, text: str, *, writer: str) -> bool:
    """Create the record only if none is there: ``True`` when this call created it, ``False`` when one was there.

    Of two writers creating one record at the same instant exactly one gets ``True`` (design note 79):

    - local: the record is staged whole in ``<name>.<writer>.<random>.tmp`` and hard-linked to its name;
      ``link`` fails when the name exists, atomically, and a reader never meets half a record;
    - WebHDFS (``hdfs://``): its ``CREATE`` with ``overwrite=false``, which the NameNode refuses when
      the file exists (fsspec's ``webhdfs`` always overwrites, so the two HTTP steps are made here);
      a reader may meet the record empty while its DataNode writes it (read it through
      :func:`read_through_rewrite`);
    - elsewhere (object stores: no create-if-absent through fsspec): write, wait
      :data:`CREATE_CONFIRM_BEAT_S`, read it back; the writer whose record is there won. Two puts
      that land within the beat of each other both read the later one's.

    :param writer: who creates (a lease token): concurrent writers stage under different names.
    :raises OSError: the filesystem refused the write for another reason than an existing record.
    """
    checkpoint.fs.makedirs(checkpoint.path(EOS_FOLDER), exist_ok=True)
    path = checkpoint.path(EOS_FOLDER, name)
    if checkpoint.is_local:
        # Staged under a name of this call alone: a run's attempts share one token.
        staged = checkpoint.path(EOS_FOLDER, f"{name}.{writer}.{uuid.uuid4().hex[:8]}.tmp")
        return _link_exclusive(checkpoint, path, staged, text)
    if "webhdfs" in _protocols(checkpoint):
        return _webhdfs_create_exclusive(checkpoint, path, text)
    checkpoint.fs.invalidate_cache(checkpoint.path(EOS_FOLDER))
    if checkpoint.fs.exists(path):
        return False
    with checkpoint.fs.open(path, "w") as out:
        out.write(text)
    time.sleep(CREATE_CONFIRM_BEAT_S)
    checkpoint.fs.invalidate_cache(checkpoint.path(EOS_FOLDER))
    try:
        return bool(checkpoint.read_text(path, "a record just created") == text)
    except CheckpointError:  # deleted since: whoever deleted it saw it, and this writer's claim is void
        return False


def delete_eos_record(checkpoint: CheckpointReader, name: str) -> None:
    """Delete the record if it is there (one already gone is no error: another cleaner was first)."""
    with contextlib.suppress(FileNotFoundError):
        checkpoint.fs.rm_file(checkpoint.path(EOS_FOLDER, name))


def _protocols(checkpoint: CheckpointReader) -> tuple[str, ...]:
    protocol = checkpoint.fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _link_exclusive(checkpoint: CheckpointReader, path: str, staged: str, text: str) -> bool:
    with checkpoint.fs.open(staged, "w") as out:
        out.write(text)
    try:
        os.link(staged, path)  # POSIX link(2): fails with EEXIST, never replaces
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(staged)


def _webhdfs_create_exclusive(checkpoint: CheckpointReader, path: str, text: str) -> bool:
    fs = checkpoint.fs
    # Step 1: the NameNode names a DataNode (it does not check the path yet); step 2: the DataNode creates the
    # file with overwrite=false, and refuses with FileAlreadyExistsException when it is there, or with
    # AlreadyBeingCreatedException while another client's create of it is still open (measured on the MiniCluster).
    located = fs._call("CREATE", method="put", path=path, redirect=False, overwrite="false")
    created = fs.session.put(fs._apply_proxy(located.headers["Location"]), data=text.encode("utf-8"),
                             headers={"content-type": "application/octet-stream"})
    if created.status_code == 201:
        return True
    try:
        exception = created.json()["RemoteException"]["exception"]
    except (ValueError, KeyError, TypeError):
        exception = ""
    # AlreadyBeingCreatedException: the other creator's file is still open (its DataNode writes it): it exists.
    if exception in ("FileAlreadyExistsException", "AlreadyBeingCreatedException"):
        return False
    raise OSError(f"WebHDFS could not create {checkpoint.display(path)}: HTTP {created.status_code} "
                  f"{created.text[:300]}")
