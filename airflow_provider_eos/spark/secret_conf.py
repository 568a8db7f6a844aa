"""Secret Spark settings travel in a private properties file, never as ``--conf`` (``ps`` shows argv).

A spec's ``spark_conf`` may hold secrets (``spark.hadoop.fs.s3a.secret.key`` for a checkpoint on
S3, an Azure account key, a token for a Hive metastore, a repository URL with a password). Those
settings, and only those, secret by name or by value (:func:`~airflow_provider_eos.core.secrets.
is_secret_setting`), go into ``--properties-file``: mode 0600 in the submission's
private folder, removed with it. ``--properties-file`` replaces ``spark-defaults.conf``, so the
file starts with the defaults file spark-submit would have read; what it adds comes after, and
``--conf`` still takes precedence over both.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from airflow_provider_eos.core.secrets import is_secret_setting

SECRET_PROPERTIES = "spark-secrets.properties"

__all__ = ["SECRET_PROPERTIES", "properties_keys", "spark_defaults_file", "split_secret_conf",
           "write_secret_properties"]

# A key ends at the first separator not escaped by a backslash: '=', ':' or white space.
_KEY_END = re.compile(r"(?<!\\)[=:\s]")


def split_secret_conf(conf: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(public, secret)``: the settings that may go on the command line, and those that may not."""
    secret = {key: value for key, value in conf.items() if is_secret_setting(key, value)}
    return {key: value for key, value in conf.items() if key not in secret}, secret


def spark_defaults_file(environment: Mapping[str, str] | None = None) -> Path | None:
    """The ``spark-defaults.conf`` spark-submit reads when given no ``--properties-file``, if it exists.

    Spark's own lookup: ``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``; spark-submit from a pip
    installed PySpark sets ``SPARK_HOME`` to the pyspark package.
    """
    env = os.environ if environment is None else environment
    conf_dir = env.get("SPARK_CONF_DIR")
    if not conf_dir:
        home = env.get("SPARK_HOME")
        if not home:
            import importlib.util

            found = importlib.util.find_spec("pyspark")
            home = str(Path(found.origin).parent) if found and found.origin else None
        conf_dir = f"{home}/conf" if home else None
    candidate = Path(conf_dir) / "spark-defaults.conf" if conf_dir else None
    return candidate if candidate is not None and candidate.is_file() else None


def properties_keys(path: Path | None) -> set[str]:
    """The keys a ``java.util.Properties`` file (``spark-defaults.conf``) sets; none if it cannot be read.

    Enough of the syntax to find keys: comment lines (``#``, ``!``), the three separators, and
    values continued on the next line by a trailing backslash.
    """
    if path is None:
        return set()
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return set()  # spark-submit reports an unreadable file itself
    keys: set[str] = set()
    continued = False
    for line in lines:
        text = line.lstrip()
        if continued:
            continued = _continues(text)
            continue
        if not text or text[0] in "#!":
            continue
        continued = _continues(text)
        keys.add(_KEY_END.split(text, maxsplit=1)[0].replace("\\", ""))
    return keys


def _continues(line: str) -> bool:
    """Whether ``line`` ends in an odd number of backslashes: its value goes on on the next line."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _escape(text: str, *, key: bool) -> str:
    """``java.util.Properties`` escaping: backslashes, line breaks, and separators in a key."""
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if key:
        for char in "=: #!":
            text = text.replace(char, "\\" + char)
    elif text.startswith(" "):
        text = "\\" + text
    return text


def write_secret_properties(secret: Mapping[str, str], work_dir: Path, defaults: Path | None) -> Path:
    """Write ``defaults`` (as read) then ``secret`` to an owner-only properties file in ``work_dir``."""
    path = Path(work_dir) / SECRET_PROPERTIES
    # Created owner-only before the first secret byte is written.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        if defaults is not None:
            out.write(f"# from {defaults}\n{defaults.read_text(encoding='utf-8')}\n")
        out.write("# the secret Spark settings, and the environment of the driver on the cluster\n")
        for key, value in sorted(secret.items()):
            out.write(f"{_escape(key, key=True)}={_escape(str(value), key=False)}\n")
    return path
