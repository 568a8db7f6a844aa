"""Files only their owner may read: the devstack's passwords, keys and client settings."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_private"]


def write_private(path: Path, text: str) -> Path:
    """Write ``text`` to a new file readable by its owner only (mode 0600 from the first byte).

    A file already there (a stale one of an earlier start) is replaced, never reused: its mode may not be 0600.
    """
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    return path
