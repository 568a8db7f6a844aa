"""Pid 1 of a Celery worker's pid namespace: the "host" a devstack worker runs on (docs/design-notes.md note 34).

``unshare --uts --pid --fork --mount-proc`` starts this module as pid 1 of a new pid namespace.
It names the host (``sethostname`` in the new UTS namespace; ``/etc/hosts`` bind-mounted in the
private mount namespace so the name resolves, as Spark's driver needs), starts the worker's command
as its child, and then does what an init does: reaps every process that ends up its child.

Why not the worker itself as pid 1: when pid 1 of a namespace dies, the kernel SIGKILLs every
process in it. A worker SIGKILLed on a real host leaves the host's other processes (a Spark driver
that a task started, detached) running; so here only this init's end ends the namespace. It ends
when it has no child left, or passes SIGTERM, SIGINT and SIGHUP on to every process of the namespace.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
from types import FrameType

__all__ = ["main"]

_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="host_init", description=__doc__.splitlines()[0])
    parser.add_argument("--hostname", required=True, help="the host's name in its UTS namespace")
    parser.add_argument("--hosts-file", default=None, help="bind-mounted on /etc/hosts (names the host)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run as pid 2")
    args = parser.parse_args(argv)
    args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.command:
        parser.error("no command after --")
    return args


def _forward(signum: int, _frame: FrameType | None) -> None:
    # kill(-1) from pid 1 of a pid namespace reaches every process of that namespace but pid 1.
    os.kill(-1, signum)


def main(argv: list[str] | None = None) -> int:
    """Name the host, run the command, reap until no child is left; exit with the command's exit code."""
    args = _parse(sys.argv[1:] if argv is None else argv)
    if os.getpid() != 1:
        # kill(-1) outside a namespace of its own would signal every process of the machine.
        print("host_init must run as pid 1 of its own pid namespace (unshare --pid --fork)", file=sys.stderr)
        return 2
    socket.sethostname(args.hostname)
    if args.hosts_file:
        subprocess.run(["mount", "--bind", args.hosts_file, "/etc/hosts"], check=True)
    for signum in _FORWARDED:
        signal.signal(signum, _forward)
    command = subprocess.Popen(args.command)
    status = 0
    while True:
        try:
            pid, wait_status = os.wait()
        except ChildProcessError:
            return status
        if pid == command.pid:
            status = os.waitstatus_to_exitcode(wait_status)
            command.returncode = status  # reaped here: Popen must not wait for it again


if __name__ == "__main__":
    sys.exit(main())
