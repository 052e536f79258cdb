"""Fixed priority: the highest ``weight`` wins, ties to the lowest rank. Starves the rest under load. No state."""

from __future__ import annotations

from simulator.engine.packet.arbiters.base import Arbiter


class FixedPriority(Arbiter):
    __slots__ = ()
    name = "fixed_priority"

    @staticmethod
    def choose(state, requesters):
        best = requesters[0]
        for r in requesters:
            if r.weight > best.weight:
                best = r
        return best
