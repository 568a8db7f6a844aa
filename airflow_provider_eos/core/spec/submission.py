"""How a pipeline's job travels to a cluster: the connector jars and the packed Python environment.

The job runs on nodes that do not share the Airflow worker's files (docs/clusters.md), so the
user chooses how Spark's Kafka connector reaches them and may give a packed Python environment
(``eos package``). Both are plain values here; :mod:`airflow_provider_eos.spark.submit_command`
turns them into spark-submit arguments.

Everything named here ends up on spark-submit's command line, which every local user can read
with ``ps``: a URL carrying credentials (``https://user:password@host/...``, ``https://TOKEN@host/...``,
a pre-signed ``?...&sig=...``) is refused, and named without them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.secrets import is_secret_value, redact_text

__all__ = ["ARCHIVE_SUFFIXES", "Connector", "check_python_environment", "parse_connector", "url_scheme"]

#: What Spark unpacks when shipped with ``--archives`` (``Utils.unpack``).
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")

# groupId:artifactId:version, as Spark's SparkSubmitUtils.extractMavenCoordinates requires.
_COORDINATE = re.compile(r"[A-Za-z0-9_.\-]+:[A-Za-z0-9_.\-]+:[A-Za-z0-9_.\-+]+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_REPOSITORY_SCHEMES = ("http", "https", "file")
_EXAMPLE_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
_CONNECTOR_FIX = (
    "set connector to either {jars: [absolute paths or URLs of .jar files]} or "
    f"{{packages: ['{_EXAMPLE_PACKAGE}'], repositories: ['https://repo.example.com/maven2']}}"
)


def url_scheme(location: str) -> str | None:
    """The URL scheme of ``location`` (``https``, ``hdfs``, Spark's ``local`` ...), or ``None`` for a plain path."""
    scheme, sep, _ = location.partition(":")
    return scheme.lower() if sep and _SCHEME.fullmatch(scheme) else None


def _check_location(value: str, what: str, suffixes: tuple[str, ...], fix: str) -> str:
    """An absolute local path or a URL without credentials whose last segment ends with one of ``suffixes``."""
    if not value or value != value.strip():
        raise ValueError(f"{what} {value!r} is empty or has surrounding spaces; {fix}")
    if "," in value or "#" in value:
        # spark-submit splits --jars/--archives on commas and reads '#' as an archive's alias.
        raise ValueError(f"{what} {value!r} contains ',' or '#', which spark-submit reads as separators; {fix}")
    scheme = url_scheme(value)
    if scheme is None and not value.startswith("/"):
        raise ValueError(
            f"{what} {value!r} is a relative path, which means nothing on a cluster node; "
            f"give an absolute path or a URL; {fix}"
        )
    if scheme is not None and is_secret_value(value):
        # A user, password or token before the host, or a signature in the query (a pre-signed URL).
        raise ValueError(
            f"{what} {redact_text(value)!r} carries credentials in its URL, which would show on spark-submit's "
            "command line (ps); serve it without credentials in the URL (e.g. from HDFS or object storage the "
            "job can read)"
        )
    path = urlsplit(value).path if scheme not in (None, "local", "file") else value
    if not path.lower().endswith(suffixes):
        raise ValueError(f"{what} {value!r} does not end with {' or '.join(suffixes)}; {fix}")
    return value


def check_python_environment(value: str | None) -> str | None:
    """A packed Python environment for ``--archives``: an absolute path or a URL of a ``.tar.gz``/``.zip``.

    :raises ValueError: ``"<what is wrong>; <fix>"`` naming the value.
    """
    if value is None:
        return None
    return _check_location(
        value, "python_environment", ARCHIVE_SUFFIXES,
        "build one with `eos package --out /abs/path/eos-job-env.tar.gz` and give its absolute path or URL",
    )


class Connector(BaseModel):
    """Spark's Kafka connector (``spark-sql-kafka-0-10`` and its runtime jars), as the user ships it.

    Either ``jars``: absolute local paths (shipped by spark-submit), ``local:/`` paths present on
    every node, or URLs (``https://``, ``hdfs://``, ``s3a://`` ...), passed with ``--jars``; or
    ``packages``: Maven coordinates that spark-submit resolves (``spark.jars.packages``) from
    ``repositories`` (``spark.jars.repositories``; Maven Central when empty). Without a
    connector the job takes the jars the devstack resolved on this machine (``eos jars``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Connector jars: absolute paths (globs like ``/opt/jars/*.jar`` allowed) or URLs.
    jars: list[str] = []
    #: Maven coordinates ``groupId:artifactId:version``, resolved by spark-submit.
    packages: list[str] = []
    #: Maven repositories to resolve ``packages`` from, besides Maven Central.
    repositories: list[str] = []

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        # Named here rather than by pydantic: the spec's error text would suggest top-level fields.
        if isinstance(data, Mapping):
            unknown = sorted(str(key) for key in data if key not in cls.model_fields)
            if unknown:
                close = {k: difflib.get_close_matches(k, list(cls.model_fields), n=1) for k in unknown}
                hints = ", ".join(f"{k!r}" + (f" (did you mean {c[0]!r}?)" if c else "") for k, c in close.items())
                raise ValueError(f"connector has unknown keys {hints}; {_CONNECTOR_FIX}")
        return data

    @field_validator("jars")
    @classmethod
    def _check_jars(cls, value: list[str]) -> list[str]:
        return [_check_location(jar, "jar", (".jar",), _CONNECTOR_FIX) for jar in value]

    @field_validator("packages")
    @classmethod
    def _check_packages(cls, value: list[str]) -> list[str]:
        for package in value:
            if not _COORDINATE.fullmatch(package):
                raise ValueError(
                    f"package {package!r} is not a Maven coordinate groupId:artifactId:version; "
                    f"write it like '{_EXAMPLE_PACKAGE}' (the connector of the cluster's Spark version)"
                )
        return value

    @field_validator("repositories")
    @classmethod
    def _check_repositories(cls, value: list[str]) -> list[str]:
        for repository in value:
            parts = urlsplit(repository)
            if parts.scheme not in _REPOSITORY_SCHEMES or not (parts.netloc or parts.scheme == "file"):
                raise ValueError(
                    f"repository {repository!r} is not an http(s):// or file:// URL; "
                    "give the Maven repository's base URL, e.g. 'https://repo.example.com/maven2'"
                )
            if parts.password is not None or parts.username is not None:
                raise ValueError(
                    f"repository {parts.scheme}://{parts.hostname}... carries credentials in its URL, which would "
                    "show on spark-submit's command line (ps); give them to Ivy in a settings file readable only "
                    "by the submitting user (spark.jars.ivySettings)"
                )
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> Connector:
        if bool(self.jars) == bool(self.packages):
            found = "both jars and packages" if self.jars else "neither jars nor packages"
            raise ValueError(f"connector has {found}; {_CONNECTOR_FIX}")
        if self.repositories and not self.packages:
            raise ValueError(f"connector names repositories {self.repositories} without packages; {_CONNECTOR_FIX}")
        return self


def parse_connector(value: Connector | Mapping[str, Any] | None, *, where: str) -> Connector | None:
    """Validate a connector given outside a spec (an operator argument, a CLI option).

    :param value: a :class:`Connector`, its fields as a mapping, or ``None``.
    :param where: what gave it, named in the error.
    :raises SpecError: naming every invalid value and the fix.
    """
    if value is None or isinstance(value, Connector):
        return value
    try:
        return Connector.model_validate(dict(value) if isinstance(value, Mapping) else value)
    except ValidationError as err:
        problems = [
            f"{'.'.join(map(str, item['loc'])) or 'connector'}: {str(item['msg']).removeprefix('Value error, ')}"
            for item in err.errors(include_url=False)
        ]
        listed = "\n".join(f"  - {problem}" for problem in problems)
        raise SpecError(f"{where} is invalid:\n{listed}", fix=_CONNECTOR_FIX) from None
