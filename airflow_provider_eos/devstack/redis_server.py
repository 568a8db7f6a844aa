"""The Celery broker of the Airflow deployment (``--executor celery``): Debian's ``redis-server``.

Bound to 127.0.0.1 on a free port, with a password and its own folder, and nothing persisted (no
RDB snapshots, no append-only file): the queue only carries what the scheduler sent and the
workers have not taken yet, and ``up`` starts a deployment anew. Its settings are in an
owner-only file, so the password is not on a command line ``ps`` shows.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from airflow_provider_eos.core.errors import AirflowDeploymentError, PrerequisiteError
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.celery_settings import RedisServer
from airflow_provider_eos.devstack.private_files import write_private
from airflow_provider_eos.devstack.process_groups import stop_groups

__all__ = ["ping", "redis_config", "start_redis"]


def redis_config(folder: Path, port: int, password: str) -> str:
    """``redis.conf`` for the broker: loopback only, a password, no persistence."""
    return "\n".join((
        "bind 127.0.0.1", f"port {port}", "protected-mode yes", f"requirepass {password}",
        'save ""', "appendonly no", f"dir {folder}", "daemonize no", 'logfile ""', "databases 2",
        # Celery's own keys only: a queue that grows past this means no worker runs.
        "maxmemory 128mb", "",
    ))


def start_redis(folder: Path, port: int, password: str, *, timeout_s: float = 30) -> RedisServer:
    """Start the broker in ``folder``; return once it answers an authenticated ``PING``.

    :raises PrerequisiteError: ``redis-server`` is not installed.
    :raises AirflowDeploymentError: it did not answer within ``timeout_s`` (the message names its log);
        it is stopped then.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        raise PrerequisiteError("redis-server is not installed (the Celery executor's broker).",
                                fix="`apt-get install redis-server` (`make install` does it as root), or use the "
                                "default --executor local.")
    folder.mkdir(mode=0o700, exist_ok=True)
    config = folder / "redis.conf"
    write_private(config, redis_config(folder, port, password))
    log_file = folder / "redis.log"
    with log_file.open("w") as out:
        server = subprocess.Popen([binary, str(config)], stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True, cwd=folder)
    info = RedisServer(pid=server.pid, port=port, work_dir=str(folder), log_file=str(log_file))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(info.pid):
            raise AirflowDeploymentError(f"redis-server exited while starting:\n{log_file.read_text()[-2000:]}",
                                         fix=f"read {log_file}.")
        if ping(port, password):
            return info
        time.sleep(0.1)
    stop_groups({info.pid: info.marker}, 10)  # not recorded yet: nobody else could stop it
    raise AirflowDeploymentError(f"redis-server did not answer on 127.0.0.1:{port} within {timeout_s:g}s.",
                                 fix=f"read {log_file}.")


def ping(port: int, password: str) -> bool:
    """Whether Redis on 127.0.0.1:``port`` takes ``password`` and answers ``PING``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
            conn.sendall(_command("AUTH", password) + _command("PING"))
            answer = b""
            while answer.count(b"\r\n") < 2:
                chunk = conn.recv(256)
                if not chunk:
                    break
                answer += chunk
    except OSError:
        return False
    return answer.startswith(b"+OK\r\n+PONG\r\n")


def _command(*parts: str) -> bytes:
    # RESP, Redis's wire format: an array of bulk strings.
    encoded = [p.encode() for p in parts]
    return f"*{len(encoded)}\r\n".encode() + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in encoded)
