"""Batch markers: the metadata string every transactional offset commit carries."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from airflow_provider_eos.core.errors import MarkerError
from airflow_provider_eos.core.markers import (
    MARKER_VERSION_PREFIX,
    BatchMarker,
    CommittedOffset,
    is_marker,
)

QUERY = "5f0c2b7e-9a41-4c3e-8d2a-1b6f3e9c7a10"


def test_encode_format() -> None:
    assert MARKER_VERSION_PREFIX == "eos1"
    assert BatchMarker(QUERY, 7).encode() == f"eos1:{QUERY}:7"
    assert str(BatchMarker(QUERY, 0)) == f"eos1:{QUERY}:0"


@pytest.mark.parametrize("batch_id", [0, 1, 99, 2**40])
def test_roundtrip(batch_id: int) -> None:
    marker = BatchMarker(str(uuid.uuid4()), batch_id)
    assert BatchMarker.decode(marker.encode()) == marker


def test_marker_is_small_enough_for_broker_default_metadata_limit() -> None:
    assert len(BatchMarker(QUERY, 2**63 - 1).encode()) < 100


def test_frozen_and_hashable() -> None:
    marker = BatchMarker(QUERY, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        marker.batch_id = 2  # type: ignore[misc]
    assert {marker, BatchMarker(QUERY, 1)} == {marker}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage",
        "eos1",
        f"eos1:{QUERY}",
        f"eos1:{QUERY}:",
        f"eos1:{QUERY}:x",
        f"eos1:{QUERY}:-1",
        f"eos1:{QUERY}:01",
        f"eos1:{QUERY}:1:extra",
        "eos1::3",
        f"eos1:{QUERY} :3",
        f"EOS1:{QUERY}:3",
        '{"flink": "metadata"}',
    ],
)
def test_decode_garbage_names_text(text: str) -> None:
    with pytest.raises(MarkerError) as info:
        BatchMarker.decode(text)
    assert repr(text) in str(info.value)
    assert info.value.fix


def test_decode_future_version_says_so() -> None:
    with pytest.raises(MarkerError, match="version tag 'eos2'"):
        BatchMarker.decode(f"eos2:{QUERY}:3")


def test_decode_non_string() -> None:
    with pytest.raises(MarkerError, match="None"):
        BatchMarker.decode(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("query_id", ["", "has:colon", "has space", None])
def test_invalid_query_id_is_refused_on_construction(query_id: object) -> None:
    with pytest.raises(MarkerError) as info:
        BatchMarker(query_id, 1)  # type: ignore[arg-type]
    assert repr(query_id) in str(info.value)


@pytest.mark.parametrize("batch_id", [-1, True, 1.0, "1"])
def test_invalid_batch_id_is_refused_on_construction(batch_id: object) -> None:
    with pytest.raises(MarkerError) as info:
        BatchMarker(QUERY, batch_id)  # type: ignore[arg-type]
    assert repr(batch_id) in str(info.value)


def test_is_marker() -> None:
    assert is_marker(f"eos1:{QUERY}:3")
    assert not is_marker(None)
    assert not is_marker("")
    assert not is_marker("some other app's metadata")


def test_committed_offset_marker() -> None:
    assert CommittedOffset(10, "").marker is None
    assert CommittedOffset(10).marker is None
    assert CommittedOffset(10, f"eos1:{QUERY}:4").marker == BatchMarker(QUERY, 4)


def test_committed_offset_garbage_metadata_raises_naming_it() -> None:
    with pytest.raises(MarkerError, match="'written by someone else'"):
        _ = CommittedOffset(10, "written by someone else").marker


def test_committed_offset_describe() -> None:
    assert CommittedOffset(5).describe() == "offset 5 (no marker)"
    assert CommittedOffset(5, f"eos1:{QUERY}:2").describe() == f"offset 5 (marker eos1:{QUERY}:2)"
    assert "'junk'" in CommittedOffset(5, "junk").describe()
