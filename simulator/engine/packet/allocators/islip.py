"""iSLIP (McKeown 1999): round-robin grant and accept pointers that move only when a grant is
accepted, and only in the first iteration. The rule desynchronizes the output pointers under load,
so with every VOQ backlogged one iteration reaches 100 % throughput and no VOQ starves."""

from __future__ import annotations

from simulator.engine.packet.allocators.base import Allocator, next_from


class ISlip(Allocator):
    name = "islip"

    def __init__(self, n_in, n_out, rng, weights) -> None:
        super().__init__(n_in, n_out, rng, weights)
        self.grant_ptr = [0] * n_out
        """Per output: the input with the highest grant priority."""
        self.accept_ptr = [0] * n_in
        """Per input: the output with the highest accept priority."""

    def grant(self, out, inputs, age):
        return next_from(self.grant_ptr[out], inputs)

    def accept(self, inp, outputs, age):
        return next_from(self.accept_ptr[inp], outputs)

    def accepted(self, inp, out, first):
        if first:
            self.grant_ptr[out] = (inp + 1) % self.n_in
            self.accept_ptr[inp] = (out + 1) % self.n_out
