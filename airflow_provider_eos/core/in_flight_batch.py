"""The person's answer about a batch in flight whose offsets may have expired (docs/design-notes.md note 61).

Only the output topic can tell whether an earlier attempt of the batch wrote it once its offsets expired,
so align asks; this module owns the answer's values and how a flag, an operator argument or the recovery
form's field is read. Light on purpose: the command line lists the values when it starts.
"""

from __future__ import annotations

import enum

from airflow_provider_eos.core.errors import RepairError

__all__ = ["InFlightBatch", "parse_in_flight"]


class InFlightBatch(enum.StrEnum):
    """What the output topic shows of the batch in flight, as the person read it."""

    #: All of its output is there: the group gets ``offsets/N`` with marker ``N`` and the replay skips it.
    WRITTEN = "written"
    #: None of it is there: the group gets ``offsets/C`` with marker ``C`` and the replay writes it.
    NOT_WRITTEN = "not-written"


def parse_in_flight(value: InFlightBatch | str | None) -> InFlightBatch | None:
    """The answer from a flag, an operator argument or the form; empty (``None``, ``""``, ``"None"``): no answer.

    :raises RepairError: naming the value when it is neither answer.
    """
    if value is None or isinstance(value, InFlightBatch):
        return value
    text = str(value).strip().lower().replace("_", "-")
    if text in ("", "none", "null"):
        return None
    try:
        return InFlightBatch(text)
    except ValueError:
        raise RepairError(
            f"in_flight_batch is {value!r}, which is not an answer align knows",
            fix=f"pass one of {', '.join(repr(answer.value) for answer in InFlightBatch)} (what the output topic "
            "shows of the batch in flight), or leave it empty when verification names no expired batch",
        ) from None
