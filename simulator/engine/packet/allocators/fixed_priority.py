"""Fixed priority: outputs grant the input with the highest weight (ties: lowest index), inputs
accept the lowest-numbered output. Starves low-priority inputs under load."""

from __future__ import annotations

from simulator.engine.packet.allocators.base import Allocator


class FixedPriority(Allocator):
    name = "fixed_priority"

    def grant(self, out, inputs, age):
        w = self.weights
        return min(inputs, key=lambda i: (-w[i], i))

    def accept(self, inp, outputs, age):
        return outputs[0]
