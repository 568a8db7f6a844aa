"""The job's process tree, sampled: peak memory of its driver processes and the CPU of all of them.

The broker's CPU is sampled beside it (:func:`listener_pid`): on a machine whose cores it shares with
Spark, what the broker spends appending a mode's output is taken from that mode's throughput.

The tree is ``eos run`` (Python) -> spark-submit's JVM (the driver; in local mode the executors too)
-> the Python driver (``eos_job.py``) and Spark's Python workers. It is found by walking
``/proc/<pid>/task/*/children`` from the root every ``interval_s``.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _read_kb(pid: int, key: str) -> int | None:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found.extend(int(c) for c in (task / "children").read_text().split())
    return found


def _cmdline(pid: int) -> list[str]:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    return []


def tree_pids(root_pid: int) -> list[int]:
    """The root and every process below it, found now."""
    pending, seen = [root_pid], []
    while pending:
        pid = pending.pop()
        if pid in seen:
            continue
        seen.append(pid)
        pending.extend(_children(pid))
    return seen


def listener_pid(bootstrap: str) -> int | None:
    """The process listening on the first ``host:port`` of ``bootstrap`` (the bench's broker), if any."""
    import psutil

    port = int(bootstrap.split(",")[0].rsplit(":", 1)[1])
    with contextlib.suppress(psutil.Error):
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                return conn.pid
    return None


class _Sampler:
    """Calls ``sample()`` every ``interval_s`` on a daemon thread between ``start()`` and ``stop()``."""

    interval_s: float
    _stop: threading.Event
    _thread: threading.Thread | None

    def sample(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"bench-{type(self).__name__}")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)


@dataclass
class MemorySampler(_Sampler):
    """Samples peak RSS (``VmHWM``) of the job's Python driver and of spark-submit's JVM.

    The process tree is ``eos run`` (Python) -> spark-submit JVM -> Python driver
    (``eos_job.py``); both are found by walking ``/proc/<pid>/task/*/children`` from the root.
    ``VmHWM`` is the kernel's own high-water mark, so sampling every 0.2 s loses nothing but the
    last 0.2 s of a process's life.
    """

    root_pid: int
    interval_s: float = 0.2
    peaks_kb: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> None:
        for pid in tree_pids(self.root_pid):
            command = _cmdline(pid)
            if not command or not command[0]:
                continue
            if any(part.endswith("eos_job.py") for part in command) and "java" not in Path(command[0]).name:
                role = "driver_python"
            elif Path(command[0]).name == "java":
                role = "jvm"
            else:
                continue
            hwm = _read_kb(pid, "VmHWM")
            if hwm is not None:
                self.pids[role] = pid
                self.peaks_kb[role] = max(self.peaks_kb.get(role, 0), hwm)

    def peaks_mb(self) -> dict[str, float]:
        return {role: round(kb / 1024, 1) for role, kb in sorted(self.peaks_kb.items())}


def _own_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of the process itself (``/proc/<pid>/stat`` fields 14 and 15)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS
    return None


@dataclass
class CpuSampler(_Sampler):
    """CPU seconds of every process of the job, over time.

    Each sample adds up, per process ever seen (by pid and start), the last CPU time it was seen
    with: a process that exits keeps what it used up to its last sample (``interval_s``), so the
    total misses at most the last interval of each process's life, and short helpers (spark-submit's
    shell scripts and launcher). :meth:`between` interpolates the total at two moments (e.g. the
    end of batch 0 and of the last batch: steady state).
    """

    root_pid: int
    interval_s: float = 0.2
    samples: list[tuple[float, float]] = field(default_factory=list)
    _last: dict[int, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> None:
        for pid in tree_pids(self.root_pid):
            cpu = _own_cpu_s(pid)
            if cpu is not None:
                # A reused pid starts again near 0: keep the larger of the two readings' sum.
                previous = self._last.get(pid, 0.0)
                self._last[pid] = cpu if cpu >= previous else previous + cpu
        self.samples.append((time.time(), sum(self._last.values())))

    def total_s(self) -> float:
        return self.samples[-1][1] if self.samples else 0.0

    def used_s(self) -> float:
        """CPU seconds used while sampled: a process running before :meth:`start` (the broker) counts from there."""
        return self.total_s() - self.samples[0][1] if self.samples else 0.0

    def at(self, moment: float) -> float:
        """The total at ``moment`` (linear between the samples around it)."""
        if not self.samples:
            return 0.0
        times = [t for t, _ in self.samples]
        i = bisect.bisect_left(times, moment)
        if i == 0:
            return self.samples[0][1]
        if i >= len(self.samples):
            return self.samples[-1][1]
        (t0, c0), (t1, c1) = self.samples[i - 1], self.samples[i]
        return c0 + (c1 - c0) * ((moment - t0) / (t1 - t0) if t1 > t0 else 0.0)

    def between(self, start: float, end: float) -> float:
        return max(0.0, self.at(end) - self.at(start))
