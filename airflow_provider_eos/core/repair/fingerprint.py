"""The fingerprint of a repair plan: the plan a person read in the dry run, carried to the execution.

A repair executed later (``eos repair ... --execute``, the recovery form with dry run off) plans
again when it runs. Comparing that plan with one made a moment earlier in the same call proves
nothing; comparing it with the plan the person confirmed does. The dry run shows the plan's
fingerprint, the person passes it back (``--expect-plan``, the form's Plan fingerprint), and the
execution refuses when the plan it would carry out is not that one.
"""

from __future__ import annotations

import hashlib
import json

from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.frozen_model import FrozenModel

__all__ = ["FINGERPRINT_LENGTH", "check_expected_plan", "expectation_notes", "plan_fingerprint"]

#: Hex digits shown: short enough to copy by hand, long enough that two plans never share one by chance.
FINGERPRINT_LENGTH = 12


def plan_fingerprint(plan: FrozenModel) -> str:
    """A digest of the plan's declared fields (what it reads and would change), not of values derived from them."""
    fields = plan.model_dump(mode="json", include=set(type(plan).model_fields))
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:FINGERPRINT_LENGTH]


def check_expected_plan(fingerprint: str, expected: str | None, *, repair: str) -> None:
    """Refuse to execute a plan other than the one the person confirmed.

    :param fingerprint: the fingerprint of the plan about to be executed.
    :param expected: the fingerprint the person read in the dry run; ``None``: none was given.
    :param repair: ``rewind`` or ``align``, for the message.
    :raises RepairError: if ``expected`` is given and differs.
    """
    if expected is None or expected.strip().lower() == fingerprint:
        return
    raise RepairError(
        f"the plan changed since the dry run that showed plan fingerprint {expected.strip()!r}: the {repair} "
        f"planned now has fingerprint {fingerprint!r} (the checkpoint or the sink group changed); nothing was changed",
        fix=f"make sure the query is stopped, run the {repair} dry run again, read the new plan and execute it "
        "with its fingerprint (--expect-plan FP; in eos_manual_recovery: Plan fingerprint)",
    )


def expectation_notes(fingerprint: str, expected: str | None, *, executed: bool) -> tuple[str, ...]:
    """What a result says about the plan the person confirmed.

    An execution without ``expected`` says that no dry run held it; a dry run given ``expected``
    says whether the plan is still that one (a dry run never refuses).
    """
    if expected is None:
        if not executed:
            return ()
        return ("executed without an expected plan fingerprint: the plan carried out is the one made in this "
                "call, not one a person read",)
    if executed:
        return ()
    same = expected.strip().lower() == fingerprint
    verdict = "is this plan" if same else f"is not this plan ({fingerprint}): the state changed since that dry run"
    return (f"the expected plan {expected.strip()!r} {verdict}",)
