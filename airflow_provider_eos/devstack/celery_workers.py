"""The deployment's Celery workers, each on a "host" of its own (docs/design-notes.md note 34).

Each worker runs as ``unshare --uts --pid --fork --mount-proc --kill-child python -m
airflow_provider_eos.devstack.host_init --hostname eos-worker-N -- airflow celery worker ...``:
a UTS namespace (its own hostname), a pid namespace (it sees only its own processes, and
:mod:`.host_init` is its pid 1), and a mount namespace (its own ``/proc`` and ``/etc/hosts``).
``--kill-child`` ends the namespace with ``unshare``, so stopping ``unshare``'s process group ends
every process of the host, whatever left the group.

Without root, ``unshare`` maps the user to root in a user namespace of its own
(``--map-root-user``), which unprivileged user namespaces allow on most kernels.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from airflow_provider_eos.core.errors import AirflowDeploymentError
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.celery_settings import DEFAULT_QUEUE, CeleryWorker, worker_environment
from airflow_provider_eos.devstack.process_groups import stop_groups

__all__ = ["HOSTNAME_PREFIX", "spawn_worker", "worker_command", "worker_ready"]

#: A worker's hostname: this prefix and its name (``eos-worker-1``).
HOSTNAME_PREFIX = "eos-"
_INIT_MODULE = "airflow_provider_eos.devstack.host_init"
#: What the Celery worker logs once it consumes its queues.
_READY = " ready."


def worker_command(name: str, hostname: str, hosts_file: Path, airflow_bin: str, *, concurrency: int,
                   root: bool) -> list[str]:
    """The command line of one worker's namespace (pure: the unit tests read it)."""
    namespaces = ["unshare", *(() if root else ("--user", "--map-root-user")), "--uts", "--pid", "--fork",
                  "--mount-proc", "--kill-child"]
    init = [sys.executable, "-m", _INIT_MODULE, "--hostname", hostname,
            "--hosts-file", str(hosts_file), "--"]
    # No log server: the workers share the deployment's log folder with the api-server (one machine),
    # and two would fight over its one port. No mingle and gossip: they only slow the start.
    worker = [airflow_bin, "celery", "worker", "--queues", f"{name},{DEFAULT_QUEUE}", "--concurrency",
              str(concurrency), "--celery-hostname", f"{name}@{hostname}", "--skip-serve-logs",
              "--without-mingle", "--without-gossip"]
    return [*namespaces, *init, *worker]


def hosts_file_text(hostname: str) -> str:
    """``/etc/hosts`` of a worker's host: its name resolves to loopback, where every server listens."""
    return f"127.0.0.1\tlocalhost {hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n"


def spawn_worker(name: str, env: dict[str, str], work_dir: Path, airflow_bin: str, *, concurrency: int = 2,
                 timeout_s: float = 20) -> CeleryWorker:
    """Start worker ``name`` in its namespaces, working in ``work_dir`` (its log there too, ``worker.log``);
    return its pids once its init started the Celery worker.

    :raises AirflowDeploymentError: the namespace or the worker did not start (the message names the log);
        what was started is stopped then.
    """
    hostname = f"{HOSTNAME_PREFIX}{name}"
    work_dir.mkdir(parents=True, exist_ok=True)
    hosts = work_dir / "hosts"
    hosts.write_text(hosts_file_text(hostname))
    log_file = work_dir / "worker.log"
    command = worker_command(name, hostname, hosts, airflow_bin, concurrency=concurrency, root=os.geteuid() == 0)
    with log_file.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env={**env, **worker_environment(name)}, start_new_session=True, cwd=work_dir)
    try:
        init_pid = _child(process.pid, _INIT_MODULE, log_file, timeout_s)
        worker_pid = _child(init_pid, "celery", log_file, timeout_s, unless=_INIT_MODULE)
    except BaseException:
        stop_groups({process.pid: _INIT_MODULE}, 10)  # not recorded yet: nobody else could stop it
        raise
    proc = Path("/proc") / str(init_pid) / "ns"
    return CeleryWorker(name=name, hostname=hostname, queues=[name, DEFAULT_QUEUE], unshare_pid=process.pid,
                        init_pid=init_pid, worker_pid=worker_pid, pid_namespace=os.readlink(proc / "pid"),
                        uts_namespace=os.readlink(proc / "uts"), work_dir=str(work_dir), log_file=str(log_file))


def _child(parent: int, marker: str, log_file: Path, timeout_s: float, *, unless: str | None = None) -> int:
    """The child of ``parent`` with ``marker`` as one of its arguments, and not ``unless``.

    The init runs ``mount`` before the worker, and each child holds the init's arguments (``celery``
    among them) until it executes its own program: those are not the worker.
    """
    import psutil  # Airflow's own dependency

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(parent):
            break
        try:
            children = psutil.Process(parent).children()
        except psutil.Error:
            break
        for child in children:
            with contextlib.suppress(psutil.Error):
                arguments = child.cmdline()
                if marker in arguments and (unless is None or unless not in arguments):
                    return child.pid
        time.sleep(0.05)
    raise AirflowDeploymentError(f"a Celery worker's namespace did not start (process {parent} started no {marker}):\n"
                                 f"{log_file.read_text(errors='replace')[-2000:]}", fix=f"read {log_file}.")


def worker_ready(worker: CeleryWorker) -> bool:
    """Whether the worker consumes its queues (its log says ``ready.``); raises if its process ended.

    :raises AirflowDeploymentError: the worker's Celery process exited.
    """
    log = Path(worker.log_file)
    if not pid_alive(worker.worker_pid):
        raise AirflowDeploymentError(f"Celery worker {worker.name} exited while starting:\n"
                                     f"{log.read_text(errors='replace')[-3000:]}", fix=f"read {log}.")
    return _READY in log.read_text(errors="replace")
