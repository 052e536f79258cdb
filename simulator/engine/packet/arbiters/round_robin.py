"""Round-robin: the input after the last one granted wins (equal shares under saturation)."""

from __future__ import annotations

from simulator.engine.packet.arbiters.base import Arbiter


class RoundRobin(Arbiter):
    __slots__ = ("last",)
    name = "round_robin"

    def __init__(self, **_: object) -> None:
        self.last = -(1 << 62)
        """Rank granted last."""

    def pick(self, requesters):
        last = self.last
        for r in requesters:
            if r.rank > last:
                self.last = r.rank
                return r
        r = requesters[0]
        self.last = r.rank
        return r
