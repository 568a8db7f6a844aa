"""The package's own records beside Spark's checkpoint files: ``<checkpoint>/eos/<name>``, read and written here.

Spark ignores the ``eos`` folder. Two records live there: the writer the query chose
(``writers.json``, :mod:`airflow_provider_eos.core.writers_choice`) and the driver's lease
(``driver-lease.json``, :mod:`airflow_provider_eos.core.driver_lease`). Their formats are their
modules'; where they are and how they reach the checkpoint's filesystem is this module's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eos.core.checkpoint.location import EOS_FOLDER
from airflow_provider_eos.core.errors import CheckpointError

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint.reader import CheckpointReader

__all__ = ["eos_record_display", "read_eos_record", "write_eos_record"]


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
