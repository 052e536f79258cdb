"""Output arbiters, one per file; ``ARBITERS`` maps configuration names to classes."""

from __future__ import annotations

from simulator.engine.packet.arbiters.base import Arbiter
from simulator.engine.packet.arbiters.fixed_priority import FixedPriority
from simulator.engine.packet.arbiters.islip import ISlip
from simulator.engine.packet.arbiters.oldest_first import OldestFirst
from simulator.engine.packet.arbiters.round_robin import RoundRobin
from simulator.engine.packet.arbiters.weighted_rr import WeightedRoundRobin

ARBITERS: dict[str, type[Arbiter]] = {
    cls.name: cls for cls in (RoundRobin, ISlip, OldestFirst, FixedPriority, WeightedRoundRobin)
}


def make_arbiter(name: str, iterations: int = 1) -> Arbiter:
    """A fresh arbiter by name (names are validated by ``PacketConfig``)."""
    return ARBITERS[name](iterations=iterations)


__all__ = ["ARBITERS", "Arbiter", "make_arbiter"]
