"""A worker host's init (pid 1 of its namespaces): names the host, outlives its command while orphans live,
passes SIGTERM to every process of the namespace. Real namespaces (``unshare``), no Airflow."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.celery_workers import hosts_file_text


def _wait(predicate: Callable[[], object], timeout_s: float = 10) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_the_init_names_the_host_keeps_an_orphan_alive_and_passes_sigterm_on(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text(hosts_file_text("eos-test-host"))
    # The command ends at once; the sleep it started in the background is orphaned to the init.
    script = (f"hostname > {tmp_path / 'name'}; getent hosts eos-test-host > {tmp_path / 'resolved'}; "
              f"sleep 60 & echo $! > {tmp_path / 'orphan'}; exit 3")
    user = () if os.geteuid() == 0 else ("--user", "--map-root-user")
    unshare = subprocess.Popen(["unshare", *user, "--uts", "--pid", "--fork", "--mount-proc", "--kill-child",
                                sys.executable, "-m", "airflow_provider_eos.devstack.host_init",
                                "--hostname", "eos-test-host", "--hosts-file", str(hosts), "--", "sh", "-c", script],
                               start_new_session=True)
    try:
        assert _wait(lambda: (tmp_path / "orphan").is_file() and (tmp_path / "orphan").read_text().strip())
        (init,) = psutil.Process(unshare.pid).children()
        assert _wait(lambda: len(init.children()) == 1)  # the command ended and was reaped; the orphan is the init's
        (orphan,) = init.children()
        assert "sleep" in orphan.cmdline()[0]
        assert (tmp_path / "name").read_text().strip() == "eos-test-host"
        assert "127.0.0.1" in (tmp_path / "resolved").read_text()
        assert os.uname().nodename != "eos-test-host"  # the machine's own name is untouched
        time.sleep(0.5)
        assert pid_alive(init.pid) and pid_alive(orphan.pid)

        init.send_signal(signal.SIGTERM)
        # The orphan gets the SIGTERM, the init reaps it and ends with the command's exit code.
        assert unshare.wait(timeout=10) == 3
        assert not pid_alive(orphan.pid)
    finally:
        if unshare.poll() is None:
            os.killpg(unshare.pid, signal.SIGKILL)
            unshare.wait()
