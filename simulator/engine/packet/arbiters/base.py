"""The arbiter contract: pick one requester among those that can send now.

A requester is anything with ``rank`` (int: the input's channel id; endpoint injection ranks after
every channel), ``weight`` (int, from the config) and ``head`` (its first packet). ``pick`` is given
a non-empty list of requesters in ascending ``rank`` and returns one; it may update internal state
(pointers) because the grant is always used.
"""

from __future__ import annotations

from typing import Protocol, Sequence


class Requester(Protocol):
    rank: int
    weight: int

    @property
    def head(self): ...


class Arbiter:
    """Base class: one instance per output port."""

    __slots__ = ()
    name = "base"

    def pick(self, requesters: Sequence[Requester]) -> Requester:
        """Return the requester granted the output (``requesters`` is non-empty, ascending rank)."""
        raise NotImplementedError
