"""Weighted round-robin: the current input keeps the grant for ``weight`` consecutive packets, then
the pointer moves on as in round-robin (shares proportional to weights under saturation)."""

from __future__ import annotations

from simulator.engine.packet.arbiters.base import Arbiter


class WeightedRoundRobin(Arbiter):
    __slots__ = ("last", "count")
    name = "weighted_rr"

    def __init__(self, **_: object) -> None:
        self.last = -(1 << 62)
        """Rank holding the grant."""
        self.count = 0
        """Consecutive grants it has had."""

    def pick(self, requesters):
        last = self.last
        for r in requesters:
            if r.rank == last and self.count < r.weight:
                self.count += 1
                return r
        chosen = requesters[0]
        for r in requesters:
            if r.rank > last:
                chosen = r
                break
        self.last = chosen.rank
        self.count = 1
        return chosen
