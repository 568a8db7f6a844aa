"""The writer a query uses (docs/architecture.md, the writers), decided once at its start and kept with its checkpoint.

``writers: auto`` resolves to the driver or the executor writers from the first batch's executed
plan. Verification and health must know which one ran, because the same committed offsets mean
different things: a mix of partitions at batch ``C+1`` and at ``C`` is a normal mid-batch crash
for executor writers (one transaction per input partition) and impossible for the driver writer
(one transaction per batch). So the job records its choice in the checkpoint folder, next to the
offsets it explains, as ``eos/writers.json``; Spark ignores folders it does not own there, and a
checkpoint copied or moved keeps its record.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
from typing import TYPE_CHECKING

from pydantic import ValidationError

from airflow_provider_eos.core.checkpoint.eos_records import (
    eos_record_display,
    read_eos_record,
    read_through_rewrite,
    write_eos_record,
)
from airflow_provider_eos.core.checkpoint.location import EOS_FOLDER
from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.spec.sink_modes import Writers

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader

__all__ = [
    "WRITERS_RECORD",
    "WritersChoice",
    "WritersSwitch",
    "parse_writers_record",
    "read_writers_choice",
    "record_writers_choice",
    "writers_switch",
]

#: Where the choice lives, relative to the checkpoint root.
WRITERS_RECORD = (EOS_FOLDER, "writers.json")


class WritersChoice(FrozenModel):
    """Which writer a query uses and why.

    :param writers: the writer in use, ``driver`` or ``executors`` (never ``auto``).
    :param requested: what the spec asked for (``auto``, ``driver`` or ``executors``).
    :param reason: why: the spec's explicit choice, or the plan's alignment in the auto case.
    :param operator: for ``auto`` resolved to the driver: the operator (class or source option) that
        breaks alignment first; ``reason`` names all of them.
    :param query_id: the streaming query the choice belongs to.
    :param batch_id: the batch whose plan decided.
    :param decided_at: when (UTC).
    """

    writers: Writers
    requested: Writers
    reason: str
    operator: str | None = None
    query_id: str
    batch_id: int
    decided_at: dt.datetime

    def log_line(self) -> str:
        """``EOS-WRITERS executors`` / ``EOS-WRITERS driver reason=<operator>``, then the whole choice as JSON."""
        head = f"EOS-WRITERS {self.writers.value}"
        if self.writers is Writers.DRIVER:
            head += f" reason={self.operator or 'requested'}"
        return f"{head} {json.dumps(self.to_dict(), sort_keys=True)}"

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=1) + "\n"


def parse_writers_record(where: str, text: str) -> WritersChoice:
    """Read ``eos/writers.json``.

    :raises CheckpointError: naming the file when it is not a writers choice.
    """
    try:
        choice = WritersChoice.model_validate_json(text)
    except ValidationError as err:
        raise CheckpointError(
            f"{where} is not this package's record of the writer in use: {err.errors()[0]['msg']}",
            fix="delete the file: the job writes it again at its next start (verification then assumes "
            "the spec's writers, and the driver writer for `auto`)",
        ) from err
    if choice.writers is Writers.AUTO:
        raise CheckpointError(f"{where} records writers 'auto', which is a request, not a writer",
                              fix="delete the file: the job writes it again at its next start")
    return choice


def read_writers_choice(checkpoint: CheckpointReader) -> WritersChoice | None:
    """The writer the query recorded at its start (``eos/writers.json``); ``None`` if it has not.

    Off a local checkpoint each run's first batch rewrites the record in place: a read that meets
    the rewrite reads again (:func:`read_through_rewrite`), so a health sample or a verification
    taken then is not failed by a record that is only being replaced.

    :raises CheckpointError: if the record is there but stays malformed.
    :raises OSError: if the storage keeps failing to read it.
    """
    def once() -> WritersChoice | None:
        text = read_eos_record(checkpoint, WRITERS_RECORD[1], "the writers record")
        if text is None:
            return None
        return parse_writers_record(eos_record_display(checkpoint, WRITERS_RECORD[1]), text)

    return read_through_rewrite(checkpoint, once,
                                what=f"read the writers record {eos_record_display(checkpoint, WRITERS_RECORD[1])}")


def record_writers_choice(checkpoint: CheckpointReader, choice: WritersChoice) -> None:
    """Write the choice to ``eos/writers.json`` under the checkpoint root, replacing an earlier one.

    :func:`write_eos_record` says how: renamed into place on a local filesystem, rewritten in place
    elsewhere (HDFS cannot rename over the earlier run's record).

    :raises CheckpointError: if the record could not be put in place.
    """
    write_eos_record(checkpoint, WRITERS_RECORD[1], choice.to_json(), writer=choice.query_id)


class WritersSwitch(enum.Enum):
    """What a run must do before it writes, when its writer is not the one the checkpoint records.

    The record names the writer of what may be in flight: an earlier run's tasks (zombies of a
    lost application, or a batch they left half-written) answer to that writer's transactional
    ids, which the new writer does not open, so nothing fences them unless the run does.
    """

    #: Same writer, or nothing recorded: write as usual.
    NONE = "none"
    #: The executor writers ran before and the driver writer takes over: fence every input
    #: partition's id (``<prefix>-<t>_<p>``) first, and keep the record until the batch in flight
    #: proves writable: a batch they left split between partitions only they can finish.
    FROM_EXECUTORS = "from_executors"
    #: The driver writer ran before and the executor writers take over: fence ``<prefix>-0`` first.
    FROM_DRIVER = "from_driver"


def writers_switch(recorded: WritersChoice | None, chosen: Writers) -> WritersSwitch:
    """What the run that chose ``chosen`` owes the writer ``recorded`` in the checkpoint (if any)."""
    if recorded is None or recorded.writers is chosen:
        return WritersSwitch.NONE
    return WritersSwitch.FROM_EXECUTORS if recorded.writers is Writers.EXECUTORS else WritersSwitch.FROM_DRIVER
