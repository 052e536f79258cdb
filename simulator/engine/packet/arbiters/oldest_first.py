"""Oldest-first: the head packet injected earliest wins (ties: lowest rank). Global-age fairness; no state."""

from __future__ import annotations

from simulator.engine.packet.arbiters.base import Arbiter


class OldestFirst(Arbiter):
    __slots__ = ()
    name = "oldest_first"

    @staticmethod
    def choose(state, requesters):
        best = requesters[0]
        age = best.head.t_inject
        for r in requesters:
            t = r.head.t_inject
            if t < age:
                best, age = r, t
        return best
