"""Per-output arbiters, one per file.

They pick among the requesters of one output port the moment it frees (``crossbar: output``) and
among the VCs of a switch output queue; the separable matching allocators (``allocators``) are
built from the same classes, so each algorithm is written once. Which design uses which arbiter is
its record in ``allocators.DESIGNS``.
"""

from __future__ import annotations

from simulator.engine.packet.arbiters.base import Arbiter, Bidder
from simulator.engine.packet.arbiters.fixed_priority import FixedPriority
from simulator.engine.packet.arbiters.oldest_first import OldestFirst
from simulator.engine.packet.arbiters.round_robin import RoundRobin
from simulator.engine.packet.arbiters.weighted_rr import WeightedRoundRobin

__all__ = ["Arbiter", "Bidder", "FixedPriority", "OldestFirst", "RoundRobin", "WeightedRoundRobin"]
