"""``transaction.partition.verification.enable`` off for a moment, to make a real hanging transaction.

The setting is broker-wide and dynamic, and both pytest workers share the brokers: a window is one at
a time per broker (an ``flock`` named after it), or one worker's restore lands inside the other's
window and its hanging write is refused (error 48, INVALID_TXN_STATE). A dynamic config also applies
asynchronously: :func:`until_accepted` sends again while the broker still refuses.
"""

from __future__ import annotations

import contextlib
import fcntl
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

SETTING = "transaction.partition.verification.enable"
#: The broker's answer to a transactional write to a partition its coordinator was not told of.
INVALID_TXN_STATE = 48

T = TypeVar("T")


def _set(admin: AdminClient, value: str | None) -> None:
    broker = str(admin.describe_cluster().result(30).nodes[0].id)
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    entry = ConfigEntry(SETTING, value or "", incremental_operation=op)
    for future in admin.incremental_alter_configs([ConfigResource("BROKER", broker,
                                                                  incremental_configs=[entry])]).values():
        future.result(30)


@contextlib.contextmanager
def verification_off(admin: AdminClient, broker: str) -> Iterator[None]:
    """Partition verification off on the (first) broker ``admin`` reaches, back to its default after.

    :param broker: what names the broker across processes (its bootstrap address).
    """
    lock = Path(tempfile.gettempdir()) / f"eos-test-verification-{broker.replace(':', '-').replace('/', '-')}.lock"
    with lock.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            _set(admin, "false")
            yield
        finally:
            _set(admin, None)
            fcntl.flock(handle, fcntl.LOCK_UN)


def until_accepted(write: Callable[[], T], refused: Callable[[T | Exception], bool], timeout_s: float = 30) -> T:
    """``write()`` again while the broker refuses it as verified (the setting is not applied yet).

    :param refused: whether a result or an exception is that refusal; a refused write wrote nothing.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            result = write()
        except Exception as exc:
            if not refused(exc) or time.monotonic() > deadline:
                raise
        else:
            if not refused(result) or time.monotonic() > deadline:
                return result
        time.sleep(0.2)
