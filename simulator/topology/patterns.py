"""Connection patterns: which device pairs a link spec joins, and how many parallel links each.

Each pattern is a small function ``(a, b) -> [(i, j), ...]`` on the two selected device lists
(indices into them), registered by its YAML name. Errors are plain ``ValueError`` messages; the
builder locates them in the file.
"""

from __future__ import annotations

import re
from fnmatch import translate
from typing import Callable, Sequence

Pairing = Callable[[int, int], list[tuple[int, int]]]


def _all(n_a: int, n_b: int) -> list[tuple[int, int]]:
    """Every ``from`` device with every ``to`` device."""
    return [(i, j) for i in range(n_a) for j in range(n_b)]


def _one_to_one(n_a: int, n_b: int) -> list[tuple[int, int]]:
    """i-th with i-th; both selections must be the same size."""
    if n_a != n_b:
        raise ValueError(f"one_to_one needs equal selections, got {n_a} 'from' and {n_b} 'to' devices")
    return [(i, i) for i in range(n_a)]


def _blocks(n_a: int, n_b: int) -> list[tuple[int, int]]:
    """Contiguous equal blocks of the longer selection onto each device of the shorter one."""
    if max(n_a, n_b) % min(n_a, n_b):
        raise ValueError(f"blocks needs one selection to be a multiple of the other, got {n_a} and {n_b}")
    if n_a >= n_b:
        per = n_a // n_b
        return [(i, i // per) for i in range(n_a)]
    per = n_b // n_a
    return [(j // per, j) for j in range(n_b)]


def _round_robin(n_a: int, n_b: int) -> list[tuple[int, int]]:
    """i-th ``from`` device with ``to[i mod len(to)]`` (rails: NIC i of every server to leaf i)."""
    return [(i, i % n_b) for i in range(n_a)]


PAIRINGS: dict[str, Pairing] = {
    "all": _all,
    "one_to_one": _one_to_one,
    "blocks": _blocks,
    "round_robin": _round_robin,
}
"""YAML pattern name -> pairing function (the schema's ``Pattern`` literal lists the same names)."""


def select(names: Sequence[str], globs: Sequence[str]) -> list[str]:
    """Names matching any of ``globs`` (``fnmatchcase`` rules), in declaration order (so ranks and
    patterns are stable)."""
    if not globs:
        return []
    match = re.compile("|".join(translate(g) for g in globs)).match
    return [n for n in names if match(n)]


def pairs(pattern: str, a: Sequence[str], b: Sequence[str],
          links_per_pair: Sequence[int]) -> list[tuple[str, str, int]]:
    """``(from, to, parallel links)`` for every joined pair.

    ``links_per_pair`` has one entry (all pairs) or one per ``to`` device.
    """
    if len(links_per_pair) not in (1, len(b)):
        raise ValueError(f"links_per_pair has {len(links_per_pair)} entries; give one number "
                         f"or one per 'to' device ({len(b)})")
    per = links_per_pair if len(links_per_pair) > 1 else [links_per_pair[0]] * len(b)
    out = [(a[i], b[j], per[j]) for i, j in PAIRINGS[pattern](len(a), len(b))]
    for x, y, _ in out:
        if x == y:
            raise ValueError(f"{x} would be linked to itself")
    return out
