"""Crossbar allocators of the matching scheduler, one per file; ``ALLOCATORS`` maps configuration
names to classes. ``MATCHING_ONLY`` names exist only as matchers (no per-output arbiter)."""

from __future__ import annotations

from simulator.engine.packet.allocators.base import Allocator
from simulator.engine.packet.allocators.fixed_priority import FixedPriority
from simulator.engine.packet.allocators.islip import ISlip
from simulator.engine.packet.allocators.oldest_first import OldestFirst
from simulator.engine.packet.allocators.pim import PIM
from simulator.engine.packet.allocators.round_robin import RoundRobinMatching
from simulator.engine.packet.allocators.wavefront import Wavefront
from simulator.engine.packet.allocators.weighted_rr import WeightedRoundRobin

ALLOCATORS: dict[str, type[Allocator]] = {
    cls.name: cls for cls in (RoundRobinMatching, ISlip, PIM, OldestFirst, FixedPriority,
                              WeightedRoundRobin, Wavefront)
}
MATCHING_ONLY = ("islip", "pim", "wavefront")
"""Allocators with no per-output (asynchronous) counterpart: a switch using one runs the
matching scheduler even when ``crossbar`` is ``auto``."""

__all__ = ["ALLOCATORS", "Allocator", "MATCHING_ONLY"]
