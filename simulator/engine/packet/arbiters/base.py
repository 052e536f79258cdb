"""The arbiter contract: pick one requester among those that can send now.

A requester is anything with ``rank`` (int >= 0: the input's channel id; endpoint injection ranks
after every channel), ``weight`` (int, from the config) and ``head`` (its first packet, read for
``head.t_inject``); ``requester.Requester`` is the full contract of the port's requesters.

Each algorithm is written once, as two pure functions over an explicit state (BookSim2's
``Arbitrate`` / ``UpdateState`` split): ``choose(state, requesters)`` picks without changing
anything and ``advance(state, chosen)`` returns the state after that grant. Two users compose them:

- an ``OutputPort`` holds one ``Arbiter`` instance, whose ``pick`` chooses and advances at once
  (the grant is always used);
- a separable matching allocator (``allocators.separable``) keeps one state per output (grant
  side) and one per input (accept side), chooses with them, and advances a state only when its
  design's update rule says so (iSLIP: on an accepted first-iteration grant).
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, Sequence


class Bidder(Protocol):
    """What an arbiter reads of a requester."""

    rank: int
    """Arbitration order (ascending; ties go to the lowest rank)."""
    weight: int
    """Weight (weighted_rr) or priority (fixed_priority, higher wins); 1 unless configured."""

    @property
    def head(self) -> Any:
        """The packet that would go (read for ``t_inject``, s)."""


class Arbiter:
    """Base class: one instance per output port; subclasses define ``start``, ``choose`` and ``advance``."""

    __slots__ = ("state",)
    name: ClassVar[str] = "base"
    start: ClassVar[Any] = None
    """State of a fresh arbiter."""

    def __init__(self) -> None:
        self.state = self.start
        """The algorithm's state (pointer, count...; None for stateless ones)."""

    @staticmethod
    def choose(state: Any, requesters: Sequence[Bidder]) -> Bidder:
        """The requester granted under ``state`` (``requesters`` non-empty, ascending rank); no change."""
        raise NotImplementedError

    @staticmethod
    def advance(state: Any, chosen: Bidder) -> Any:
        """The state after ``chosen`` was granted (and used)."""
        return state

    def pick(self, requesters: Sequence[Bidder]) -> Bidder:
        """Return the requester granted the output (``requesters`` non-empty, ascending rank) and
        advance the state: the grant is always used."""
        state = self.state
        chosen = self.choose(state, requesters)
        self.state = self.advance(state, chosen)
        return chosen
