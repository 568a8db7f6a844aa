"""``hdfs://`` checkpoints read through WebHDFS: no native libhdfs, no JVM on the reading machine.

Spark writes the checkpoint through Hadoop's HDFS client (``hdfs://namenode:8020/...``, the
NameNode's RPC address); fsspec's ``hdfs`` is pyarrow's binding to the native libhdfs, which an
Airflow worker does not have. The NameNode also serves the same files over HTTP (WebHDFS, on
its HTTP address, 9870 by default in Hadoop 3), which fsspec's ``webhdfs`` filesystem speaks. So
the reader maps ``hdfs://<authority>/<path>`` to ``<path>`` on a ``webhdfs`` filesystem.

The WebHDFS address is the one thing the location does not say. It comes, first found wins, from

1. the storage options (the checkpoint connection's extras, see
   :class:`~airflow_provider_eos.hooks.checkpoint_storage.CheckpointStorageHook`): fsspec
   ``webhdfs``'s own ``port`` (and ``host`` when WebHDFS is not on the NameNode's host name,
   ``use_https`` for HTTPS), e.g. ``{"port": 9870}``;
2. the Hadoop client configuration the reading process has (by default ``HADOOP_CONF_DIR``, the
   one spark-submit uses; in the Spark driver, the session's Hadoop configuration):
   ``dfs.namenode.http-address`` (``dfs.namenode.https-address`` under ``dfs.http.policy``
   ``HTTPS_ONLY``), used only when its ``fs.defaultFS`` is the location's NameNode.

Otherwise :func:`webhdfs_target` raises a :class:`CheckpointError` naming both fixes. Without
Kerberos, HDFS trusts the user name a client states, as Hadoop's clients state the login user:
unless the options name an identity (``user``, ``token``, ``kerberos``, ``password``), the
caller's default user is stated, so repairs may move the files Spark wrote as that user.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from airflow_provider_eos.core.errors import CheckpointError

__all__ = ["HDFS_SCHEME", "WEBHDFS_CONF_KEYS", "WebHdfsTarget", "is_hdfs_location", "webhdfs_target"]

HDFS_SCHEME = "hdfs://"
#: The Hadoop properties :func:`webhdfs_target` reads (what a process holding a Hadoop configuration passes).
WEBHDFS_CONF_KEYS = ("fs.defaultFS", "dfs.http.policy", "dfs.namenode.http-address", "dfs.namenode.https-address")
# Options that say who the client is; with none of them the default user is stated.
_IDENTITY_OPTIONS = ("user", "token", "kerberos", "password", "proxy_to")


@dataclass(frozen=True)
class WebHdfsTarget:
    """Where an ``hdfs://`` checkpoint is read over WebHDFS.

    :param options: keyword arguments of fsspec's ``webhdfs`` filesystem (``host``, ``port``, ``user`` ...).
    :param path: the checkpoint root on HDFS (absolute, without scheme and authority).
    :param location_prefix: ``hdfs://<authority>``: prefixed to a path, it is the location Spark knows.
    """

    options: dict[str, Any] = field(repr=False)  # may hold a token or password
    path: str
    location_prefix: str


def is_hdfs_location(location: str) -> bool:
    """Whether ``location`` is an ``hdfs://`` URL (Spark's HDFS client, not a local path or fsspec URL)."""
    return location.lower().startswith(HDFS_SCHEME)


def _missing_address_fix(authority: str) -> str:
    return (
        "give the checkpoint storage the NameNode's WebHDFS address: storage option 'port' (and 'host' "
        f"when WebHDFS is not on the host of {authority!r}), e.g. a checkpoint connection of type 'generic' "
        'with extras {"port": 9870}; or set HADOOP_CONF_DIR to the cluster\'s client configuration '
        f"(fs.defaultFS hdfs://{authority} and dfs.namenode.http-address in hdfs-site.xml)"
    )


def _port(value: Any, where: str, location: str) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        port = 0
    if not 0 < port < 65536:
        raise CheckpointError(
            f"checkpoint location {location!r}: {where} gives WebHDFS port {value!r}, not a port number",
            fix="set the NameNode's HTTP port (9870 by default in Hadoop 3)",
        )
    return port


def _address_from_conf(
    conf: Mapping[str, str], authority: str, namenode_host: str, location: str
) -> tuple[str, int, bool] | None:
    """``(host, port, https)`` of WebHDFS from a client configuration describing this NameNode, else None."""
    default_fs = urlsplit(conf.get("fs.defaultFS", ""))
    if default_fs.scheme.lower() != "hdfs" or default_fs.netloc.lower() != authority.lower():
        return None  # the configuration describes another file system: its HTTP address is not this one's
    https = conf.get("dfs.http.policy", "HTTP_ONLY").upper() == "HTTPS_ONLY"
    key = "dfs.namenode.https-address" if https else "dfs.namenode.http-address"
    address = conf.get(key)
    if not address:
        return None
    host, _, port = address.rpartition(":")
    if host in ("", "0.0.0.0", "[::]"):  # a wildcard bind: reach the NameNode by its name
        host = namenode_host
    return host, _port(port, f"the Hadoop configuration's {key}", location), https


def webhdfs_target(
    location: str,
    storage_options: Mapping[str, Any] | None,
    hadoop_conf: Mapping[str, str],
    default_user: str | None,
) -> WebHdfsTarget:
    """The ``webhdfs`` filesystem options and path that serve ``hdfs://`` location ``location``.

    :param location: the checkpoint location as Spark has it (``hdfs://namenode:8020/ckpt/orders``;
        ``hdfs:///ckpt/orders`` means the configuration's ``fs.defaultFS``).
    :param storage_options: fsspec ``webhdfs`` options; ``port`` makes the address explicit.
    :param hadoop_conf: the reading process's Hadoop client properties (``fs.defaultFS``,
        ``dfs.namenode.http-address`` ...); ``{}`` when it has none.
    :param default_user: the user name stated when the options name no identity (``None``: none).
    :raises CheckpointError: the WebHDFS address is found in neither, or a port is not a number.
    """
    parts = urlsplit(location)
    authority = parts.netloc
    if not authority:
        default_fs = urlsplit(hadoop_conf.get("fs.defaultFS", ""))
        if default_fs.scheme.lower() != "hdfs" or not default_fs.netloc:
            raise CheckpointError(
                f"checkpoint location {location!r} names no NameNode and no Hadoop configuration gives "
                "fs.defaultFS",
                fix="write the NameNode into the location (hdfs://namenode:8020/path), or set HADOOP_CONF_DIR",
            )
        authority = default_fs.netloc
    namenode_host = urlsplit(f"//{authority}").hostname or authority
    options = dict(storage_options or {})
    if "port" in options:
        options["port"] = _port(options["port"], "storage option 'port'", location)
    else:
        address = _address_from_conf(hadoop_conf, authority, namenode_host, location)
        if address is None:
            raise CheckpointError(
                f"checkpoint location {location!r} is on HDFS, read over WebHDFS, but no WebHDFS address is "
                "known: the storage options give no 'port' and no Hadoop client configuration describes "
                f"hdfs://{authority}",
                fix=_missing_address_fix(authority),
            )
        host, options["port"], https = address
        options.setdefault("host", host)
        if https:
            options.setdefault("use_https", True)
    options.setdefault("host", namenode_host)
    if default_user and not any(options.get(key) for key in _IDENTITY_OPTIONS):
        options["user"] = default_user
    return WebHdfsTarget(options=options, path=parts.path.rstrip("/") or "/", location_prefix=f"hdfs://{authority}")
