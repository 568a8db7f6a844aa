"""Running a command the product waits for: bounded in time, and stopped with everything it started.

Maven, Kafka's storage formatter, pip and the ``airflow`` CLI can hang (a stalled download, a lock,
a JVM waiting on a full disk), and a caller without a deadline then hangs with them: a task slot
held forever, ``eos devstack up`` that never returns. :func:`run_bounded` is
:func:`subprocess.run` with a deadline that cannot be left out. The command runs in a session of
its own, so on a timeout (or an interrupt of the caller) its whole process group is killed, not
only the first process: ``mvn`` and pip start children that would outlive it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

from airflow_provider_eos.core.errors import EosError

__all__ = ["run_bounded"]

# Commands can be long (JVM options, every requirement): the message keeps the program and the end,
# where a JVM command names its main class and arguments.
_SHOWN_HEAD, _SHOWN_TAIL = 100, 300


def run_bounded(
    command: Sequence[str],
    *,
    timeout_s: float,
    error: type[EosError],
    fix: str,
    capture_output: bool = False,
    **popen: Any,
) -> subprocess.CompletedProcess:
    """Run ``command`` to its end, as ``subprocess.run(command, check=False, ...)``, for at most ``timeout_s``.

    :param error: the caller's error type, raised on a timeout (the part that waited: a devstack
        error, a missing prerequisite ...).
    :param fix: what the operator should do when the command does not finish.
    :param capture_output: as :func:`subprocess.run`'s; the other keyword arguments go to :class:`subprocess.Popen`.
    :returns: the completed process, whatever its exit code (the caller reads it).
    :raises EosError: (``error``) naming the command and ``timeout_s``; its process group is killed by then.
    """
    if capture_output:
        popen |= {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen(list(command), start_new_session=True, **popen) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise error(f"`{_shown(command)}` did not finish within {timeout_s:g}s; it was stopped.",
                        fix=fix) from None
        except BaseException:  # an interrupted caller (Ctrl-C, SIGTERM as KeyboardInterrupt) leaves nothing running
            _kill_group(process)
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _shown(command: Sequence[str]) -> str:
    text = shlex.join(command)
    if len(text) <= _SHOWN_HEAD + _SHOWN_TAIL:
        return text
    return f"{text[:_SHOWN_HEAD]} ... {text[-_SHOWN_TAIL:]}"


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # its own session: the group holds only what it started
    process.wait()
