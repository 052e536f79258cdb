"""Weighted round-robin: iSLIP whose grant pointer stays on an input for ``weight`` accepted
first-iteration grants before moving past it (shares proportional to weights under saturation)."""

from __future__ import annotations

from simulator.engine.packet.allocators.islip import ISlip


class WeightedRoundRobin(ISlip):
    name = "weighted_rr"

    def __init__(self, n_in, n_out, rng, weights) -> None:
        super().__init__(n_in, n_out, rng, weights)
        self.count = [0] * n_out
        """Per output: accepted grants the input at its pointer has had in a row."""

    def accepted(self, inp, out, first):
        if not first:
            return
        self.accept_ptr[inp] = (out + 1) % self.n_out
        if self.grant_ptr[out] != inp:
            self.grant_ptr[out], self.count[out] = inp, 0
        self.count[out] += 1
        if self.count[out] >= self.weights[inp]:
            self.grant_ptr[out], self.count[out] = (inp + 1) % self.n_in, 0
