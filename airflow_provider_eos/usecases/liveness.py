"""The liveness gate: no recovery action changes anything while the pipeline looks alive (docs/architecture.md).

Abort, rewind and align each act on what a running query also writes: its transactions, its
checkpoint, its sink group's offsets. Before executing, each reads the same three signs of life
(:func:`~airflow_provider_eos.core.transactions.check_safe_to_act`): a checkpoint commit within
the quiet period, a transaction under the prefix younger than its timeout, and the driver's lease
(``eos/driver-lease.json``) unreleased and within its ttl plus the clock margin. The lease is the
one sign an idle stream gives: a processing-time query with no input commits no batch and opens
no transaction, but its driver renews the lease. Dry runs read nothing here: they change nothing.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from airflow_provider_eos.core import transactions as txn
from airflow_provider_eos.core.driver_lease import lease_sign_of_life
from airflow_provider_eos.usecases.driver_liveness import read_lease_for_gate

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.usecases.clients import PipelineClients

__all__ = ["check_not_alive", "forced_notes", "last_commit_time", "lease_signs_of_life"]


def last_commit_time(reader: CheckpointReader) -> dt.datetime | None:
    """When the checkpoint's newest ``commits/N`` was written; ``None`` without a checkpoint or a commit.

    :param reader: the checkpoint, as the use case's :class:`PipelineClients` read it (its storage options).
    """
    if not reader.exists():
        return None
    # The same value as snapshot().last_commit_time without parsing any offsets file: after a
    # crash the gate must not depend on more of the checkpoint than it needs.
    last = reader.latest_committed_batch()
    return None if last is None else reader.commit_time(last)


def lease_signs_of_life(reader: CheckpointReader) -> tuple[str, ...]:
    """The driver lease's sign of life (:func:`~airflow_provider_eos.core.driver_lease.lease_sign_of_life`), if any.

    :param reader: the checkpoint, as the use case's :class:`PipelineClients` read it.
    """
    if not reader.exists():
        return ()
    observed_at, lease = read_lease_for_gate(reader)
    sign = lease_sign_of_life(lease, observed_at=observed_at)
    return () if sign is None else (sign,)


def check_not_alive(
    clients: PipelineClients, *, action: str, force: bool, now: dt.datetime | None = None
) -> txn.SafetyCheck:
    """Refuse ``action`` while the pipeline looks alive, unless ``force``.

    :param action: ``rewind`` or ``align`` (see :data:`~airflow_provider_eos.core.transactions.LIVE_JOB_HARM`).
    :param force: act despite the signs of life (a person who has checked that nothing runs).
    :param now: the current time (default: now).
    :return: the check; ``forced`` is set when signs of life were overridden.
    :raises UnsafeToActError: naming each sign of life and how to force.
    :raises TransactionsAdminError: if the transactions under the prefix cannot be read.
    """
    spec = clients.spec
    signs = txn.LivenessSigns(
        last_commit_time=last_commit_time(clients.checkpoint),
        now=now or dt.datetime.now(dt.UTC),
        transaction_timeout_ms=spec.transaction_timeout_ms,
        quiet_period_ms=txn.default_quiet_period_ms(spec.transaction_timeout_ms, spec.trigger_interval_ms),
        signs_of_life=lease_signs_of_life(clients.checkpoint),
    )
    return txn.check_safe_to_act(spec.transactional_id_prefix, clients.transactions_under_prefix(), signs,
                                 force=force, action=action)


def forced_notes(safety: txn.SafetyCheck | None) -> tuple[str, ...]:
    """The note a forced action carries: which signs of life the person overrode."""
    if safety is None or not safety.forced:
        return ()
    return ("forced despite signs that the pipeline is alive: " + "; ".join(safety.reasons),)
