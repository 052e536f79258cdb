"""Fit a rich table to a terminal width without ever cutting a number.

Rich shrinks every column evenly (eliding digits with "…") once a table's no-wrap columns alone
are wider than the console. Here number columns (right-justified) never wrap and fold rather than
elide; text columns wrap; when the narrowest layout is still too wide, unit headers break onto two
lines, the table drops its outer frame, and the caller's optional columns go, least useful first.
"""

from __future__ import annotations

from typing import Sequence

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

TEXT_MIN = 12
"""Narrowest width (characters) a wrapping text column may get before columns are dropped."""

_MEASURE = Console(width=10_000, color_system=None)


def _header(column: Column) -> str:
    header = column.header
    return header.plain if isinstance(header, Text) else str(header)


def _cell_widths(column: Column) -> list[Measurement]:
    options = _MEASURE.options
    return [Measurement.get(_MEASURE, options, cell) for cell in [column.header, *column.cells]]


def narrowest(table: Table) -> int:
    """Width of the table when text columns wrap down to :data:`TEXT_MIN` and numbers stay whole."""
    pad = table.padding[1] + table.padding[3]
    total = 0
    for column in table.columns:
        widths = _cell_widths(column)
        if column.no_wrap:
            total += max(m.maximum for m in widths)
        else:
            total += min(max(m.minimum for m in widths), TEXT_MIN)
        total += pad
    edges = ((2 if table.show_edge else 0) + len(table.columns) - 1) if table.box else 0
    return total + edges


def fit(table: Table, width: int, optional: Sequence[str] = ()) -> Table:
    """Make ``table`` fit ``width`` columns without eliding a number (changes and returns it).

    ``optional`` names columns (their headers) that may be dropped, in the order given, when the
    table cannot fit otherwise."""
    for column in table.columns:
        column.overflow = "fold"
        if column.justify == "right":
            column.no_wrap = True
    if narrowest(table) <= width:
        return table
    for column in table.columns:  # "time (us)" -> "time" over "(us)"
        if column.no_wrap and " (" in _header(column):
            column.header = _header(column).replace(" (", "\n(", 1)
    if narrowest(table) > width:  # "passive_copper" -> "passive" over "copper"
        for column in table.columns:
            if column.no_wrap:
                column.header = _header(column).replace(" ", "\n").replace("_", "\n")
    if narrowest(table) > width:
        table.box = box.SIMPLE_HEAD
        table.show_edge = False
    empty = [c for c in table.columns if c.cells and all(str(cell) == "-" for cell in c.cells)]
    for name in [*(_header(c).replace("\n", " ") for c in empty), *optional]:
        if narrowest(table) <= width:
            break
        table.columns[:] = [c for c in table.columns if _header(c).replace("\n", " ") != name]
    if narrowest(table) > width:  # last resort: numbers fold onto a second line, digits all kept
        for column in table.columns:
            column.no_wrap = False
    return table
