"""Separable allocators built from arbiters (BookSim2's ``SeparableAllocator`` over its
``src/arbiters/``): each output has a grant arbiter, each input an accept arbiter, and the
allocator's ``match`` loop (``base``) asks them; the design only says which arbiters and when a
grant arbiter's state moves.

The arbiters are the per-output ones (``arbiters``), used as pure ``choose(state, bids)`` /
``advance(state, chosen)`` functions over states this allocator keeps, one per output
(``grant_state``) and one per input (``accept_state``), so that a grant can be looked at without
being committed. A state moves only in the first iteration (McKeown 1999: later iterations fill in
the matching without disturbing the pointers): the accept arbiter's when the input accepts, the
grant arbiter's when the output grants (``moves_on = "grant"``, RRM) or when its grant is accepted
(``"accept"``, iSLIP).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from simulator.engine.packet.allocators.base import Allocator
from simulator.engine.packet.arbiters import Arbiter, RoundRobin


class Bid:
    """One request as an arbiter sees it (an ``arbiters.Bidder``): the other side's number as its
    rank, its weight, and the injection time of the packet it would move (its own ``head``)."""

    __slots__ = ("rank", "weight", "t_inject")

    def __init__(self, rank: int, weight: int, t_inject: float) -> None:
        self.rank = rank
        """Input number (grant side) or output number (accept side)."""
        self.weight = weight
        """The input's configured weight (grant side); 1 on the accept side (outputs weigh the same)."""
        self.t_inject = t_inject
        """Injection time of the requesting packet (s; 0 where the caller gives no ages)."""

    @property
    def head(self) -> "Bid":
        """The bid stands for its packet: ``head.t_inject`` is the packet's injection time."""
        return self


class Separable(Allocator):
    """Output-first separable allocator over a grant arbiter per output and an accept arbiter per input."""

    grant_arbiter: ClassVar[type[Arbiter]] = RoundRobin
    """Arbiter each output grants with, among its requesting inputs."""
    accept_arbiter: ClassVar[type[Arbiter]] = RoundRobin
    """Arbiter each input accepts with, among the outputs that granted it."""
    moves_on: ClassVar[Literal["grant", "accept"]] = "accept"
    """When a grant arbiter's state moves (first iteration only): on every grant, or only when the
    grant is accepted."""

    def __init__(self, n_in, n_out, rng, weights) -> None:
        super().__init__(n_in, n_out, rng, weights)
        self.grant_state = [self.grant_arbiter.start] * n_out
        """Per output: its grant arbiter's state."""
        self.accept_state = [self.accept_arbiter.start] * n_in
        """Per input: its accept arbiter's state."""

    def grant(self, out, inputs, age):
        w = self.weights
        bids = [Bid(i, w[i], age.get((i, out), 0.0)) for i in inputs]
        return self.grant_arbiter.choose(self.grant_state[out], bids).rank

    def accept(self, inp, outputs, age):
        bids = [Bid(o, 1, age.get((inp, o), 0.0)) for o in outputs]
        return self.accept_arbiter.choose(self.accept_state[inp], bids).rank

    def granted(self, out, inp, first):
        if first and self.moves_on == "grant":
            self._move_grant(out, inp)

    def accepted(self, inp, out, first):
        if first:
            if self.moves_on == "accept":
                self._move_grant(out, inp)
            self.accept_state[inp] = self.accept_arbiter.advance(self.accept_state[inp], Bid(out, 1, 0.0))

    def _move_grant(self, out: int, inp: int) -> None:
        """Advance output ``out``'s grant arbiter past its grant to ``inp``."""
        self.grant_state[out] = self.grant_arbiter.advance(self.grant_state[out], Bid(inp, self.weights[inp], 0.0))
