"""How a number reads in a table: one rule for every report (issue 27, item 3).

Integers with thousands separators; floats with four significant digits and never in scientific
notation (at 10,000 and above as whole numbers with separators); the round-off residue of a
difference of two times (below ``RESIDUE``) as 0; booleans as yes/no; lists joined with commas."""

from __future__ import annotations

RESIDUE = 5e-7
"""A float this close to 0 is the residue of subtracting two equal sums (a simulated time in us
is known to ~1e-9 of itself); it reads 0."""


def number(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "-"
        if abs(value) < RESIDUE:
            return "0"
        if abs(value) >= 1e4:
            return f"{value:,.0f}"
        return f"{value:,.4g}" if abs(value) >= 1e-3 else f"{value:.2e}"
    if isinstance(value, (list, tuple)):
        return ", ".join(number(v) for v in value)
    return str(value)
