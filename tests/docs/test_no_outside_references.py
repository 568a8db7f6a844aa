"""Nothing in the repository points at design material outside it: the docs are in ``docs/``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# A file outside the repository the project was once described by, by its name or its folder.
OUTSIDE = re.compile(r"DESIGN\.md|\.\./shared\b|\bshared/DESIGN")
# Recorded results are kept as they were written; their text is history, not a pointer to follow.
KEPT_AS_RECORDED = ("bench/results/", "soak/results/")


def _repository_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    return [name for name in listed if not name.startswith(KEPT_AS_RECORDED) and (REPO / name).is_file()]


def test_no_file_points_outside_the_repository() -> None:
    this = Path(__file__).resolve().relative_to(REPO).as_posix()
    found = []
    for name in _repository_files():
        if name == this:
            continue
        try:
            text = (REPO / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # images and other binary files
        found += [f"{name}:{number}" for number, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]
    assert not found, "point these at docs/ (e.g. docs/architecture.md) instead:\n" + "\n".join(found)
