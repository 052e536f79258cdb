"""Oldest-first: outputs grant, and inputs accept, the request whose packet was injected earliest
(ties: lowest index). Global-age fairness; no pointers."""

from __future__ import annotations

from simulator.engine.packet.allocators.base import Allocator


class OldestFirst(Allocator):
    name = "oldest_first"

    def grant(self, out, inputs, age):
        return min(inputs, key=lambda i: (age[(i, out)], i))

    def accept(self, inp, outputs, age):
        return min(outputs, key=lambda o: (age[(inp, o)], o))
