"""A Spark master URL spelled one way: what the devstack records and compares, and the rules read."""

from __future__ import annotations

import re

from airflow_provider_eos.core.errors import EosError

__all__ = ["canonical_master", "checked_master"]

_MASTER_URL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.DOTALL)


def canonical_master(master: str) -> str:
    """``master`` spelled one way, so two spellings of the same master compare equal.

    Surrounding whitespace goes; the scheme (``spark://``, ``k8s://``) and the masters without one
    (``local[2]``, ``yarn``) are lower case, the only case Spark matches them in; a URL loses its
    trailing slash, which Spark refuses on ``spark://host:port/`` ("Invalid master URL"). The hosts
    of a ``spark://`` URL (several: a standby list) are lower case, as host names compare.

    ``localhost`` stays ``localhost``, not ``127.0.0.1``: this is text, not a name lookup, and the
    two reach different sockets on a host whose ``localhost`` resolves to ``::1`` first, where a
    master bound to 127.0.0.1 does not answer (docs/design-notes.md, note 58).

    :returns: the master, or ``""`` for a blank one (the caller names the option).
    """
    text = master.strip()
    url = _MASTER_URL_RE.match(text)
    if url is None:
        return text.lower()  # local, local[*], local-cluster[2,1,1024], yarn
    scheme, rest = url.group(1).lower(), url.group(2).strip().rstrip("/")
    if scheme == "spark":
        rest = ",".join(part.strip().lower() for part in rest.split(","))
    return f"{scheme}://{rest}"


def checked_master(master: str, *, option: str, error: type[EosError]) -> str:
    """``master`` as :func:`canonical_master` spells it, refused when blank: what a command runs with and records.

    :param option: the option that gave it, as the refusal names it (``--master``).
    :param error: the command's error type.
    :raises EosError: (``error``) the master is blank, naming the value and a master to pass.
    """
    canonical = canonical_master(master)
    if not canonical:
        raise error(f"{option} {master!r} is empty.",
                    fix="pass a Spark master URL, e.g. local[2] or spark://127.0.0.1:7077.")
    return canonical
