"""The one reader of Spark Structured Streaming checkpoints, for local paths and fsspec URLs.

- :mod:`.formats`: what Spark writes into ``metadata``, ``offsets/<N>`` (v1 and v2),
  ``commits/<N>`` and ``sources/<i>/0``, and the parsers of each;
- :mod:`.location`: where a checkpoint is, opened as an fsspec filesystem (``s3a://`` as
  ``s3://``, ``hdfs://`` over WebHDFS), and :func:`normalize_location`;
- :mod:`.reader`: :class:`CheckpointReader`, which addresses, lists and reads the files;
- :mod:`.snapshot`: :class:`CheckpointSnapshot`, a query's progress read in one pass.
"""

from __future__ import annotations

from airflow_provider_eos.core.checkpoint.formats import (
    MAX_COMMITS_VERSION,
    MAX_INITIAL_OFFSETS_VERSION,
    MAX_OFFSETS_VERSION,
)
from airflow_provider_eos.core.checkpoint.location import EOS_FOLDER, normalize_location
from airflow_provider_eos.core.checkpoint.reader import CheckpointReader
from airflow_provider_eos.core.checkpoint.snapshot import CheckpointSnapshot

__all__ = [
    "EOS_FOLDER",
    "MAX_COMMITS_VERSION",
    "MAX_INITIAL_OFFSETS_VERSION",
    "MAX_OFFSETS_VERSION",
    "CheckpointReader",
    "CheckpointSnapshot",
    "normalize_location",
]
