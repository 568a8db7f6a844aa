"""Which writer a verification judges by, and where that came from (docs/architecture.md: writers, verdicts).

The same committed offsets mean different things for the two writers: partitions at batch
``C+1`` beside partitions at ``C`` are a normal mid-batch crash of the executor writers (one
transaction per input partition) and impossible for the driver writer (one transaction per
batch). So verification, health and the repairs first settle which writer wrote, in this order:

1. the choice the query recorded in its checkpoint (``eos/writers.json``,
   :mod:`airflow_provider_eos.core.writers_choice`): it is the writer that wrote what is in
   flight, even when the spec has changed since, until a run starts with the changed spec: each
   run records its choice at its first batch, before writing it, once it has fenced the recorded
   writer's ids; a driver writer that cannot write the batch the executor writers left split
   refuses it and leaves their record (docs/design-notes.md, note 53);
2. else the spec's ``writers`` when it names one (``driver`` or ``executors``);
3. else (``auto``, or no spec at hand, and nothing recorded) the driver writer's rules: they are
   the stricter ones, so a state only the executor writers can leave is never waved through
   without evidence that they ran.
"""

from __future__ import annotations

import enum

from pydantic import computed_field

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.spec.sink_modes import Writers
from airflow_provider_eos.core.writers_choice import WritersChoice

__all__ = ["WritersInUse", "WritersSource", "writers_in_use"]


class WritersSource(enum.StrEnum):
    """Where :class:`WritersInUse` took the writer from."""

    #: The checkpoint's record of the query's choice (``eos/writers.json``).
    RECORDED = "recorded"
    #: The spec's explicit ``writers`` (nothing recorded).
    SPEC = "spec"
    #: Neither: the spec says ``auto`` (or is not at hand) and nothing is recorded; the driver's rules apply.
    DEFAULT = "default"


class WritersInUse(FrozenModel):
    """The writer a verification judges by (``driver`` or ``executors``, never ``auto``) and why.

    JSON: the fields below plus ``summary``, the sentence the text reports show.

    :param writers: the writer whose rules apply.
    :param source: where it came from.
    :param requested: the spec's ``writers`` (``None``: the caller had no spec).
    :param choice: the recorded choice, when there is one.
    """

    writers: Writers
    source: WritersSource
    requested: Writers | None = None
    choice: WritersChoice | None = None

    @property
    def executors(self) -> bool:
        """True when the executor writers' rules apply (one transaction per input partition)."""
        return self.writers is Writers.EXECUTORS

    @computed_field  # type: ignore[prop-decorator]
    @property
    def summary(self) -> str:
        """One sentence: the writer and where that came from."""
        if self.source is WritersSource.RECORDED and self.choice is not None:
            choice = self.choice
            why = choice.reason + (f" ({choice.operator})" if choice.operator else "")
            text = (
                f"{self.writers.value}, as recorded in the checkpoint's eos/writers.json (requested "
                f"{choice.requested.value}, decided at batch {choice.batch_id}: {why})"
            )
            requested = self.requested
            if requested is not None and requested not in (Writers.AUTO, self.writers):
                text += (
                    f"; the spec now says {requested.value}: the job decides again at its next start, "
                    "what is in flight was written by the recorded writer"
                )
            return text
        if self.source is WritersSource.SPEC:
            return f"{self.writers.value}, from the spec (the checkpoint records no choice)"
        asked = "the spec says auto" if self.requested is Writers.AUTO else "no spec at hand"
        return f"{self.writers.value} rules: {asked} and the checkpoint records no choice yet"


def writers_in_use(recorded: WritersChoice | None, spec_writers: Writers | None) -> WritersInUse:
    """Settle which writer's rules apply: the recorded choice, else the spec's explicit writer, else the driver's.

    :param recorded: the checkpoint's record (:func:`~.writers_choice.read_writers_choice`), ``None`` if absent.
    :param spec_writers: the spec's ``writers``; ``None`` when the caller has no spec.
    """
    if recorded is not None:
        return WritersInUse(
            writers=recorded.writers, source=WritersSource.RECORDED, requested=spec_writers, choice=recorded
        )
    if spec_writers is Writers.DRIVER or spec_writers is Writers.EXECUTORS:
        return WritersInUse(writers=spec_writers, source=WritersSource.SPEC, requested=spec_writers)
    return WritersInUse(writers=Writers.DRIVER, source=WritersSource.DEFAULT, requested=spec_writers)
