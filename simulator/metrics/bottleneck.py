"""Which link limited a run: the busiest channel class, by utilization.

Channels are grouped by (generation, source kind, destination kind) — e.g. ``nvlink5
gpu->switch`` — so a report names a kind of link a reader can find in the topology, not one of
thousands of channel ids.
"""

from __future__ import annotations

from collections import defaultdict

from simulator.engine.result import RunResult
from simulator.topology.fabric import Fabric


def link_class(fabric: Fabric, channel_id: int) -> str:
    """``<generation> <src kind>-><dst kind>`` of one channel."""
    ch = fabric.channels[channel_id]
    return f"{ch.generation} {fabric.nodes[ch.src].kind}->{fabric.nodes[ch.dst].kind}"


def busiest_link(fabric: Fabric, result: RunResult) -> str:
    """The link class whose busiest channel was busy the largest fraction of the run, with that
    fraction, e.g. ``nvlink5 gpu->switch (93% busy)``; ``none`` when nothing moved."""
    return busiest_of(fabric, result.utilization())


def busiest_of(fabric: Fabric, util) -> str:  # noqa: ANN001 - one fraction busy per channel
    """``busiest_link``'s answer for a fraction busy per channel (a run's, or a serving window's)."""
    if not len(util) or float(util.max()) <= 0:
        return "none"
    peak: dict[str, float] = defaultdict(float)
    for cid, u in enumerate(util):
        if u > 0:
            cls = link_class(fabric, cid)
            peak[cls] = max(peak[cls], float(u))
    name, value = max(peak.items(), key=lambda kv: (kv[1], kv[0]))
    return f"{name} ({value:.0%} busy)"
