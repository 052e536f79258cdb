"""The sweep table: one row per result with the axis values first, then what was measured."""

from __future__ import annotations

from typing import Sequence

from rich.table import Table

from simulator.reports.numbers import number

SKIP = frozenset({"error"})
"""Columns shown below the table instead (failed points are listed one per line)."""


def _cell(value: object) -> str:
    return number(value) if not isinstance(value, bool) else str(value)


def sweep_table(title: str, axes: Sequence[str], rows: Sequence[dict], outcomes: Sequence) -> Table:
    """A rich table: axis columns, then every measured column in first-seen order; the title counts
    finished and cached points. Failed points show ``failed`` in the first measured column."""
    columns: list[str] = list(axes)
    for row in rows:
        columns.extend(k for k in row if k not in columns and k not in SKIP)
    done = sum(1 for o in outcomes if o.error is None)
    cached = sum(1 for o in outcomes if o.cached)
    table = Table(title=f"{title}: {done} of {len(outcomes)} points done ({cached} from cache)")
    for name in columns:
        table.add_column(name, justify="left" if name in axes else "right", overflow="fold")
    for row in rows:
        if "error" in row:
            cells = [_cell(row.get(c)) for c in axes] + ["failed"] + [""] * (len(columns) - len(axes) - 1)
        else:
            cells = [_cell(row.get(c)) for c in columns]
        table.add_row(*cells)
    return table
