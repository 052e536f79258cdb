"""Fixed priority: outputs grant the input with the highest weight (ties: lowest index), inputs
accept the lowest-numbered output (``arbiters.FixedPriority`` on both sides; outputs all weigh
the same). Starves low-priority inputs under load."""

from __future__ import annotations

from simulator.engine.packet.allocators.separable import Separable
from simulator.engine.packet.arbiters import FixedPriority as PriorityArbiter


class FixedPriority(Separable):
    name = "fixed_priority"
    grant_arbiter = PriorityArbiter
    accept_arbiter = PriorityArbiter
