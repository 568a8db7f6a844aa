"""A rewind SIGKILLed between two moves leaves a manifest that puts the checkpoint back exactly.

A real process runs the rewind on a copy of a checkpoint Spark 4.2 wrote
(``tests/unit/data/checkpoints/spark420_real``); the script wraps the file system's ``mv`` so the
process stops at a chosen move and says so, and this test SIGKILLs it there. The restore then
follows only the manifest it finds in the backup folder, as a person would.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from airflow_provider_eos.core.repair import MANIFEST_NAME
from tests.unit.repair.builders import backups, tree

REPO = Path(__file__).resolve().parents[3]
REAL = REPO / "tests" / "unit" / "data" / "checkpoints" / "spark420_real"

# Rewinds ``argv[1]`` to batch 0; the ``argv[2]``-th move stops ``argv[3]`` ("before": once the
# manifest names it as moving, "after": once it moved) and touches ``argv[4]`` to say so.
_RUN_REWIND = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.repair import rewind

    location, stop_at, when, signal_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    reader = CheckpointReader(location)
    real_mv = reader.fs.mv
    calls = 0

    def stop() -> None:
        signal_file.touch()
        time.sleep(600)  # the test SIGKILLs this process here

    def mv(source, target, **kwargs):
        global calls
        calls += 1
        if calls == stop_at and when == "before":
            stop()
        real_mv(source, target, **kwargs)
        if calls == stop_at and when == "after":
            stop()

    reader.fs.mv = mv
    rewind(reader, 0, execute=True)
    """
)


def restore_from_manifest(backup: Path, checkpoint: Path) -> None:
    """Do what the manifest's ``restore`` says: move every file it lists back to its place."""
    manifest = json.loads((backup / MANIFEST_NAME).read_text())
    assert manifest["complete"] is False and manifest["root"] == str(checkpoint)
    moving = manifest.get("moving")
    listed = [*manifest["moved"], *([moving] if moving else [])]
    for relative in listed:
        source = backup / relative
        if not source.exists():
            # Only the file named in "moving" may not have moved yet; a moved one must be here.
            assert relative == moving, f"{relative} is listed as moved but is not in {backup}"
            continue
        (checkpoint / posixpath.dirname(relative)).mkdir(parents=True, exist_ok=True)
        shutil.move(source, checkpoint / relative)
    (backup / MANIFEST_NAME).unlink()
    leftover = [path for path in backup.rglob("*") if path.is_file()]
    assert leftover == [], f"files in the backup the manifest does not list: {leftover}"


@pytest.mark.parametrize(("stop_at", "when"), [(3, "after"), (3, "before"), (1, "before")])
def test_a_rewind_killed_between_moves_is_restored_exactly_from_its_manifest(
    tmp_path: Path, stop_at: int, when: str
) -> None:
    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(REAL, checkpoint)
    original = tree(str(checkpoint))
    stopped = tmp_path / "stopped"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen(
        [sys.executable, "-c", _RUN_REWIND, str(checkpoint), str(stop_at), when, str(stopped)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not stopped.exists():
            if process.poll() is not None:
                pytest.fail(f"the rewind ended (exit {process.returncode}) before move {stop_at}:\n"
                            f"{process.stderr.read() if process.stderr else ''}")
            assert time.monotonic() < deadline, "the rewind never reached the move"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait(30)
    assert process.returncode == -signal.SIGKILL

    (backup,) = map(Path, backups(str(checkpoint)))
    moved_already = stop_at if when == "after" else stop_at - 1
    assert tree(str(checkpoint)) != original or moved_already == 0
    assert len([p for p in backup.rglob("*") if p.is_file() and p.name != MANIFEST_NAME]) == moved_already

    restore_from_manifest(backup, checkpoint)

    assert tree(str(checkpoint)) == original
