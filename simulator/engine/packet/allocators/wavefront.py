"""Wavefront allocator (Tamir and Chi 1993; BookSim2 ``wavefront.cpp``): one pass over the
request matrix diagonal by diagonal, starting at a priority diagonal that rotates every cell time;
each cell (input, output) on a diagonal is matched if it requests and both are still free. Gives a
maximal matching in one pass; ``iterations`` is ignored. Not fair when many inputs want one output:
the input just after an idle one on the rotating diagonal wins more often (the design's known
trade of fairness for a single-pass maximal match)."""

from __future__ import annotations

from simulator.engine.packet.allocators.base import Allocator


class Wavefront(Allocator):
    name = "wavefront"

    def __init__(self, n_in, n_out, rng, weights) -> None:
        super().__init__(n_in, n_out, rng, weights)
        self.diagonal = 0
        """Priority diagonal of the next cell time."""

    def match(self, requests, age, iterations):
        n = max(self.n_in, self.n_out)
        want = {(i, o) for o, ins in requests.items() for i in ins}
        matched: dict[int, int] = {}
        taken: set[int] = set()
        for d in range(n):
            offset = (self.diagonal + d) % n
            for i in range(self.n_in):
                o = (i + offset) % n
                if (i, o) in want and i not in matched and o not in taken:
                    matched[i] = o
                    taken.add(o)
        self.diagonal = (self.diagonal + 1) % n
        return matched
