"""``--broker-core N``: the broker alone on core N, the bench and every job it starts on the other cores.

On this machine the broker shares two cores with Spark, so every request it serves is CPU a mode's Spark job
does not get; in production the brokers run on machines of their own. Pinning separates the two: the
broker's work no longer slows the job, and what is left between two modes is what their jobs do. A run
with it measures a different machine shape than the targets' (``local[2]`` with the broker beside it); the
results say so in their header.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def pin_broker(broker_pid: int, core: int) -> dict[str, Any]:
    """Pin every thread of ``broker_pid`` to ``core`` and this process (inherited by what it starts) to the rest.

    Threads the broker starts later inherit the core of the thread that starts them.

    :raises ValueError: naming the core when the machine has no such core or no other core for the jobs.
    """
    cores = sorted(os.sched_getaffinity(0))
    if core not in cores or len(cores) < 2:
        raise ValueError(f"--broker-core {core}: this process may run on cores {cores}; pick one of them, "
                         "on a machine with at least two")
    others = [c for c in cores if c != core]
    threads = [int(task.name) for task in Path(f"/proc/{broker_pid}/task").iterdir()]
    for thread in threads:
        try:
            os.sched_setaffinity(thread, {core})
        except ProcessLookupError:
            continue  # a thread that ended meanwhile
    os.sched_setaffinity(0, set(others))
    return {"broker_core": core, "job_cores": others, "broker_threads_pinned": len(threads)}


def describe(pinning: dict[str, Any] | None) -> str | None:
    """The report header's sentence on the pinning, or ``None`` when the run had none."""
    if not pinning:
        return None
    return (f"CPU pinning (`--broker-core {pinning['broker_core']}`): the broker alone on core "
            f"{pinning['broker_core']}, the bench and its jobs on core(s) "
            f"{', '.join(map(str, pinning['job_cores']))}: the broker's work does not take the jobs' CPU, as on "
            "a machine of its own; not the targets' shape.")
