"""One line announcing a sweep before it runs: the engine, why ``auto`` picked it, and the
estimated packet-hops and wall time of packet-engine runs."""

from __future__ import annotations

from typing import Sequence

from simulator.runner.estimate import PACKET_HOPS_PER_S, SweepPlan
from simulator.units import format_bytes


def duration(seconds: float) -> str:
    """A rough wall time for people: ``~4 s``, ``~12 min``, ``~3.5 h``."""
    if seconds < 1.0:
        return "<1 s"
    if seconds < 90:
        return f"~{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"~{seconds / 60:.0f} min"
    return f"~{seconds / 3600:.1f} h"


def plan_line(plan: SweepPlan) -> str | None:
    """The announcement of ``plan`` (None when the flow engine was asked for: nothing to say)."""
    largest = f"largest size {plan.weighed_hops:,} packet-hops"
    if plan.asked == "auto" and plan.engine == "flow":
        return (f"auto: flow engine ({largest}, over the {plan.budget:,} budget; "
                f"{duration(plan.weighed_hops / PACKET_HOPS_PER_S)} packet by packet)")
    if plan.engine != "packet":
        return None
    cost = f"{plan.total_hops:,} packet-hops of {_span(sorted(set(plan.units)))}, {duration(plan.wall_s or 0.0)}"
    if plan.asked == "auto":
        return f"auto: packet engine ({largest}, budget {plan.budget:,}): {cost}"
    return f"packet engine: {cost} at ~{PACKET_HOPS_PER_S / 1e3:.0f}k packet-hops/s"


def _span(sizes: list[int]) -> str:
    return format_bytes(sizes[0]) if len(sizes) == 1 else f"{format_bytes(sizes[0])}-{format_bytes(sizes[-1])}"


def unit_note(rows: Sequence[dict]) -> str:
    """How a sweep's packet-engine rows were cut, for a title: ``8 KiB packets`` or ``16 KiB
    packets in trains of 128 KiB`` (ranges when rows differ); empty when no row ran on the packet
    engine."""
    ran = [r for r in rows if r.get("packet_bytes")]
    if not ran:
        return ""
    fines = sorted({r.get("fine_packet_bytes") or r["packet_bytes"] for r in ran})
    trains = sorted({r["packet_bytes"] for r in ran if r.get("fine_packet_bytes")
                     and r["packet_bytes"] > r["fine_packet_bytes"]})
    if not trains:
        return f"{_span(fines)} packets"
    return f"{_span(fines)} packets in trains of {_span(trains)}"
