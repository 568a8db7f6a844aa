"""Where a checkpoint is: a location as given to Spark's ``checkpointLocation``, opened as an fsspec filesystem.

Local paths and fsspec URLs open as they are; ``s3a://`` and ``s3n://`` (Hadoop's) as ``s3://``;
``hdfs://`` over WebHDFS (:mod:`.webhdfs` says where its address and user come from).
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import fsspec.core
from fsspec.spec import AbstractFileSystem

from airflow_provider_eos.core.checkpoint.webhdfs import is_hdfs_location, webhdfs_target
from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.hadoop_conf import ambient_hadoop_conf

__all__ = ["EOS_FOLDER", "SPILL_FOLDER", "OpenedLocation", "normalize_location", "open_location"]

#: The one folder of this package inside a Spark checkpoint (the writer record, the driver
#: writer's spill); Spark ignores folders it does not own there.
EOS_FOLDER = "eos"
#: The driver writer's spill under the checkpoint root: ``<batch>/<write>/<files>`` (``spark/output_spill.py``
#: writes it, health reads how far a batch in flight got).
SPILL_FOLDER = (EOS_FOLDER, "spill")

# Hadoop's s3a/s3n connectors and fsspec's s3fs address the same objects.
_SCHEME_ALIASES = {"s3a://": "s3://", "s3n://": "s3://"}


def normalize_location(location: str) -> str:
    """Map Hadoop-only URL schemes to their fsspec equivalent (``s3a://`` and ``s3n://`` to ``s3://``).

    :param location: a local path or URL as given to Spark's ``checkpointLocation``.
    """
    for alias, canonical in _SCHEME_ALIASES.items():
        if location.lower().startswith(alias):
            return canonical + location[len(alias) :]
    return location


@dataclass(frozen=True)
class OpenedLocation:
    """A checkpoint location opened for reading and writing.

    :param fs: the fsspec filesystem.
    :param root: the checkpoint root as ``fs`` spells it, without trailing ``/``.
    :param storage_options: what opens the same filesystem in another process with no Hadoop
        configuration (for ``hdfs://``: the resolved WebHDFS address and user).
    :param location_prefix: for ``hdfs://``: the prefix that shows an ``fs`` path as Spark knows it.
    """

    fs: AbstractFileSystem
    root: str
    storage_options: dict[str, Any]
    location_prefix: str | None = None


def open_location(location: str, storage_options: Mapping[str, Any] | None = None, *,
                  hadoop_conf: Mapping[str, str] | None = None) -> OpenedLocation:
    """Open a checkpoint location through fsspec.

    :param location: a local path, ``file:`` URL or any fsspec URL; ``s3a://``, ``s3n://`` and ``hdfs://`` too.
    :param storage_options: passed to the fsspec filesystem (credentials, endpoint, WebHDFS ``port`` ...).
    :param hadoop_conf: for ``hdfs://``: the Hadoop client properties to find the WebHDFS address
        in when the options give none; default: the site files in ``HADOOP_CONF_DIR``.
    :raises CheckpointError: if no filesystem can serve the location (for ``hdfs://``: no WebHDFS address).
    """
    url = normalize_location(location)
    try:
        if is_hdfs_location(url):
            target = webhdfs_target(url, storage_options, ambient_hadoop_conf() if hadoop_conf is None
                                    else hadoop_conf, _hadoop_user())
            return OpenedLocation(fsspec.filesystem("webhdfs", **target.options), _root(target.path),
                                  target.options, target.location_prefix)
        options = dict(storage_options or {})
        fs, root = fsspec.core.url_to_fs(url, **options)
        return OpenedLocation(fs, _root(root), options)
    except ImportError as err:
        raise CheckpointError(
            f"checkpoint location {location!r} needs an fsspec filesystem that is not installed: {err}",
            fix="install the provider's extra for this scheme: pip install \"airflow-provider-eos[s3]\" "
            "(s3fs, for s3:// and s3a://), [gcs] (gcsfs, for gs://) or [azure] (adlfs, for abfs://)",
        ) from err
    except (ValueError, TypeError) as err:
        raise CheckpointError(
            f"checkpoint location {location!r} cannot be opened: {err}",
            fix="use a local path or an fsspec URL, and check storage_options",
        ) from err


def _root(path: str) -> str:
    return path.rstrip("/") or "/"


def _hadoop_user() -> str | None:
    """The user Hadoop's own clients state without Kerberos: ``HADOOP_USER_NAME``, else the login user."""
    try:
        return os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers): state none, WebHDFS picks its default
        return None
