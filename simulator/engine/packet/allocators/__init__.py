"""Crossbar allocators of the matching scheduler, one per file, and ``DESIGNS``: the engine's half
of each switch scheduling design (``topology.switch_designs`` holds the names and help).

A design's record names its allocator (the matcher of ``crossbar: matching``) and its per-output
arbiter (``crossbar: output``, the arbiter class of the same name), or none: then the design is
matching-only. That is checked against ``switch_designs.SwitchDesign.matching_only`` when this
module loads, so the topology layer's list and the engine's classes cannot drift apart.
``ALLOCATORS``, ``ARBITERS`` and ``MATCHING_ONLY`` are views of ``DESIGNS``.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.engine.packet.allocators.base import Allocator
from simulator.engine.packet.allocators.fixed_priority import FixedPriority
from simulator.engine.packet.allocators.islip import ISlip
from simulator.engine.packet.allocators.oldest_first import OldestFirst
from simulator.engine.packet.allocators.pim import PIM
from simulator.engine.packet.allocators.round_robin import RoundRobinMatching
from simulator.engine.packet.allocators.wavefront import Wavefront
from simulator.engine.packet.allocators.weighted_rr import WeightedRoundRobin
from simulator.engine.packet.arbiters import Arbiter, RoundRobin
from simulator.engine.packet.arbiters import FixedPriority as FixedPriorityArbiter
from simulator.engine.packet.arbiters import OldestFirst as OldestFirstArbiter
from simulator.engine.packet.arbiters import WeightedRoundRobin as WeightedRoundRobinArbiter
from simulator.topology.switch_designs import SWITCH_DESIGNS, SwitchDesign


@dataclass(frozen=True)
class Design:
    """One switch scheduling design as the engine builds it."""

    spec: SwitchDesign
    """Its name, help and flags (``topology.switch_designs``)."""
    allocator: type[Allocator]
    """The crossbar matcher (``crossbar: matching``)."""
    arbiter: type[Arbiter] | None
    """The per-output arbiter (``crossbar: output``), or None: the design only exists as a matcher."""

    @property
    def name(self) -> str:
        """The design's name (``SwitchDesign.name``)."""
        return self.spec.name

    @property
    def help(self) -> str:
        """One line of help (``SwitchDesign.help``)."""
        return self.spec.help

    @property
    def matching_only(self) -> bool:
        """No per-output arbiter: ``crossbar: auto`` runs the matching crossbar for it."""
        return self.arbiter is None


def _attach(allocators: tuple[type[Allocator], ...], per_output: tuple[type[Arbiter], ...]) -> dict[str, Design]:
    """The records of ``SWITCH_DESIGNS`` with their classes (matched by the classes' ``name``).
    Raises ``RuntimeError`` when a design lacks an allocator, a class names no design, or a
    design's ``matching_only`` disagrees with whether it has a per-output arbiter."""
    alloc = {cls.name: cls for cls in allocators}
    arb = {cls.name: cls for cls in per_output}
    names = {d.name for d in SWITCH_DESIGNS}
    if set(alloc) != names or not set(arb) <= names:
        raise RuntimeError(f"switch designs {sorted(names)} vs allocators {sorted(alloc)}, arbiters {sorted(arb)}")
    designs = {d.name: Design(d, alloc[d.name], arb.get(d.name)) for d in SWITCH_DESIGNS}
    wrong = [n for n, d in designs.items() if d.matching_only != d.spec.matching_only]
    if wrong:
        raise RuntimeError(f"switch designs {wrong}: matching_only disagrees with the per-output arbiters")
    return designs


DESIGNS: dict[str, Design] = _attach(
    (RoundRobinMatching, ISlip, PIM, OldestFirst, FixedPriority, WeightedRoundRobin, Wavefront),
    (RoundRobin, OldestFirstArbiter, FixedPriorityArbiter, WeightedRoundRobinArbiter))
"""Design name -> its record, in ``SWITCH_DESIGNS`` order."""

ALLOCATORS: dict[str, type[Allocator]] = {n: d.allocator for n, d in DESIGNS.items()}
"""Design name -> allocator class."""
ARBITERS: dict[str, type[Arbiter]] = {n: d.arbiter for n, d in DESIGNS.items() if d.arbiter is not None}
"""Design name -> per-output arbiter class (the designs that are not matching-only)."""
MATCHING_ONLY: tuple[str, ...] = tuple(n for n, d in DESIGNS.items() if d.matching_only)
"""Designs with no per-output arbiter: a switch using one runs the matching crossbar even when
``crossbar`` is ``auto``."""


def make_arbiter(name: str) -> Arbiter:
    """A fresh per-output arbiter of design ``name`` (one that has one; names are validated by ``PacketConfig``)."""
    return ARBITERS[name]()


__all__ = ["ALLOCATORS", "ARBITERS", "Allocator", "DESIGNS", "Design", "MATCHING_ONLY", "make_arbiter"]
