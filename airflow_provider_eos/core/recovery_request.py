"""The on-call's recovery request (the ``eos_manual_recovery`` form): run one action, or refuse it.

Pure rules, no Airflow: the DAG's branch calls :func:`decide` and goes to the chosen action's
task, or to its ``refused`` task, which states the reason in one line. A refusal is not an
incident (nothing ran, nothing changed), so it never fails a task.

A state-changing action (abort, rewind, align) with dry run off runs only when the confirmation
reads exactly :func:`confirmation_phrase`: ``<action> <pipeline>``, and ``<action> <pipeline>
force`` when Force is on, so overriding the "looks alive" refusal is typed, not only ticked;
``verify`` and dry runs need none. Values the form leaves empty arrive as ``None``: dry run then
stays on, force off. ``expected_plan`` (the plan fingerprint a dry run showed) belongs to rewind
and align only, ``in_flight_batch`` (what the output topic shows of a batch in flight whose offsets may
have expired, docs/design-notes.md note 61) to align only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.in_flight_batch import InFlightBatch, parse_in_flight

__all__ = [
    "ACTIONS",
    "FORCE_WORD",
    "IN_FLIGHT_ANSWERS",
    "PLANNED",
    "REFUSED",
    "STATE_CHANGING",
    "RequestDecision",
    "confirmation_help",
    "confirmation_phrase",
    "decide",
]

#: Every action the form offers, in the form's order.
ACTIONS: tuple[str, ...] = ("verify", "abort", "rewind", "align")
#: The actions that change Kafka or the checkpoint unless dry-running.
STATE_CHANGING: tuple[str, ...] = ("abort", "rewind", "align")
#: The actions whose dry run shows a plan fingerprint an execution can be held to.
PLANNED: tuple[str, ...] = ("rewind", "align")
#: The form's answers for align's batch in flight, in the form's order.
IN_FLIGHT_ANSWERS: tuple[str, ...] = tuple(answer.value for answer in InFlightBatch)
#: The task a refused request goes to.
REFUSED = "refused"
#: The word that ends the confirmation when Force is on.
FORCE_WORD = "force"


def confirmation_phrase(action: str, pipeline: str, *, force: bool = False) -> str:
    """What the on-call types to run ``action`` on ``pipeline`` with dry run off.

    ``<action> <pipeline>``, and ``<action> <pipeline> force`` when Force is on: one form for
    every action, so what is typed says what is overridden.
    """
    return f"{action} {pipeline}" + (f" {FORCE_WORD}" if force else "")


def confirmation_help(pipelines: Collection[str], *, max_pipelines: int = 20) -> str:
    """Markdown help for the Confirmation field: each pipeline's exact phrases.

    :param max_pipelines: list at most this many pipelines; the rest are counted.
    """
    names = sorted(pipelines)
    lines = [
        "Only with dry run **off** for abort, rewind or align (verify and dry runs need nothing). "
        "Type exactly *action pipeline*:",
        "",
    ]
    lines.extend(
        # Bold, not inline code: the form draws code chips taller than its help line, over the text.
        f"- {name}: " + " · ".join(f"**{confirmation_phrase(action, name)}**" for action in STATE_CHANGING)
        for name in names[:max_pipelines]
    )
    if len(names) > max_pipelines:
        lines.append(f"- ... and {len(names) - max_pipelines} more pipeline(s), spelled the same way")
    if not names:
        lines.append("- (no pipeline spec found)")
    example = confirmation_phrase("align", names[0] if names else "<pipeline>", force=True)
    lines += ["", f"With **Force** on, add ` {FORCE_WORD}`: e.g. **{example}**."]
    return "\n".join(lines)


class RequestDecision(FrozenModel):
    """What the form asked for, and whether it runs.

    :param pipeline: the pipeline named (as given).
    :param action: the action named (as given).
    :param dry_run: whether the action only plans.
    :param reason: why the request is refused; ``None`` when it runs.
    :param force: whether Force is on (the confirmation must then name it).
    """

    pipeline: str | None
    action: str | None
    dry_run: bool
    reason: str | None = None
    force: bool = False

    @property
    def refused(self) -> bool:
        """True when nothing may run."""
        return self.reason is not None

    @property
    def task_id(self) -> str:
        """The task the branch follows: the action's, or :data:`REFUSED`."""
        return REFUSED if self.reason is not None or self.action is None else self.action

    @property
    def phrase(self) -> str | None:
        """The confirmation that would let this request run with dry run off (``None`` for verify)."""
        if self.action in STATE_CHANGING and self.pipeline:
            return confirmation_phrase(self.action, self.pipeline, force=self.force)
        return None


def _flag(value: Any, default: bool) -> bool:
    # The form sends true/false; the REST API may send null, or a string from a template.
    if value is None:
        return default
    if isinstance(value, str):
        text = value.strip().lower()
        return default if text in ("", "none", "null") else text in ("true", "1", "yes", "on")
    return bool(value)


def _field_refusal(params: Mapping[str, Any], action: str) -> str | None:
    """Why a field that belongs to some actions only is refused (a bad value, or another action's); else ``None``."""
    target = params.get("target_batch")
    if target is not None and (not isinstance(target, int) or isinstance(target, bool) or target < -1):
        return f"target_batch is {target!r}; use a batch id >= -1, or leave it empty"
    if action != "rewind" and target is not None:
        return f"target_batch {target} only applies to rewind, not {action}; leave it empty"
    if action not in PLANNED and str(params.get("expected_plan") or "").strip() not in ("", "None", "null"):
        return f"expected_plan only applies to rewind and align, not {action}; leave it empty"
    try:
        in_flight = parse_in_flight(params.get("in_flight_batch"))
    except RepairError as bad:
        return f"{bad.message}; {bad.fix}"
    if in_flight is not None and action != "align":
        return f"in_flight_batch {in_flight.value!r} only applies to align, not {action}; leave it empty"
    return None


def decide(params: Mapping[str, Any], pipelines: Collection[str]) -> RequestDecision:
    """Check the form; say which action runs, or why nothing does.

    :param params: the run's params: ``pipeline``, ``action``, ``dry_run``, ``target_batch``,
        ``force``, ``expected_plan``, ``in_flight_batch``, ``confirmation``.
    :param pipelines: the pipelines that have a spec.
    """
    pipeline, action = params.get("pipeline"), params.get("action")
    dry_run = _flag(params.get("dry_run"), True)
    force = _flag(params.get("force"), False)

    def refuse(reason: str) -> RequestDecision:
        return RequestDecision(pipeline=pipeline, action=action, dry_run=dry_run, reason=reason, force=force)

    if pipeline not in pipelines:
        return refuse(f"pipeline {pipeline!r} is unknown; choose one of {sorted(pipelines)}")
    if action not in ACTIONS:
        return refuse(f"action {action!r} is unknown; choose one of {list(ACTIONS)}")
    misplaced = _field_refusal(params, action)
    if misplaced is not None:
        return refuse(misplaced)
    if not dry_run and action in STATE_CHANGING:
        expected = confirmation_phrase(action, pipeline, force=force)
        typed = (params.get("confirmation") or "").strip()
        if typed != expected:
            because = "dry_run is off and Force is on" if force else "dry_run is off"
            return refuse(f"{because}, so the confirmation must read exactly {expected!r}; got {typed!r}")
    return RequestDecision(pipeline=pipeline, action=action, dry_run=dry_run, force=force)
