"""Progress while a person waits: one logger, lines such as "installing the requirements (45 s so far)".

Anything that may take longer than a few seconds (a retry that keeps failing, a pip install, a
Maven resolution, a cluster starting) says so here. The ``eos`` command line shows these lines on
stderr (:func:`show_on`), so stdout keeps only the result (text or ``--json``); in an Airflow
task they reach the task log like any INFO line. Only the standard library: the core imports no
client.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import TextIO

__all__ = ["PROGRESS_LOGGER", "Cadence", "heartbeat", "say", "show_on"]

PROGRESS_LOGGER = "airflow_provider_eos.progress"
_log = logging.getLogger(PROGRESS_LOGGER)


def say(message: str) -> None:
    """One progress line."""
    _log.info("%s", message)


def show_on(stream: TextIO, *, prefix: str = "eos: ") -> logging.Handler:
    """Print progress lines on ``stream`` (the CLI's stderr); returns the handler, to remove it again."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(f"{prefix}%(message)s"))
    _log.addHandler(handler)
    if _log.getEffectiveLevel() > logging.INFO:
        _log.setLevel(logging.INFO)
    return handler


class Cadence:
    """When a repeated wait deserves a line: not before ``first_s`` (a quick retry says nothing), then each ``every_s``.

    :param first_s: seconds into the wait before the first line.
    :param every_s: seconds between lines after that.
    """

    def __init__(self, first_s: float = 2.0, every_s: float = 10.0) -> None:
        self.first_s, self.every_s = first_s, every_s
        self._last: float | None = None

    def due(self, elapsed_s: float) -> bool:
        """Whether to say something now, ``elapsed_s`` into the wait (and remember that it was said)."""
        if elapsed_s < self.first_s or (self._last is not None and elapsed_s - self._last < self.every_s):
            return False
        self._last = elapsed_s
        return True


@contextlib.contextmanager
def heartbeat(what: str, *, every_s: float = 15.0, detail: str = "") -> Iterator[None]:
    """Say ``what`` now, ``still <what> (N s so far)`` every ``every_s`` while the block runs, and how long it took.

    For one long blocking call (a subprocess, a download) that reports nothing itself.

    :param detail: appended to the first and the "still" lines, e.g. where its log is.
    """
    started = time.monotonic()
    stop = threading.Event()
    suffix = f"; {detail}" if detail else ""

    def beat() -> None:
        while not stop.wait(every_s):
            say(f"still {what} ({time.monotonic() - started:.0f} s so far{suffix})")

    say(f"{what}{suffix} ...")
    # A daemon: a crash in the block must not leave the process waiting for this thread.
    thread = threading.Thread(target=beat, name="eos-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
    say(f"{what}: done in {time.monotonic() - started:.0f} s")
