"""How long a stable read of the sink group's offsets waits for a pending transactional offset commit.

A ``require_stable`` read (KIP-447) of a partition whose offsets an open transaction holds is
answered ``UNSTABLE_OFFSET_COMMIT`` until that transaction ends: committed, aborted, fenced by a
new producer of its transactional id, or aborted by the broker once its ``transaction.timeout.ms``
has passed. The sink's transactions run with the spec's ``transaction_timeout_ms``, so a reader
that cannot fence the holder first (a reader of another id, a cached producer, verification,
health) must wait that long, and a little more for the broker to notice and apply the abort,
before a pending commit is more than a transaction still at work. One rule for every reader, the
Python ones and the JVM executor writer (which gets it in its write plan).
"""

from __future__ import annotations

__all__ = [
    "OBSERVER_STABLE_WAIT_MS",
    "STABLE_READ_MARGIN_MS",
    "observer_stable_read_timeout_ms",
    "stable_read_timeout_ms",
]

#: What the broker adds to a transaction's timeout before its pending offsets are resolved: it looks
#: for timed-out transactions every ``transaction.abort.timed.out.transaction.cleanup.interval.ms``
#: (10 s by default), then writes the abort markers, which the group coordinator applies.
STABLE_READ_MARGIN_MS = 30_000


def stable_read_timeout_ms(transaction_timeout_ms: int) -> int:
    """How long a stable read waits for a pending commit of a transaction of ``transaction_timeout_ms``.

    :param transaction_timeout_ms: the spec's ``transaction_timeout_ms`` (the sink's transactions').
    :return: the timeout plus :data:`STABLE_READ_MARGIN_MS`, in milliseconds.
    :raises ValueError: for a timeout that is not positive (the spec refuses one).
    """
    if transaction_timeout_ms <= 0:
        raise ValueError(f"transaction_timeout_ms is {transaction_timeout_ms}; a transaction timeout is positive")
    return transaction_timeout_ms + STABLE_READ_MARGIN_MS


#: How long an observer's stable read (health, pre-flight's facts) waits at most: an observer answers
#: on its own rhythm, and a commit pending this long is itself what it reports (a lingering
#: transaction), where a writer or an on-call action must wait for the stable state it acts on.
OBSERVER_STABLE_WAIT_MS = 60_000


def observer_stable_read_timeout_ms(transaction_timeout_ms: int) -> int:
    """An observer's stable read wait: :func:`stable_read_timeout_ms`, at most :data:`OBSERVER_STABLE_WAIT_MS`."""
    return min(stable_read_timeout_ms(transaction_timeout_ms), OBSERVER_STABLE_WAIT_MS)
