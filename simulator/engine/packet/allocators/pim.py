"""Parallel iterative matching (Anderson, Owicki, Saxe, Thacker 1993): every output grants a
uniformly random requester and every input accepts a uniformly random grant. No state. With one
iteration and every VOQ backlogged the throughput is 1 - (1 - 1/N)^N (63 % for large N)."""

from __future__ import annotations

from simulator.engine.packet.allocators.base import Allocator


class PIM(Allocator):
    name = "pim"

    def grant(self, out, inputs, age):
        return inputs[int(self.rng.integers(len(inputs)))] if len(inputs) > 1 else inputs[0]

    def accept(self, inp, outputs, age):
        return outputs[int(self.rng.integers(len(outputs)))] if len(outputs) > 1 else outputs[0]
