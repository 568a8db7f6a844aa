"""Checkpoint storage credentials from an Airflow connection, as fsspec storage options.

The checkpoint reader (``core.checkpoint.CheckpointReader``) opens local paths and fsspec URLs;
this hook only decides the storage options. Without a connection it passes none, so the
filesystem uses the ambient credentials (instance role, environment, ``~/.aws``, workload
identity ...). With one, the options come from the connection:

``aws`` (the amazon provider's type)
    login/password -> s3fs ``key``/``secret``; extras ``aws_session_token`` -> ``token``,
    ``region_name``, ``endpoint_url`` (or ``service_config.s3.endpoint_url``) and ``verify`` ->
    ``client_kwargs``, ``botocore_config`` -> ``config_kwargs``, ``profile_name`` -> ``profile``.
``google_cloud_platform`` (the google provider's type)
    extras ``keyfile_dict`` or ``key_path`` -> gcsfs ``token``, ``project`` -> ``project``.
``webhdfs`` (the apache-hdfs provider's type), for ``hdfs://`` checkpoints
    host/port -> the NameNode's WebHDFS address (``host``, ``port``), login -> ``user``, password ->
    ``password`` (basic auth), extras ``use_ssl`` -> ``use_https``, ``verify`` -> ``session_verify``.
any other type (e.g. ``generic``)
    the extras are the storage options as they are, e.g.
    ``{"key": "...", "secret": "...", "client_kwargs": {"endpoint_url": "http://minio:9000"}}``, or
    for ``hdfs://`` fsspec ``webhdfs``'s own ``{"port": 9870, "user": "etl"}``.

An ``hdfs://`` checkpoint is read over WebHDFS; without a connection its address comes from the
worker's ``HADOOP_CONF_DIR`` (``core.checkpoint.webhdfs`` owns that rule).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
from airflow.providers.common.compat.sdk import AirflowException
from airflow.sdk import BaseHook
from airflow.sdk.log import mask_secret

from airflow_provider_eos.core.checkpoint import CheckpointReader, normalize_location
from airflow_provider_eos.core.secrets import is_secret_setting

__all__ = ["CheckpointStorageHook"]

_AWS_SCHEMES = ("s3://",)
_GCP_SCHEMES = ("gs://", "gcs://")
_HDFS_SCHEMES = ("hdfs://",)
# Extras of the aws connection that need an STS round trip or a credentials chain s3fs
# cannot be handed as options; ignoring them would silently read with other credentials.
_AWS_UNSUPPORTED = ("role_arn", "assume_role_method", "assume_role_kwargs")


def _mask_storage_secrets(options: Mapping[str, Any]) -> None:
    for key, value in options.items():
        if isinstance(value, Mapping):
            # Name-based inside nested dicts (a keyfile's "private_key", client_kwargs ...).
            mask_secret(dict(value))
        elif isinstance(value, str) and is_secret_setting(key, value):
            mask_secret(value)


class CheckpointStorageHook(BaseHook):
    """Builds the checkpoint reader with storage options from an optional Airflow connection.

    :param checkpoint_conn_id: the Airflow connection holding the storage credentials;
        ``None`` uses the ambient credentials of the worker.
    """

    conn_name_attr = "checkpoint_conn_id"
    hook_name = "Spark checkpoint storage (exactly-once pipelines)"

    def __init__(self, checkpoint_conn_id: str | None = None) -> None:
        super().__init__()
        self.checkpoint_conn_id = checkpoint_conn_id

    def get_storage_options(self, location: str) -> dict[str, Any]:
        """Return the fsspec storage options for ``location``; secrets are registered with the masker.

        :param location: the checkpoint location (``s3a://`` is treated as ``s3://``).
        :raises AirflowException: if the connection type does not fit the location's scheme, or
            asks for something the options cannot express (an AWS role to assume).
        """
        if self.checkpoint_conn_id is None:
            return {}
        conn = self.get_connection(self.checkpoint_conn_id)
        url = normalize_location(location).lower()
        extra = conn.extra_dejson
        if conn.conn_type == "aws":
            options = self._aws_options(conn.login, conn.password, extra, url)
        elif conn.conn_type == "google_cloud_platform":
            options = self._gcp_options(extra, url)
        elif conn.conn_type == "webhdfs":
            options = self._webhdfs_options(conn.host, conn.port, conn.login, conn.password, extra, url)
        else:
            options = dict(extra)
        _mask_storage_secrets(options)
        return options

    def get_reader(self, location: str) -> CheckpointReader:
        """Return a checkpoint reader for ``location`` with this hook's storage options.

        :param location: the checkpoint location (a local path or fsspec URL).
        """
        return CheckpointReader(location, storage_options=self.get_storage_options(location))

    def _require_scheme(self, url: str, schemes: tuple[str, ...], conn_type: str) -> None:
        if not url.startswith(schemes):
            raise AirflowException(
                f"checkpoint connection {self.checkpoint_conn_id!r} is of type {conn_type!r}, which "
                f"serves {', '.join(schemes)} locations, but the checkpoint location is {url!r}; use a "
                "connection for the checkpoint's storage, or none for ambient credentials"
            )

    def _aws_options(  # noqa: C901  # one if per optional field of Airflow's AWS connection
        self, login: str | None, password: str | None, extra: Mapping[str, Any], url: str
    ) -> dict:
        self._require_scheme(url, _AWS_SCHEMES, "aws")
        unsupported = [key for key in _AWS_UNSUPPORTED if extra.get(key)]
        if unsupported:
            raise AirflowException(
                f"checkpoint connection {self.checkpoint_conn_id!r} sets {', '.join(unsupported)}; assuming "
                "a role is not supported for checkpoint access. Give the worker the role (and pass no "
                "connection), or put static keys in the connection's login and password"
            )
        options: dict[str, Any] = {}
        if login:
            options["key"] = login
        if password:
            options["secret"] = password
        if extra.get("aws_session_token"):
            options["token"] = extra["aws_session_token"]
        if extra.get("profile_name"):
            options["profile"] = extra["profile_name"]
        client_kwargs: dict[str, Any] = {}
        service_config = extra.get("service_config")
        s3_config = service_config.get("s3", {}) if isinstance(service_config, Mapping) else {}
        endpoint = s3_config.get("endpoint_url") or extra.get("endpoint_url")
        if endpoint:
            client_kwargs["endpoint_url"] = endpoint
        if extra.get("region_name"):
            client_kwargs["region_name"] = extra["region_name"]
        if "verify" in extra:
            client_kwargs["verify"] = extra["verify"]
        if client_kwargs:
            options["client_kwargs"] = client_kwargs
        if isinstance(extra.get("botocore_config"), Mapping):
            options["config_kwargs"] = dict(extra["botocore_config"])
        return options

    def _webhdfs_options(
        self, host: str | None, port: int | None, login: str | None, password: str | None,
        extra: Mapping[str, Any], url: str,
    ) -> dict:
        self._require_scheme(url, _HDFS_SCHEMES, "webhdfs")
        options: dict[str, Any] = {}
        for key, value in (("host", host), ("port", port), ("user", login), ("password", password)):
            if value:
                options[key] = value
        if "use_ssl" in extra:
            options["use_https"] = bool(extra["use_ssl"])
        if "verify" in extra:
            options["session_verify"] = extra["verify"]
        return options

    def _gcp_options(self, extra: Mapping[str, Any], url: str) -> dict:
        self._require_scheme(url, _GCP_SCHEMES, "google_cloud_platform")
        options: dict[str, Any] = {}
        keyfile = extra.get("keyfile_dict")
        if keyfile:
            try:
                options["token"] = json.loads(keyfile) if isinstance(keyfile, str) else dict(keyfile)
            except (json.JSONDecodeError, TypeError, ValueError):
                # Not chained: the decoder's message may quote part of the key.
                raise AirflowException(
                    f"checkpoint connection {self.checkpoint_conn_id!r}: extra 'keyfile_dict' is not a "
                    "service account key (JSON object)"
                ) from None
        elif extra.get("key_path"):
            options["token"] = extra["key_path"]
        if extra.get("project"):
            options["project"] = extra["project"]
        return options
