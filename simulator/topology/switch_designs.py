"""The switch scheduling designs a topology, a flag or a lab may name: one record per design.

This is the pure-data half of each design (its name, whether it reads per-input weights, whether
it exists only as a crossbar matcher, one line of help), kept in the topology layer so that the
topology file's validation (``fabric.SwitchScheduling``, ``schema.SchedulingSpec``) can name the
designs without importing the engine (imports go hardware -> topology -> engine -> workloads, never
up). The packet engine attaches its classes to these records (``engine.packet.allocators.DESIGNS``:
the allocator and the per-output arbiter of each design) and fails on import if the two disagree:
a design is matching-only exactly when the engine has no per-output arbiter for it.

Everything that lists designs derives from ``SWITCH_DESIGNS``: ``DESIGN_NAMES`` (the pydantic
``Literal`` of topology files), ``MATCHING_ONLY``, ``switch_design_help()`` (the CLI's help) and
the labs' lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class SwitchDesign:
    """One switch scheduling design (what the engine builds for it: ``engine.packet.allocators``)."""

    name: str
    """The name topology files (``scheduling: {arbiter: NAME}``), ``PacketConfig.arbiter`` and the
    ``--arbiter`` flag use."""
    matching_only: bool
    """True: only a crossbar matcher exists (no per-output arbiter), so ``crossbar: auto`` runs
    the matching crossbar and ``crossbar: output`` is an error; False: it also arbitrates per output."""
    help: str
    """One line for ``--help`` and the docs."""
    weighted: bool = False
    """Reads the per-input weights (``PacketConfig.arbiter_weights``: weights, or priorities)."""
    arbitration_lab: bool = True
    """One of the rows of ``fabricsim lab arbitration`` (N inputs sharing one output): the
    deterministic designs whose shares the lab compares; PIM's random picks and the wavefront's
    single pass are the switch lab's and the docs' subject instead."""


SWITCH_DESIGNS: tuple[SwitchDesign, ...] = (
    SwitchDesign("round_robin", False, "per output: the input after the last one granted; as a matcher RRM "
                 "(grant pointers move on every grant, about 63 % under full load)"),
    SwitchDesign("islip", True, "iSLIP (McKeown 1999): round-robin grant and accept pointers that move only on an "
                 "accepted first-iteration grant (100 % under full uniform load)"),
    SwitchDesign("pim", True, "parallel iterative matching (Anderson 1993): random grants and accepts",
                 arbitration_lab=False),
    SwitchDesign("oldest_first", False, "the packet injected earliest wins (global-age fairness)"),
    SwitchDesign("fixed_priority", False, "the highest-priority input wins (priorities from the per-input "
                 "weights); starves the rest under load", weighted=True),
    SwitchDesign("weighted_rr", False, "round-robin that keeps an input for as many packets as its weight "
                 "(shares proportional to weights)", weighted=True),
    SwitchDesign("wavefront", True, "wavefront allocator (Tamir and Chi 1993): one pass over a rotating "
                 "priority diagonal, a maximal matching", arbitration_lab=False),
)
"""Every design, in the order help texts and error messages list them."""

DESIGNS_BY_NAME = {d.name: d for d in SWITCH_DESIGNS}
"""Name -> design record."""

DESIGN_NAMES: tuple[str, ...] = tuple(DESIGNS_BY_NAME)
"""The design names, in ``SWITCH_DESIGNS`` order."""

DesignName = Literal[DESIGN_NAMES]  # type: ignore[valid-type]
"""The names as a ``Literal`` (an unknown name fails when a topology file loads)."""

MATCHING_ONLY: tuple[str, ...] = tuple(d.name for d in SWITCH_DESIGNS if d.matching_only)
"""Designs with no per-output arbiter: a switch using one runs the matching crossbar under
``crossbar: auto``."""

Queueing = Literal["voq", "fifo"]
"""Switch input buffers: virtual output queues, or one FIFO per VC (head-of-line blocking)
(``queueing:`` in topology files, ``--queueing``, ``PacketConfig.queueing``)."""
QUEUEINGS: tuple[str, ...] = Queueing.__args__  # type: ignore[attr-defined]
"""The ``Queueing`` choices."""

CrossbarMode = Literal["auto", "output", "matching"]
"""``output``: each output arbitrates alone the moment it frees (no cell times); ``matching``: a
per-switch scheduler matches inputs to outputs every cell time (request, grant, accept); ``auto``:
matching for the ``MATCHING_ONLY`` designs, output otherwise."""
CROSSBAR_MODES: tuple[str, ...] = CrossbarMode.__args__  # type: ignore[attr-defined]
"""The ``CrossbarMode`` choices."""


def switch_design_help() -> str:
    """One line per design, ``name: help`` (matching-only designs say so), for ``--arbiter --help``."""
    return "\n".join(f"{d.name}: {d.help}" + (" [matching crossbar only]" if d.matching_only else "")
                     for d in SWITCH_DESIGNS)


def crossbar_help() -> str:
    """The ``--crossbar`` choices in one sentence, naming the matching-only designs."""
    return ("output (each output arbitrates when it frees), matching (request-grant-accept every cell time) "
            f"or auto (matching for {', '.join(MATCHING_ONLY)})")
