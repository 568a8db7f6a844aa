"""The shared plain-text table renderer."""

from __future__ import annotations

import enum

import pytest

from airflow_provider_eos.core.presentation.table import format_cell, render_table


class _Colour(enum.Enum):
    RED = "red"


def test_columns_align_and_numbers_right_align() -> None:
    text = render_table(["name", "offset"], [["in-0", 5], ["in-10", 12345]])
    assert text.splitlines() == [
        "name   offset",
        "-----  ------",
        "in-0        5",
        "in-10   12345",
    ]


def test_cells_render_none_bool_enum_and_flatten_newlines() -> None:
    assert format_cell(None) == "-"
    assert format_cell(True) == "yes"
    assert format_cell(False) == "no"
    assert format_cell(_Colour.RED) == "red"
    assert format_cell("two\nlines") == "two lines"
    text = render_table(["a", "b", "c"], [[None, True, "x\ny"]])
    assert text.splitlines()[2] == "-  yes  x y"


def test_booleans_are_left_aligned_like_words() -> None:
    text = render_table(["changed"], [[True], [False]])
    assert text.splitlines()[2:] == ["yes", "no"]


def test_no_trailing_spaces() -> None:
    text = render_table(["a", "long header"], [["value", None]])
    assert all(line == line.rstrip() for line in text.splitlines())


def test_empty_table_says_so() -> None:
    assert render_table(["a", "b"], []).splitlines() == ["a  b", "-  -", "(no rows)"]


def test_row_of_wrong_length_is_refused_naming_the_row() -> None:
    with pytest.raises(ValueError, match=r"row 1 has 1 cells but the table has 2 columns \(a, b\)"):
        render_table(["a", "b"], [[1, 2], [3]])
