"""Taking a free driver lease exclusively: a claim created once, before the lease is written (design note 79).

The lease record itself is rewritten by every renewal, so "create it only if absent" cannot guard
it: a free lease is usually there (released or expired). A starting driver that finds the lease
free therefore first *claims* it: it creates ``eos/driver-lease.claim.<base>.<n>``, where ``<base>``
is a digest of the lease text it found free (:func:`lease_base`) and ``<n>`` the claim's generation,
with :func:`~.checkpoint.eos_records.create_eos_record`, which exactly one of two simultaneous
creators wins. Then it reads the lease again: unchanged, it is the one taker of that state and
writes its lease; changed, another driver took it meanwhile, and it withdraws its claim.

A claim is a :class:`~.driver_lease.DriverLease` of its taker, stamped when it was made: a taker
that finds a claim judges it by the lease's own rules (within ``ttl`` + the clock margin and not
seen exited on this host: the claimant is taking the lease, refuse; else it crashed, and the next
generation is claimed, exclusively again). So a crashed taker's claim never wedges the pipeline.
The winner deletes the claims of the state it took once its lease is written; a leftover of an old
state is never read again (a lease's text never returns to an earlier state: it names its renewal
time and sequence).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from airflow_provider_eos.core.checkpoint.eos_records import (
    create_eos_record,
    delete_eos_record,
    eos_record_display,
    read_eos_record,
    read_through_rewrite,
)
from airflow_provider_eos.core.checkpoint.location import EOS_FOLDER
from airflow_provider_eos.core.driver_lease import LEASE_RECORD, DriverLease, parse_driver_lease
from airflow_provider_eos.core.errors import CheckpointError

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader

__all__ = ["CLAIM_PREFIX", "claim_name", "create_lease_claim", "drop_lease_claims", "lease_base",
           "newest_lease_claim", "read_lease_text", "withdraw_lease_claim"]

#: The claims' names start with this, beside the lease in the checkpoint's ``eos`` folder.
CLAIM_PREFIX = f"{LEASE_RECORD[1]}.claim"


def lease_base(text: str | None) -> str:
    """The state of the lease a taker found free, as its claim names it: a digest of its text (``none``: absent)."""
    return "none" if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def claim_name(base: str, generation: int) -> str:
    """The claim of generation ``generation`` on the lease state ``base``."""
    return f"{CLAIM_PREFIX}.{base}.{generation}"


def read_lease_text(checkpoint: CheckpointReader) -> tuple[str | None, DriverLease | None, CheckpointError | None]:
    """The lease's text, the lease, and why it is malformed if it is (then the lease is ``None``).

    On a checkpoint that is not local the lease is rewritten in place by its holder's renewals: a
    read that lands inside one is read again (:func:`read_through_rewrite`), so a live holder's
    lease is not taken for a malformed one, which a taker writes over.
    """
    where = eos_record_display(checkpoint, LEASE_RECORD[1])

    def once() -> tuple[str | None, DriverLease | None]:
        text = read_eos_record(checkpoint, LEASE_RECORD[1], "the driver lease")
        return text, None if text is None else parse_driver_lease(where, text)

    try:
        text, lease = read_through_rewrite(checkpoint, once, what=f"read the driver lease {where}")
    except CheckpointError as err:  # malformed for good: its text is the state a taker claims
        return read_eos_record(checkpoint, LEASE_RECORD[1], "the driver lease"), None, err
    return text, lease, None


def newest_lease_claim(checkpoint: CheckpointReader, base: str) -> tuple[int, DriverLease | None] | None:
    """The newest claim on ``base``: its generation and its record (``None`` if malformed); ``None`` when none.

    Generations are created one after another from 0 and deleted only once the lease left ``base``,
    so while the lease is ``base`` they are 0..newest without a gap.
    """
    checkpoint.fs.invalidate_cache(checkpoint.path(EOS_FOLDER))
    newest = None
    while checkpoint.fs.isfile(checkpoint.path(EOS_FOLDER, claim_name(base, 0 if newest is None else newest + 1))):
        newest = 0 if newest is None else newest + 1
    if newest is None:
        return None
    name = claim_name(base, newest)
    where = eos_record_display(checkpoint, name)

    def once() -> DriverLease | None:
        text = read_eos_record(checkpoint, name, "a driver lease claim")
        if text is None:  # deleted meanwhile: the lease left base, which the taker's re-read finds
            return None
        return parse_driver_lease(where, text)

    try:
        return newest, read_through_rewrite(checkpoint, once, what=f"read the lease claim {where}")
    except CheckpointError:  # a claim never written whole: no evidence of a taker, as a malformed lease
        return newest, None


def create_lease_claim(checkpoint: CheckpointReader, base: str, generation: int, claim: DriverLease) -> bool:
    """Claim the lease state ``base`` with generation ``generation``: ``True`` when this taker created it."""
    return create_eos_record(checkpoint, claim_name(base, generation), claim.to_json(), writer=claim.token)


def drop_lease_claims(checkpoint: CheckpointReader, base: str, newest: int) -> None:
    """Delete the claims on ``base`` up to generation ``newest``: only once the lease has left ``base``."""
    for generation in range(newest, -1, -1):
        delete_eos_record(checkpoint, claim_name(base, generation))


def withdraw_lease_claim(checkpoint: CheckpointReader, base: str, generation: int) -> None:
    """Delete this taker's own claim, made on a state the lease has left since (another driver took it)."""
    delete_eos_record(checkpoint, claim_name(base, generation))
