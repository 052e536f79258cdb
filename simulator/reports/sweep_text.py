"""The sweep table: one row per result with the axis values first, then what was measured."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from rich.table import Table

from simulator.reports.numbers import number

SKIP = frozenset({"error"})
"""Columns shown below the table instead (failed points are listed one per line)."""


KEEP = ("time_us", "busbw_GBps")
"""Measured columns a narrow terminal keeps (the rest go, the last first, before a number is cut)."""


UNITS = {"GBps": "GB/s", "us": "us", "ns": "ns", "s": "s", "pct": "%", "bytes": "B", "B": "B", "m": "m", "J": "J",
         "W": "W", "pJ_per_byte": "pJ/B"}
"""Row-key suffix -> the unit its header shows (``busbw_GBps`` -> ``busbw (GB/s)``)."""


def header(name: str) -> str:
    """A row key as a column header: words, and its unit in parentheses (``closed_form_GBps`` ->
    ``closed form (GB/s)``); a key without a known unit suffix only loses its underscores."""
    for suffix in sorted(UNITS, key=len, reverse=True):
        if name.endswith("_" + suffix):
            return f"{name[: -len(suffix) - 1].replace('_', ' ')} ({UNITS[suffix]})"
    return name.replace("_", " ")


def _cell(value: object) -> str:
    if isinstance(value, str) and value.endswith((".yaml", ".yml")):
        return Path(value).stem  # a topology or scenario axis: its name, not its relative path
    return number(value) if not isinstance(value, bool) else str(value)


def optional_columns(table: Table, axes: Sequence[str]) -> list[str]:
    """The columns ``fit`` may drop, least useful first: measured ones other than ``KEEP``, the
    last first."""
    names = [str(c.header) for c in table.columns]
    fixed = {header(n) for n in (*axes, *KEEP)}
    return [n for n in reversed(names) if n not in fixed]


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
        table.add_column(header(name), justify="left" if name in axes else "right", overflow="fold")
    for row in rows:
        if "error" in row:
            cells = [_cell(row.get(c)) for c in axes] + ["failed"] + [""] * (len(columns) - len(axes) - 1)
        else:
            cells = [_cell(row.get(c)) for c in columns]
        table.add_row(*cells)
    return table
