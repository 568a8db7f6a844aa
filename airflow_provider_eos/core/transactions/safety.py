"""Never act on a live job: the signs that the pipeline may still be running (docs/architecture.md, recovery).

Aborting a live job's transaction fences it and makes its next commit fail, so recovery acts
only when nothing says the job is alive. :func:`evaluate_safety` is the decision, pure and
without I/O: it collects every sign of life (a checkpoint commit within the quiet period, an
ongoing transaction under the prefix younger than its timeout, and any sign a caller found
elsewhere, e.g. the cluster manager still reporting the driver) and never raises.
:func:`check_safe_to_act` is the same decision as a guard: it raises unless it is safe or forced.
``force`` is for a person who has checked, never a default. The same gate stands before every
recovery action that changes something: abort, rewind (moves checkpoint files) and align (commits
the sink group's offsets); :data:`LIVE_JOB_HARM` says what each would break.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import computed_field

from airflow_provider_eos.core.errors import UnsafeToActError
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.transactions.admin_reports import Transaction, format_age, to_epoch_ms
from airflow_provider_eos.core.transactions.lingering import find_lingering

__all__ = [
    "LIVE_JOB_HARM",
    "LivenessSigns",
    "SafetyCheck",
    "check_safe_to_act",
    "default_quiet_period_ms",
    "evaluate_safety",
    "recent_commit_reason",
    "young_transaction_reasons",
]


#: Per recovery action: what it is about to do, and what doing it to a live job breaks.
LIVE_JOB_HARM: dict[str, tuple[str, str]] = {
    "abort": ("abort transactions under prefix {prefix!r}",
              "fencing aborts a live job's transaction and makes its next commit fail"),
    "rewind": ("rewind the checkpoint",
               "moving checkpoint files under a running query corrupts its checkpoint"),
    "align": ("align the sink group",
              "committing offsets under a running query overwrites the batch markers its sink commits"),
}


def default_quiet_period_ms(transaction_timeout_ms: int, trigger_interval_ms: int | None) -> int:
    """How long without a checkpoint commit before the job counts as stopped.

    A producer that committed within its transaction timeout may still have a transaction
    open; a job on a processing-time trigger commits once per interval, so two missed
    intervals are needed before silence means anything.
    """
    return max(transaction_timeout_ms, 2 * (trigger_interval_ms or 0))


class SafetyCheck(FrozenModel):
    """Whether recovery may act now, and why not.

    JSON: ``safe``, ``forced``, ``may_act`` and ``reasons``.

    :param reasons: each sign that the job is alive, with the values found; empty when safe.
    :param forced: whether the caller chose to act despite the reasons.
    :param driver_gone: positive evidence that the job's driver is gone (see
        :mod:`airflow_provider_eos.core.driver`), set only when it explains away the reasons: a
        young transaction or a recent commit then belongs to the dead driver.
    """

    reasons: tuple[str, ...]
    forced: bool = False
    driver_gone: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def safe(self) -> bool:
        """True when no sign of life was found."""
        return not self.reasons

    @computed_field  # type: ignore[prop-decorator]
    @property
    def may_act(self) -> bool:
        """True when acting is allowed: safe, the driver is positively gone, or forced."""
        return self.safe or self.driver_gone is not None or self.forced


def recent_commit_reason(last_commit_time: dt.datetime | None, *, now: dt.datetime, quiet_period_ms: int) -> str | None:
    """The sign of life a checkpoint commit within the quiet period gives, ``None`` if there is none.

    A commit dated in the future (clock skew between hosts) counts as recent: skew must not
    turn a live job into a dead one.
    """
    if last_commit_time is None:
        return None
    commit_age = to_epoch_ms(now) - to_epoch_ms(last_commit_time)
    if commit_age >= quiet_period_ms:
        return None
    return (
        f"the checkpoint's newest commit is {format_age(max(commit_age, 0))} old "
        f"({last_commit_time.isoformat()}), newer than the quiet period of {format_age(quiet_period_ms)}: "
        "the job may still be running"
    )


def young_transaction_reasons(
    prefix: str, transactions: Iterable[Transaction], *, now: dt.datetime, transaction_timeout_ms: int
) -> list[str]:
    """One sign of life per ongoing transaction under ``prefix`` younger than its timeout (or of unknown age)."""
    reasons = []
    for item in find_lingering(prefix, transactions, now, transaction_timeout_ms):
        if item.young:
            age = "of unknown age" if item.age_ms is None else f"{format_age(item.age_ms)} old"
            reasons.append(
                f"transaction {item.transaction.transactional_id!r} is ongoing and {age}, younger than "
                f"its timeout of {format_age(item.timeout_ms)}: its producer may still be working on it"
            )
    return reasons


@dataclass(frozen=True)
class LivenessSigns:
    """What a recovery action knows about whether the pipeline's job may still run, before it acts.

    :param last_commit_time: when the checkpoint's newest ``commits/N`` was written (``None``:
        no checkpoint or no commit yet).
    :param now: the current time.
    :param transaction_timeout_ms: the spec's timeout, used when the broker reports none.
    :param quiet_period_ms: a commit newer than this means the job may be running.
    :param signs_of_life: further reasons found by the caller (the recovery use cases add the driver
        lease, unreleased and within its ttl:
        :func:`~airflow_provider_eos.core.driver_lease.lease_sign_of_life`), each a sentence naming
        the values found; they count exactly like the ones found here.
    :param driver_gone: positive evidence that the driver is gone, e.g. "no process on host h
        carries EOS_DRIVER_TOKEN=..."; with it the signs of life are the dead driver's and acting
        is allowed without ``force``. Only an observation may supply it, never a default.
    """

    last_commit_time: dt.datetime | None
    now: dt.datetime
    transaction_timeout_ms: int
    quiet_period_ms: int
    signs_of_life: tuple[str, ...] = ()
    driver_gone: str | None = None


def evaluate_safety(
    prefix: str, transactions: Iterable[Transaction], signs: LivenessSigns, *, force: bool = False
) -> SafetyCheck:
    """Collect the signs that the pipeline is alive; never raises (see :func:`check_safe_to_act`).

    :param prefix: the pipeline's transactional id prefix.
    :param transactions: described transactions (ids outside ``prefix`` are ignored).
    :param force: record that the caller acts regardless.
    :return: the check; ``reasons`` empty means safe, ``forced`` is set only when reasons were
        overridden.
    """
    commit = recent_commit_reason(signs.last_commit_time, now=signs.now, quiet_period_ms=signs.quiet_period_ms)
    reasons = [] if commit is None else [commit]
    reasons += young_transaction_reasons(prefix, transactions, now=signs.now,
                                         transaction_timeout_ms=signs.transaction_timeout_ms)
    reasons += signs.signs_of_life
    explained = signs.driver_gone if reasons and signs.driver_gone else None
    return SafetyCheck(reasons=tuple(reasons), driver_gone=explained, forced=force and bool(reasons) and not explained)


def check_safe_to_act(
    prefix: str, transactions: Iterable[Transaction], signs: LivenessSigns, *, force: bool = False,
    action: str = "abort",
) -> SafetyCheck:
    """Refuse to act while the pipeline looks alive, unless its driver is positively gone or forced.

    Takes the arguments of :func:`evaluate_safety`.

    :param action: the recovery action about to act, a key of :data:`LIVE_JOB_HARM`.
    :return: the check (``forced`` set when signs of life were overridden).
    :raises UnsafeToActError: naming each sign of life and how to force, if any was found and
        ``force`` is false.
    """
    check = evaluate_safety(prefix, transactions, signs, force=force)
    if not check.may_act:
        doing, harm = LIVE_JOB_HARM[action]
        raise UnsafeToActError(
            f"refusing to {doing.format(prefix=prefix)}: the pipeline looks alive:\n"
            + "\n".join(f"  - {reason}" for reason in check.reasons),
            fix="stop the job and retry once the quiet period has passed; or, if you are sure "
            "nothing runs (e.g. the driver was killed), pass --force (force=True; in eos_manual_recovery "
            f"tick Force and type '{action} <pipeline> force'): {harm}",
        )
    return check
