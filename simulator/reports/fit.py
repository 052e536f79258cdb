"""Fit a rich table to a terminal width without ever cutting a number.

Rich shrinks every column evenly (eliding digits with "…") once a table's no-wrap columns alone
are wider than the console. Here number columns (right-justified) never wrap and fold rather than
elide; text columns wrap; when the narrowest layout is still too wide, unit headers break onto two
lines, the table drops its outer frame, and the caller's optional columns go, least useful first.
"""

from __future__ import annotations

import io
from typing import Sequence

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

TOKEN_MAX = 32
"""A text column whose every cell is one word of at most this many characters (``nvls/Simple/24ch/flow``,
a part name) never wraps: a token is never cut in two (issue 27, item 1); text with spaces wraps at
them."""

_MEASURE = Console(width=10_000, color_system=None)


def _header(column: Column) -> str:
    header = column.header
    return header.plain if isinstance(header, Text) else str(header)


def _cell_widths(column: Column) -> list[Measurement]:
    options = _MEASURE.options
    return [Measurement.get(_MEASURE, options, cell) for cell in [column.header, *column.cells]]


def _token(cell: object) -> bool:
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return 0 < len(text) <= TOKEN_MAX and not any(ch.isspace() for ch in text)


def _two_lines(text: str) -> str:
    """``text`` broken at the space or underscore nearest its middle (unchanged without one)."""
    cuts = [i for i, ch in enumerate(text) if ch in " _"]
    if not cuts:
        return text
    i = min(cuts, key=lambda c: abs(c - len(text) / 2))
    return text[:i] + "\n" + text[i + 1:]


def narrowest(table: Table) -> int:
    """Width of the table when text columns wrap down to their longest word (at most
    :data:`TOKEN_MAX`) and numbers stay whole."""
    pad = table.padding[1] + table.padding[3]
    total = 0
    for column in table.columns:
        widths = _cell_widths(column)
        if column.no_wrap:
            total += max(m.maximum for m in widths)
        else:
            total += min(max(m.minimum for m in widths), TOKEN_MAX)  # its longest word stays whole
        total += pad
    edges = ((2 if table.show_edge else 0) + len(table.columns) - 1) if table.box else 0
    # rich's own minimum, which also counts what the sum above does not (min_width, collapsed padding)
    return max(total + edges, Measurement.get(_MEASURE, _MEASURE.options, table).minimum)


def _fits(table: Table, width: int) -> bool:
    """The table as rich lays it out at ``width`` is no wider (rich's layout can pass its own
    measurement by a column when words may not fold)."""
    if narrowest(table) > width:
        return False
    out = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    out.print(table, crop=False)
    return max((len(line) for line in out.file.getvalue().split("\n")), default=0) <= width


def fit(table: Table, width: int, optional: Sequence[str] = ()) -> Table:
    """Make ``table`` fit ``width`` columns without eliding a number (changes and returns it).

    ``optional`` names columns (their headers) that may be dropped, in the order given, when the
    table cannot fit otherwise (by the header as written, before it is broken over two lines)."""
    written = {id(c): _header(c).replace("\n", " ") for c in table.columns}
    for column in table.columns:
        column.overflow = "fold"
        if column.justify == "right":
            column.no_wrap = True
        elif column.cells and all(_token(cell) for cell in column.cells):
            column.no_wrap = True
        else:  # wraps at spaces, never narrower than its longest word (rich honours min_width)
            column.min_width = min(max(m.minimum for m in _cell_widths(column)), TOKEN_MAX)
    if _fits(table, width):
        return table
    for column in table.columns:  # "time (us)" -> "time" over "(us)"
        if column.no_wrap and " (" in _header(column):
            column.header = _header(column).replace(" (", "\n(", 1)
    if not _fits(table, width):  # "passive_copper" -> "passive" over "copper": two lines at most
        for column in table.columns:
            if column.no_wrap:
                column.header = "\n".join(_two_lines(line) for line in _header(column).split("\n"))
    if not _fits(table, width):
        table.box = box.SIMPLE_HEAD
        table.show_edge = False
    empty = [c for c in table.columns if c.cells and all(str(cell) == "-" for cell in c.cells)]
    for name in [*(written[id(c)] for c in empty), *optional]:
        if _fits(table, width):
            break
        table.columns[:] = [c for c in table.columns if written[id(c)] != name]
    if not _fits(table, width):  # last resort: numbers fold onto a second line, digits all kept
        for column in table.columns:
            column.no_wrap = False
    return table
