"""The bench's CPU of a job's process tree: children's CPU counted, kept after they exit, interpolated."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import psutil

from bench.process_tree import CpuSampler, listener_pid

# A parent that spins, and starts a child that spins and exits before the parent does.
SPIN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"
PARENT = (f"import subprocess, sys\nchild = subprocess.Popen([sys.executable, '-c', {SPIN.format(seconds=0.6)!r}])\n"
          + SPIN.format(seconds=0.3) + "child.wait()\n" + "import time; time.sleep(0.5)\n")


def test_the_tree_cpu_counts_a_child_that_exited_and_interpolates_between_samples() -> None:
    process = subprocess.Popen([sys.executable, "-c", PARENT])
    sampler = CpuSampler(process.pid, interval_s=0.05)
    sampler.start()
    started = time.time()
    process.wait(30)
    sampler.stop()
    total = sampler.total_s()
    # 0.3 s (parent) + 0.6 s (child) of spinning, plus two interpreters' start-up; minus at most the last
    # 0.05 s of each process's life.
    assert 0.8 <= total <= 3.0, total
    assert sampler.between(started - 10, time.time() + 10) == total - sampler.samples[0][1]
    middle = (sampler.samples[0][0] + sampler.samples[-1][0]) / 2
    assert 0 <= sampler.at(middle) <= total and sampler.between(middle, middle) == 0


def test_the_broker_is_found_by_its_listening_port() -> None:
    with socket.socket() as listening, socket.socket() as bound_only:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        bound_only.bind(("127.0.0.1", 0))
        assert listener_pid(f"127.0.0.1:{listening.getsockname()[1]},127.0.0.1:1") == os.getpid()
        # Bound but not listening: no broker there.
        assert listener_pid(f"127.0.0.1:{bound_only.getsockname()[1]}") is None


def test_a_process_running_before_the_sampler_counts_only_what_it_used_while_sampled() -> None:
    # The bench's broker: started long before the job, sampled only during it.
    # Spins for 1.2 s of its own CPU time, and the sampler starts once it has used 0.4 s: on a loaded
    # machine wall-clock sleeps would not say how much CPU it got.
    spin = "import time\nwhile time.process_time() < 1.2: pass"
    spinner = subprocess.Popen([sys.executable, "-c", spin])
    try:
        running = psutil.Process(spinner.pid)
        deadline = time.monotonic() + 60
        while sum(running.cpu_times()[:2]) < 0.4 and time.monotonic() < deadline:
            time.sleep(0.02)
        sampler = CpuSampler(spinner.pid, interval_s=0.05)
        sampler.start()
        spinner.wait(30)
        sampler.stop()
    finally:
        spinner.kill()
    assert sampler.samples[0][1] >= 0.3, "the spinner had used CPU before the sampler started"
    assert sampler.used_s() == sampler.total_s() - sampler.samples[0][1] and sampler.used_s() <= 0.9
