"""Per-output arbiters, one per file; ``ARBITERS`` maps configuration names to classes.

They pick among the requesters of one output port the moment it frees (``crossbar: output``) and
among the VCs of a switch output queue. Crossbar matching (iSLIP, PIM, ...) lives in ``allocators``.
"""

from __future__ import annotations

from simulator.engine.packet.arbiters.base import Arbiter
from simulator.engine.packet.arbiters.fixed_priority import FixedPriority
from simulator.engine.packet.arbiters.oldest_first import OldestFirst
from simulator.engine.packet.arbiters.round_robin import RoundRobin
from simulator.engine.packet.arbiters.weighted_rr import WeightedRoundRobin

ARBITERS: dict[str, type[Arbiter]] = {
    cls.name: cls for cls in (RoundRobin, OldestFirst, FixedPriority, WeightedRoundRobin)
}


def make_arbiter(name: str) -> Arbiter:
    """A fresh arbiter by name (names are validated by ``PacketConfig``)."""
    return ARBITERS[name]()


__all__ = ["ARBITERS", "Arbiter", "make_arbiter"]
