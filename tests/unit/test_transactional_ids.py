"""The transactional-id scheme: what a prefix owns must be exact, recovery aborts by it."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.errors import EosError, SpecError
from airflow_provider_eos.core.transactional_ids import (
    MAX_PREFIX_LENGTH,
    MAX_TRANSACTIONAL_ID_LENGTH,
    MAX_WRITER_INDEX,
    TransactionalIdError,
    belongs_to_prefix,
    transactional_id,
    validate_prefix,
    writer_index,
)


def test_transactional_id_is_prefix_dash_index() -> None:
    assert transactional_id("orders-eos") == "orders-eos-0"
    assert transactional_id("orders-eos", 7) == "orders-eos-7"
    assert transactional_id("a.b_c", 12) == "a.b_c-12"


@pytest.mark.parametrize("index", [0, 1, 9, 10, 123, MAX_WRITER_INDEX])
def test_roundtrip_through_writer_index(index: int) -> None:
    txn_id = transactional_id("pfx", index)
    assert belongs_to_prefix("pfx", txn_id)
    assert writer_index("pfx", txn_id) == index


@pytest.mark.parametrize(
    "txn_id",
    [
        "pfx-0",
        "pfx-1",
        "pfx-42",
    ],
)
def test_belongs(txn_id: str) -> None:
    assert belongs_to_prefix("pfx", txn_id)


@pytest.mark.parametrize(
    ("txn_id", "why"),
    [
        ("pfx-extra-0", "another prefix that starts with ours"),
        ("pfx2-0", "another prefix that starts with ours, no dash"),
        ("pfx", "the bare prefix"),
        ("pfx-", "no index"),
        ("pfx-01", "non-canonical index; this module never builds it"),
        ("pfx-1a", "index not decimal"),
        ("pfx--1", "negative index"),
        ("pfx-\u0661", "non-ASCII digit (Arabic-Indic one)"),
        ("xpfx-0", "prefix not at the start"),
        ("PFX-0", "case differs"),
        ("pfx-0 ", "trailing space"),
        ("", "empty"),
    ],
)
def test_does_not_belong(txn_id: str, why: str) -> None:
    assert not belongs_to_prefix("pfx", txn_id), why


def test_prefix_ending_in_digits_does_not_claim_longer_prefix_ids() -> None:
    # Prefix "pfx" owns "pfx-1"; prefix "pfx-1" owns "pfx-1-0": the two sets stay disjoint.
    assert belongs_to_prefix("pfx", "pfx-1")
    assert not belongs_to_prefix("pfx", "pfx-1-0")
    assert belongs_to_prefix("pfx-1", "pfx-1-0")
    assert not belongs_to_prefix("pfx-1", "pfx-1")


def test_prefix_with_regex_metacharacters_is_literal() -> None:
    assert belongs_to_prefix("a.b", "a.b-0")
    assert not belongs_to_prefix("a.b", "axb-0")


def test_writer_index_of_foreign_id_names_id_and_prefix() -> None:
    with pytest.raises(TransactionalIdError) as info:
        writer_index("pfx", "other-app-3")
    assert isinstance(info.value, EosError)
    assert "'other-app-3'" in str(info.value)
    assert "'pfx'" in str(info.value)
    assert info.value.fix


@pytest.mark.parametrize("prefix", ["p", "orders-eos", "a.b_c-D9", "x" * MAX_PREFIX_LENGTH])
def test_valid_prefixes(prefix: str) -> None:
    assert validate_prefix(prefix) == prefix


@pytest.mark.parametrize(
    ("prefix", "named"),
    [
        ("", "''"),
        ("has space", "'has space'"),
        ("a/b", "'/'"),
        ("emoji\u2603", "'\u2603'"),
        ("a:b", "':'"),
    ],
)
def test_invalid_prefix_names_value(prefix: str, named: str) -> None:
    with pytest.raises(SpecError) as info:
        validate_prefix(prefix)
    assert named in str(info.value)
    assert info.value.fix


def test_too_long_prefix_names_length_and_limit() -> None:
    with pytest.raises(SpecError) as info:
        validate_prefix("x" * (MAX_PREFIX_LENGTH + 1))
    assert str(MAX_PREFIX_LENGTH + 1) in str(info.value)
    assert str(MAX_PREFIX_LENGTH) in info.value.fix


def test_longest_id_fits_limit() -> None:
    assert len(transactional_id("x" * MAX_PREFIX_LENGTH, MAX_WRITER_INDEX)) <= MAX_TRANSACTIONAL_ID_LENGTH


@pytest.mark.parametrize("index", [-1, MAX_WRITER_INDEX + 1])
def test_out_of_range_writer_index(index: int) -> None:
    with pytest.raises(TransactionalIdError, match=str(index)):
        transactional_id("pfx", index)


@pytest.mark.parametrize("index", [True, 1.0, "1"])
def test_non_int_writer_index(index: object) -> None:
    with pytest.raises(TransactionalIdError, match="not an integer"):
        transactional_id("pfx", index)  # type: ignore[arg-type]


def test_transactional_id_validates_prefix() -> None:
    with pytest.raises(SpecError, match="'bad prefix'"):
        transactional_id("bad prefix")


def test_partition_writer_ids_belong_to_their_prefix_only() -> None:
    from airflow_provider_eos.core.transactional_ids import (
        owned_transactional_id,
        partition_of_writer,
        partition_transactional_id,
    )

    txn_id = partition_transactional_id("pfx", 2, 15)
    assert txn_id == "pfx-2_15"
    assert belongs_to_prefix("pfx", txn_id) and partition_of_writer("pfx", txn_id) == (2, 15)
    assert owned_transactional_id("pfx", txn_id) == txn_id
    assert owned_transactional_id("pfx", "pfx-0") == "pfx-0"
    assert partition_of_writer("pfx", "pfx-0") is None
    for foreign in ("pfx-2_", "pfx-_1", "pfx-01_1", "pfx-1_01", "pfx-1_2_3", "pfx2-1_2", "pfx-1-1_2"):
        assert not belongs_to_prefix("pfx", foreign), foreign
    with pytest.raises(TransactionalIdError):
        writer_index("pfx", txn_id)
    with pytest.raises(TransactionalIdError):
        owned_transactional_id("pfx", "other-1_2")
    with pytest.raises(TransactionalIdError):
        partition_transactional_id("pfx", 0, MAX_WRITER_INDEX + 1)
