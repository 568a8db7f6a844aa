"""The package's own records beside Spark's checkpoint files: ``<checkpoint>/eos/<name>``, read and written here.

Spark ignores the ``eos`` folder. Two records live there: the writer the query chose
(``writers.json``, :mod:`airflow_provider_eos.core.writers_choice`) and the driver's lease
(``driver-lease.json``, :mod:`airflow_provider_eos.core.driver_lease`). Their formats are their
modules'; where they are and how they reach the checkpoint's filesystem is this module's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eos.core.checkpoint.location import EOS_FOLDER

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


def write_eos_record(checkpoint: CheckpointReader, name: str, text: str, *, staged_as: str | None = None) -> None:
    """Write the record, replacing the one there.

    :param staged_as: write to this name in the folder first and move it into place, so a reader
        never meets half a record; ``None`` writes in place (HDFS cannot rename over an existing
        file: a record renewed every few seconds is written in place, and its reader takes half a
        record for a malformed one).
    """
    checkpoint.fs.makedirs(checkpoint.path(EOS_FOLDER), exist_ok=True)
    path = checkpoint.path(EOS_FOLDER, name)
    target = path if staged_as is None else checkpoint.path(EOS_FOLDER, staged_as)
    with checkpoint.fs.open(target, "w") as out:
        out.write(text)
    if staged_as is not None:
        checkpoint.fs.mv(target, path)
