"""The checkpoints the repair tests start from."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from tests.unit.repair.builders import write_checkpoint


@pytest.fixture
def stateful(tmp_path: Path) -> str:
    """Batches 0..7 planned, 0..6 committed, HDFS and RocksDB state versions 1..8."""
    location = str(tmp_path / "ckpt")
    write_checkpoint(
        location,
        offsets=range(8),
        commits=range(7),
        hdfs_state_versions=range(1, 9),
        rocksdb_state_versions=range(1, 9),
        operator_metadata_batches=range(8),
    )
    return location


@pytest.fixture
def committed5(tmp_path: Path) -> CheckpointReader:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(7), commits=range(6))
    return CheckpointReader(location)
