"""Oldest-first: outputs grant, and inputs accept, the request whose packet was injected earliest
(ties: lowest index): ``arbiters.OldestFirst`` on both sides. Global-age fairness; no pointers."""

from __future__ import annotations

from simulator.engine.packet.allocators.separable import Separable
from simulator.engine.packet.arbiters import OldestFirst as OldestArbiter


class OldestFirst(Separable):
    name = "oldest_first"
    grant_arbiter = OldestArbiter
    accept_arbiter = OldestArbiter
