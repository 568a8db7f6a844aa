"""A requested stop of the driver (SIGTERM), seen from the driver program's first moment.

``stop_stream``, a killed driver task (``on_kill``) and ``eos run`` send SIGTERM to the Python
driver and expect it to stop cleanly: after the running batch, releasing its lease, exiting 0.
Python's default action for SIGTERM ends the process at once, without ``finally`` blocks, so a
driver that had not yet installed its handler (while Spark, the lease and the query were starting)
died with its lease held, and recovery waited for that lease to expire (ttl + 25 s). The driver
program installs the handler before anything else (:func:`stop_on_sigterm`) and each start-up step
asks the event before it begins.
"""

from __future__ import annotations

import logging
import signal
import threading

__all__ = ["STOPPED_WHILE_STARTING", "stop_on_sigterm", "stopped_while_starting"]

log = logging.getLogger("airflow_provider_eos.job")

#: In the driver's log when a SIGTERM arrived before the query started: a requested stop, nothing written.
STOPPED_WHILE_STARTING = "EOS-QUERY SIGTERM: stopped while starting"


def stop_on_sigterm() -> threading.Event:
    """Install the SIGTERM handler (from the main thread) and return the event it sets.

    From then on a SIGTERM only asks for a stop: the driver ends where it may (between start-up steps,
    after the running batch).
    """
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return stop


def stopped_while_starting(stop: threading.Event, before: str) -> bool:
    """Whether a stop was requested before the start-up step ``before``; logs that the driver stops there.

    :param stop: the event of :func:`stop_on_sigterm`.
    :param before: the step that is not begun (``"Spark started"``, ``"the query started"``).
    """
    if not stop.is_set():
        return False
    log.info("%s, before %s: no batch ran, nothing was written", STOPPED_WHILE_STARTING, before)
    return True
