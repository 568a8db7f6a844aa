"""The job as a subprocess: started as users start it, its progress and CPU read from its log and processes.

The job runs exactly as users run it: ``eos run --spec FILE --mode ...`` (spark-submit of
``spark_jobs/eos_job.py``), in its own session so the bench can signal its whole process group.
The job logs one ``EOS-PROGRESS`` JSON line per finished batch (Spark's ``triggerExecution``
duration, rows in, and for exactly-once the sink's collect/produce/commit times); the bench reads
them from the job's log file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from airflow_provider_eos.spark.sink_points import ACK_ENV, ARMING_ENV, PLUGIN_ENV
from bench.measure import log
from bench.noop_sink import BENCH_NOOP_MODE, noop_env
from bench.process_tree import CpuSampler, MemorySampler

_TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S,%f"


def _line_time(line: str) -> float | None:
    try:
        return dt.datetime.strptime(line[:23], _TIMESTAMP_FORMAT).timestamp()
    except ValueError:
        return None

_TRACKED: dict[int, subprocess.Popen] = {}


def track(process: subprocess.Popen) -> subprocess.Popen:
    """Remember a subprocess started in its own session, so :func:`kill_tracked` can end it."""
    _TRACKED[process.pid] = process
    return process


def kill_tracked() -> None:
    """SIGKILL the process group of every tracked subprocess still running (on the way out)."""
    for pid, process in list(_TRACKED.items()):
        if process.poll() is None:
            log(f"killing leftover job process group {pid}")
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(30)
        _TRACKED.pop(pid, None)


#: The Spark master of every job unless a bench picks another (``eos run --master``).
DEFAULT_MASTER = "local[2]"


#: ``eos run --mode`` of Spark's noop sink (:mod:`bench.noop_sink`): benchmark only, reads and transforms,
#: writes nothing.
NOOP = BENCH_NOOP_MODE


#: The variables that plug into the sink (a fault, the noop sink): a job that is given none inherits none.
_PLUGIN_VARIABLES = (PLUGIN_ENV, ARMING_ENV, ACK_ENV)


def _cpu_figures(sampler: CpuSampler | None, progress: list[tuple[float | None, dict]], name: str
                 ) -> dict[str, float | None]:
    """``{name}_s`` while sampled, ``{name}_steady_s`` from the end of batch 0 to the end of the last batch."""
    if sampler is None:
        return {f"{name}_s": None, f"{name}_steady_s": None}
    times = [t for t, _ in progress]
    steady = None
    if len(times) >= 2 and None not in times:
        steady = round(sampler.between(times[0], times[-1]), 3)  # type: ignore[arg-type]
    return {f"{name}_s": round(sampler.used_s(), 3), f"{name}_steady_s": steady}


class Job:
    """The job as a subprocess: ``eos run --spec FILE --master M --mode MODE`` in a new session, log to a file."""

    def __init__(self, spec_file: Path, mode: str, log_path: Path, *, env: dict[str, str] | None = None,
                 master: str = DEFAULT_MASTER, broker_pid: int | None = None) -> None:
        self.spec_file, self.mode, self.log_path, self.master = spec_file, mode, log_path, master
        self.env = {name: value for name, value in os.environ.items() if name not in _PLUGIN_VARIABLES}
        self.env.update(EOS_LOG_LEVEL="INFO", **(noop_env() if mode == NOOP else {}), **(env or {}))
        self.process: subprocess.Popen | None = None
        self.memory: MemorySampler | None = None
        #: CPU of all the job's processes over time (every job: a loaded machine must not hide a cost).
        self.cpu: CpuSampler | None = None
        #: The broker's CPU over the same time: it shares the cores, and appending the output costs it.
        self.broker_pid = broker_pid
        self.broker_cpu: CpuSampler | None = None
        self.started_at = 0.0

    def start(self, *, sample_memory: bool = False) -> Job:
        command = [sys.executable, "-m", "airflow_provider_eos.cli", "run", "--spec", str(self.spec_file),
                   "--master", self.master, "--mode", self.mode]
        self.started_at = time.time()
        with self.log_path.open("w") as out:
            # cwd: Spark writes spark-warehouse/derby files into the working directory.
            self.process = track(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                                  cwd=self.log_path.parent, start_new_session=True))
        self.cpu = CpuSampler(self.process.pid)
        self.cpu.start()
        if self.broker_pid is not None:
            self.broker_cpu = CpuSampler(self.broker_pid, interval_s=0.5)
            self.broker_cpu.start()
        if sample_memory:
            self.memory = MemorySampler(self.process.pid)
            self.memory.start()
        return self

    def _stop_sampling(self) -> None:
        for sampler in (self.memory, self.cpu, self.broker_cpu):
            if sampler is not None:
                sampler.stop()

    def wait(self, timeout_s: float) -> int:
        assert self.process is not None
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError(
                f"job did not finish within {timeout_s:.0f}s; log: {self.log_path}\n{self.tail()}") from None
        finally:
            self._stop_sampling()

    def stop(self, timeout_s: float = 90) -> int | None:
        """SIGTERM ``eos run`` (it forwards to the driver, which stops between batches), then SIGKILL."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGTERM)
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.process.returncode
        finally:
            self._stop_sampling()

    def kill(self) -> None:
        """SIGKILL the job's whole process group (eos run, spark-submit's JVM, the Python driver)."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(30)
        self._stop_sampling()

    def cpu_seconds(self, progress: list[tuple[float | None, dict]]) -> dict[str, float | None]:
        """CPU seconds of all the job's processes: in all (start-up included), and in steady state (from
        the end of batch 0 to the end of the last batch, by the progress lines' log times)."""
        figures = _cpu_figures(self.cpu, progress, "cpu")
        if self.broker_cpu is not None:
            figures |= _cpu_figures(self.broker_cpu, progress, "broker_cpu")
        return figures

    def text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.text().splitlines()[-lines:])

    def tagged(self, tag: str) -> list[tuple[float | None, dict]]:
        """``(log time, JSON)`` of every ``<tag> {...}`` line, e.g. ``EOS-PROGRESS``."""
        found = []
        for line in self.text().splitlines():
            if f"{tag} {{" in line:
                found.append((_line_time(line), json.loads(line.split(f"{tag} ", 1)[1])))
        return found

    def first_line_time(self, needle: str) -> float | None:
        """Log time of the first line containing ``needle``."""
        for line in self.text().splitlines():
            if needle in line:
                return _line_time(line)
        return None

    def progress(self) -> list[tuple[float | None, dict]]:
        return self.tagged("EOS-PROGRESS")

    def wait_for(self, needle: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if needle in self.text():
                return True
            if self.process is not None and self.process.poll() is not None:
                return needle in self.text()
            time.sleep(0.2)
        return False


def processing_time(progress: list[tuple[float | None, dict]]) -> dict[str, float | None]:
    """How long the job processed, without JVM startup and query start.

    ``sum_trigger_s``: the sum of Spark's ``triggerExecution`` durations of all batches (the
    primary figure). ``first_to_last_s``: from the first batch's start (its progress line's log
    time minus its duration) to the last batch's progress line, which also counts the gaps
    between batches.
    """
    durations = [(p.get("batch_ms") or 0) / 1000 for _, p in progress]
    times = [t for t, _ in progress if t is not None]
    first_to_last = None
    if len(times) == len(progress) and progress:
        first_to_last = times[-1] - (times[0] - durations[0])
    return {"sum_trigger_s": round(sum(durations), 3),
            "first_to_last_s": None if first_to_last is None else round(first_to_last, 3)}


def in_subprocess_env() -> dict[str, str]:
    """Environment for helper subprocesses (the ``eos`` CLI) that must not inherit fault hooks."""
    return {name: value for name, value in os.environ.items() if name not in _PLUGIN_VARIABLES}
