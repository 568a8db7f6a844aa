"""Checkpoint locations and Spark masters as the storage and ownership rules read them."""

from __future__ import annotations

import posixpath
import re

from airflow_provider_eos.core.checkpoint import normalize_location
from airflow_provider_eos.core.spark_master import canonical_master

__all__ = ["TEMP_DIRS", "VOLATILE_SCHEMES", "canonical_location", "is_host_local", "is_local_master", "scheme"]

#: Paths that survive no reboot and are cleaned by tmpfiles / tmpreaper on many hosts.
TEMP_DIRS = ("/tmp/", "/var/tmp/", "/dev/shm/")
#: Filesystems whose content is gone when the process ends.
VOLATILE_SCHEMES = frozenset({"memory"})

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# Filesystems that are one host's disk (or memory) however the URL is spelled.
_HOST_LOCAL_SCHEMES = {"file", "local"}


def scheme(location: str) -> str | None:
    """The URL scheme of ``location`` in lower case, or ``None`` for a plain path."""
    match = _SCHEME_RE.match(normalize_location(location))
    # "C:" would be a Windows drive, never a URL scheme; one letter is not a scheme Spark knows.
    if match is None or len(match.group(1)) == 1:
        return None
    return match.group(1).lower()


def is_host_local(location: str) -> bool:
    """Whether ``location`` is on one host's disk (a plain path, ``file:`` or ``local:``)."""
    found = scheme(location)
    return found is None or found in _HOST_LOCAL_SCHEMES


def canonical_location(location: str) -> str:
    """A checkpoint location spelled one way, so two specs naming the same place compare equal."""
    text = normalize_location(location.strip())
    found = scheme(text)
    if found in _HOST_LOCAL_SCHEMES:
        text = re.sub(r"^[A-Za-z]+:(//)?", "", text)
        found = None
    if found is None:
        return posixpath.normpath(text)
    return text.rstrip("/")


def is_local_master(master: str) -> bool:
    """Whether the Spark master runs driver and executors on this host."""
    # local, local[4], local[*,2], local-cluster[2,1,1024].
    return canonical_master(master).startswith("local")
