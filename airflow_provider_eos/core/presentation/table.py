"""The plain-text table of :mod:`.text`, the tables of every report in a terminal or task log.

The reports end up in Airflow task logs and terminals, where a dependency-free, fixed-width
table is the most readable format and survives copy-paste into tickets.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

MISSING = "-"
"""How a ``None`` cell is shown: a dash reads as "nothing here" in every report."""

_SEPARATOR = "  "


def format_cell(value: object) -> str:
    """Render one cell value as a single line of text.

    :param value: any value; ``None`` becomes ``-``, enums show their value, booleans
        ``yes``/``no``, and line breaks are flattened so a cell never breaks the grid.
    :return: the text to put in the cell.
    """
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, enum.Enum):
        value = value.value
    return " ".join(str(value).splitlines())


def _is_numeric(value: object) -> bool:
    # bool is an int subclass, but yes/no reads better left-aligned like other words.
    return isinstance(value, int | float) and not isinstance(value, bool)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Render rows as an aligned plain-text table with a header and an underline.

    Numbers are right-aligned so offsets and batch ids line up by magnitude; everything
    else is left-aligned. Trailing spaces are stripped from every line.

    :param headers: the column titles.
    :param rows: the rows; each must have exactly ``len(headers)`` cells.
    :return: the table, lines joined by ``\\n``, without a trailing newline. A table without
        rows shows the header, the underline and ``(no rows)``.
    :raises ValueError: if a row's length differs from the number of headers.
    """
    width = len(headers)
    cells: list[list[str]] = []
    numeric: list[list[bool]] = []
    for index, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(
                f"row {index} has {len(row)} cells but the table has {width} columns "
                f"({', '.join(headers)}): {list(row)!r}"
            )
        cells.append([format_cell(value) for value in row])
        numeric.append([_is_numeric(value) for value in row])

    header_cells = [format_cell(header) for header in headers]
    widths = [len(header) for header in header_cells]
    for row_cells in cells:
        for column, text in enumerate(row_cells):
            widths[column] = max(widths[column], len(text))

    lines = [
        _SEPARATOR.join(text.ljust(widths[column]) for column, text in enumerate(header_cells)).rstrip(),
        _SEPARATOR.join("-" * column_width for column_width in widths),
    ]
    for row_cells, row_numeric in zip(cells, numeric, strict=True):
        lines.append(
            _SEPARATOR.join(
                text.rjust(widths[column]) if row_numeric[column] else text.ljust(widths[column])
                for column, text in enumerate(row_cells)
            ).rstrip()
        )
    if not cells:
        lines.append("(no rows)")
    return "\n".join(lines)
