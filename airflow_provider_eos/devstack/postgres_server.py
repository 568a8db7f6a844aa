"""The Airflow deployment's PostgreSQL server (``--db postgres``): Debian's binaries, a cluster of its own.

``initdb`` writes the cluster into the deployment's folder, and ``postgres`` serves it on
127.0.0.1 on a free port, its unix socket in the same folder: nothing of the machine's own
PostgreSQL (``/etc/postgresql``, ``/var/run/postgresql``, port 5432) is used or touched. The
superuser ``airflow`` has a password (scram-sha-256, for TCP and the socket alike), and owns the
database ``airflow``.

PostgreSQL refuses to run as root. Under root the server runs as the unprivileged system user
:data:`OS_USER`, created when missing; the deployment's folder is often under a folder only root
may enter (``/root``, pytest's ``/tmp/pytest-of-root``), so the server gets the one capability
to pass through folders (``CAP_DAC_READ_SEARCH``) rather than the folders being opened to
everyone. Durability is off (``fsync``, ``full_page_writes``): this is a devstack, and a lost
machine loses the deployment anyway.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
from pathlib import Path

from airflow_provider_eos.core.errors import AirflowDeploymentError, PrerequisiteError
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.celery_settings import DB_NAME, DB_USER, PostgresServer
from airflow_provider_eos.devstack.private_files import write_private
from airflow_provider_eos.devstack.process_groups import stop_groups
from airflow_provider_eos.subprocesses import run_bounded

__all__ = ["OS_USER", "PG_ROOT", "find_postgres", "start_postgres"]

#: Where Debian's packages put each major version's server binaries (``<root>/<version>/bin``).
PG_ROOT = Path("/usr/lib/postgresql")
#: The system user the server runs as when ``up`` runs as root.
OS_USER = "eos-postgres"
_SETUP_TIMEOUT_S = 120.0
_INSTALL_FIX = ("install Debian's PostgreSQL server (`apt-get install postgresql`; `make install` does it as root), "
                "or use the default --db sqlite.")


def find_postgres(root: Path = PG_ROOT) -> tuple[str, Path]:
    """The newest installed major version and its ``bin`` folder (with ``initdb`` and ``postgres``).

    :raises PrerequisiteError: no PostgreSQL server binaries under ``root``.
    """
    found = [(int(d.name), d / "bin") for d in root.glob("*")
             if d.name.isdigit() and (d / "bin" / "postgres").is_file() and (d / "bin" / "initdb").is_file()]
    if not found:
        raise PrerequisiteError(f"no PostgreSQL server binaries under {root}/<version>/bin (initdb, postgres).",
                                fix=_INSTALL_FIX)
    version, bin_dir = max(found)
    return str(version), bin_dir


def server_user() -> str | None:
    """The OS user to run the server as: :data:`OS_USER` (created when missing) under root, else None (this one)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(OS_USER)
    except KeyError:
        done = subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                               "--shell", "/usr/sbin/nologin", "--user-group", OS_USER],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise AirflowDeploymentError(f"could not create the system user {OS_USER} for PostgreSQL "
                                         f"(it refuses to run as root): {done.stderr.strip()}",
                                         fix=f"create it (`useradd --system {OS_USER}`), or run `eos airflow up` "
                                         "as an unprivileged user.") from None
    return OS_USER


def _as_user(user: str | None, argv: list[str]) -> list[str]:
    if user is None:
        return argv
    # Only the right to pass through (and read) folders: the cluster's folder may sit under /root.
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search", "--", *argv]


def _owned_by(path: Path, user: str | None, mode: int = 0o700) -> Path:
    path.mkdir(mode=mode, exist_ok=True)
    if user is not None:
        shutil.chown(path, user, user)
    return path


def start_postgres(folder: Path, port: int, password: str, *, timeout_s: float = 60) -> PostgresServer:
    """Create the cluster in ``folder`` and start its server; return once the database ``airflow`` accepts logins.

    :raises PrerequisiteError: no server binaries (see :func:`find_postgres`).
    :raises AirflowDeploymentError: ``initdb`` failed, or the server did not come up in ``timeout_s``
        (the message names its log); the server is stopped then.
    """
    version, bin_dir = find_postgres()
    user = server_user()
    _owned_by(folder, user)
    data, sockets = folder / "data", _owned_by(folder / "socket", user)
    log_file = folder / "postgres.log"
    password_file = folder / "initdb-password"
    write_private(password_file, password)
    if user is not None:
        shutil.chown(password_file, user, user)
    _run(_as_user(user, [str(bin_dir / "initdb"), "-D", str(data), "-U", DB_USER, f"--pwfile={password_file}",
                         "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"]),
         folder / "initdb.log", "initdb")
    password_file.unlink()
    with log_file.open("w") as out:
        if user is not None:
            shutil.chown(log_file, user, user)
        server = subprocess.Popen(
            _as_user(user, [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(sockets),
                            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off",
                            "-c", "synchronous_commit=off", "-c", "shared_buffers=32MB", "-c", "max_connections=200"]),
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    info = PostgresServer(pid=server.pid, port=port, version=version, bin_dir=str(bin_dir), data_dir=str(data),
                          socket_dir=str(sockets), os_user=user, log_file=str(log_file))
    try:
        _wait_for_logins(info, timeout_s)
        _run([str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", DB_USER, DB_NAME],
             folder / "createdb.log", "createdb", env={**os.environ, "PGPASSWORD": password})
    except BaseException:
        stop_groups({info.pid: info.marker}, 10)  # not recorded yet: nobody else could stop it
        raise
    return info


def _wait_for_logins(info: PostgresServer, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(info.pid):
            raise AirflowDeploymentError(f"PostgreSQL exited while starting:\n{_tail(Path(info.log_file))}",
                                         fix=f"read {info.log_file}.")
        ready = subprocess.run([str(Path(info.bin_dir) / "pg_isready"), "-q", "-h", "127.0.0.1",
                                "-p", str(info.port), "-d", "postgres"], check=False)
        if ready.returncode == 0:
            return
        time.sleep(0.2)
    raise AirflowDeploymentError(f"PostgreSQL did not accept connections on 127.0.0.1:{info.port} within "
                                 f"{timeout_s:g}s.", fix=f"read {info.log_file}.")


def _run(argv: list[str], log_file: Path, name: str, env: dict[str, str] | None = None) -> None:
    with log_file.open("w") as out:
        done = run_bounded(argv, timeout_s=_SETUP_TIMEOUT_S, error=AirflowDeploymentError, fix=f"read {log_file}.",
                           stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    if done.returncode != 0:
        raise AirflowDeploymentError(f"PostgreSQL's {name} failed with exit code {done.returncode}:\n"
                                     f"{_tail(log_file)}", fix=f"read {log_file}.")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path} is missing)"
