"""Weighted round-robin: round-robin whose pointer stays on an input for ``weight`` consecutive
grants before moving past it (shares proportional to weights under saturation).

The state is (pointer, count): the first requester at or after the pointer wins; ``count`` is the
grants the input at the pointer has had in a row (0: it has had none yet)."""

from __future__ import annotations

from simulator.engine.packet.arbiters.base import Arbiter


class WeightedRoundRobin(Arbiter):
    __slots__ = ()
    name = "weighted_rr"
    start = (0, 0)

    @staticmethod
    def choose(state, requesters):
        pointer = state[0]
        for r in requesters:
            if r.rank >= pointer:
                return r
        return requesters[0]

    @staticmethod
    def advance(state, chosen):
        pointer, count = state
        rank = chosen.rank
        count = count + 1 if pointer == rank else 1
        if count >= chosen.weight:
            return rank + 1, 0
        return rank, count
