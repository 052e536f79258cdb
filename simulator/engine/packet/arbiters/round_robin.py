"""Round-robin: the first requester at or after the pointer wins, and the pointer moves one past it
(equal shares under saturation). The state is the pointer (a rank; 0 at the start)."""

from __future__ import annotations

from simulator.engine.packet.arbiters.base import Arbiter


class RoundRobin(Arbiter):
    __slots__ = ()
    name = "round_robin"
    start = 0

    @staticmethod
    def choose(state, requesters):
        for r in requesters:
            if r.rank >= state:
                return r
        return requesters[0]

    @staticmethod
    def advance(state, chosen):
        return chosen.rank + 1
