"""Look for a secret where it must never be: command lines, environments, files others can read, logs.

The checks of issue 12's "Secrets" section, shared by the tests that run a real secured pipeline.
A secret is searched as its plain text; every place it was found is reported, so a failure says
where it leaked.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # the process ended, or it is not ours to read
        return b""


@dataclass
class ProcessSampler:
    """Sample every process's command line and environment every ``interval_s`` while running.

    ``ps`` shows any user every command line; an environment is readable by the process owner
    and root only, but a secret there is inherited by every child, so both are checked.

    Files in ``watched`` folders that hold a secret while the pipeline runs (the operator's private spec
    copies, which live only as long as their task) are recorded too, with the permission bits of the
    file and of every folder between it and the watched root: a copy others could reach is a leak.

    :param secrets: the values that must not appear (reported by position, never printed).
    :param watched: folders whose secret-holding files are looked at in every sample.
    """

    secrets: list[str]
    watched: list[Path] = field(default_factory=list)
    interval_s: float = 0.2
    samples: int = 0
    processes_seen: set[str] = field(default_factory=set)
    leaks: list[str] = field(default_factory=list)
    private_copies_seen: set[Path] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> ProcessSampler:
        self._thread = threading.Thread(target=self._run, name="secret-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        needles = [secret.encode() for secret in self.secrets]
        while not self._stop.is_set():
            self.sample(needles)
            time.sleep(self.interval_s)

    def sample(self, needles: list[bytes]) -> None:
        me = os.getpid()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            cmdline = _read(entry / "cmdline")
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            kind = _kind(command)
            if kind:
                self.processes_seen.add(kind)
            for where, content in (("command line", cmdline), ("environment", _read(entry / "environ"))):
                for number, needle in enumerate(needles):
                    if needle in content:
                        # Named by kind and program only: the command line itself holds the secret.
                        program = Path(command.split(" ", 1)[0]).name
                        self.leaks.append(f"secret #{number} in pid {entry.name}'s {where}: {kind or program}")
        for root in self.watched:
            self._sample_files(root)
        self.samples += 1

    def _sample_files(self, root: Path) -> None:
        for path in files_containing_any(self.secrets, [root]):
            reachable = [folder for folder in (path, *path.parents) if root in folder.parents or folder == path]
            open_to_others = [f"{folder} ({stat.S_IMODE(mode):o})" for folder in reachable
                              if (mode := _mode(folder)) is not None and mode & (stat.S_IRWXG | stat.S_IRWXO)]
            if open_to_others:
                self.leaks.append(f"a file holding a secret is open to others: {', '.join(open_to_others)}")
            else:
                self.private_copies_seen.add(path)


_KINDS = (("CoarseGrainedExecutorBackend", "executor"), ("pyspark.daemon", "python worker"),
          ("pyspark/worker", "python worker"), ("org.apache.spark.deploy.SparkSubmit", "driver jvm"),
          ("bin/spark-submit", "spark-submit"), ("eos_job", "python driver"), ("dag_runner", "airflow"))


def _kind(command: str) -> str:
    """What a process is, for the processes of a pipeline run: the Spark driver, a Python worker..."""
    return next((kind for marker, kind in _KINDS if marker in command), "")


def files_containing(secret: str, roots: Iterable[Path]) -> dict[Path, int]:
    """Every file under ``roots`` whose bytes contain ``secret``, with its permission bits."""
    needle, found = secret.encode(), {}
    for root in roots:
        for path in Path(root).rglob("*"):
            try:
                if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
                    found[path] = stat.S_IMODE(path.stat().st_mode)
            except OSError:
                continue
    return found


def files_containing_any(secrets: Iterable[str], roots: Iterable[Path]) -> set[Path]:
    """The files under ``roots`` holding any of ``secrets``."""
    needles, found = [secret.encode() for secret in secrets], set()
    for root in roots:
        for path in Path(root).rglob("*"):
            try:
                if path.is_file() and not path.is_symlink():
                    content = path.read_bytes()
                    if any(needle in content for needle in needles):
                        found.add(path)
            except OSError:  # removed while listing: its task ended
                continue
    return found


def _mode(path: Path) -> int | None:
    try:
        return path.stat().st_mode
    except OSError:  # removed between the listing and now: the task ended
        return None


def readable_by_others(path: Path) -> bool:
    """Whether anyone but the owner can read ``path``: its own bits, or an open folder above a shared file."""
    return bool(stat.S_IMODE(path.stat().st_mode) & (stat.S_IRGRP | stat.S_IROTH))


def leaks_in_files(secret: str, roots: Iterable[Path], allowed: Iterable[Path] = ()) -> list[str]:
    """Files holding the secret that others can read, and any holding it outside ``allowed`` places."""
    allowed = [Path(a).resolve() for a in allowed]
    problems = []
    for path, mode in files_containing(secret, roots).items():
        resolved = path.resolve()
        if readable_by_others(path):
            problems.append(f"{path} (mode {mode:o}) holds the secret and others can read it")
        elif not any(resolved == a or a in resolved.parents for a in allowed):
            problems.append(f"{path} (mode {mode:o}) holds the secret and is not a place meant for it")
    return problems


def assert_absent(secret: str, **texts: str) -> None:
    """Assert the secret is in none of the named texts (logs, XCom, rendered fields, outputs)."""
    found = [name for name, text in texts.items() if secret in text]
    assert not found, f"the secret appears in: {', '.join(found)}"
