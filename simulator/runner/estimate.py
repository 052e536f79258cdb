"""What a sweep will cost before it runs: the engine (and why ``auto`` picked it), packet-hops and
wall time of packet-engine runs.

The wall-time estimate is packet-hops / ``PACKET_HOPS_PER_S``; packet-hops are counted as the
``auto`` engine choice counts them (``engine.dispatch.packet_hops``: bytes of each transfer /
packet size x hops of its first route).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from simulator.engine.dispatch import AUTO_PACKET_HOP_BUDGET, choose_engine, packet_hops
from simulator.engine.packet import PacketConfig
from simulator.engine.transfer import Workload
from simulator.topology.fabric import Fabric

PACKET_HOPS_PER_S = 150_000.0
"""Packet-hops the packet engine replays per second of wall time. Assumption: measured on the
project's 2-core machine with the test suite running on the other core (December 2026: HGX H100
all_reduce 4 MiB 224k/s, alltoall 8 MiB 167k/s; GB200 NVL72 all_reduce 16 MiB 168k/s, 1 GiB in
128 KiB trains 186k/s), rounded down for busier machines; ``benchmarks/engine_throughput.py``
prints the figure for another machine or engine version. Only the announced estimate uses it."""

SLOW_RUN_S = 2.0
"""Runs estimated longer than this get a progress display."""


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """The engine of a sweep and what its runs will cost, size by size."""

    engine: str
    """The engine every size runs on."""
    asked: str
    """The engine asked for (``auto``, ``packet`` or ``flow``)."""
    units: tuple[int, ...]
    """The packet engine's transfer unit of each size (B): each run's own (``runner.packet_unit``)."""
    sizes: tuple[int, ...]
    packet_hops: tuple[int, ...]
    """Estimated packet-hops of each size (B / its unit x route hops, summed over transfers)."""
    weighed_hops: int = 0
    """Packet-hops of the largest size in its fine packets (``weighed``): what ``auto`` decides by."""

    @property
    def total_hops(self) -> int:
        return sum(self.packet_hops)

    @property
    def wall_s(self) -> float | None:
        """Estimated wall time of the packet-engine runs (s); None for the flow engine."""
        return self.total_hops / PACKET_HOPS_PER_S if self.engine == "packet" else None

    @property
    def slow(self) -> bool:
        """Whether the runs are expected to take more than ``SLOW_RUN_S``."""
        return (self.wall_s or 0.0) > SLOW_RUN_S

    @property
    def budget(self) -> int:
        """The packet-hop budget of ``auto``."""
        return AUTO_PACKET_HOP_BUDGET


def weighed(packet: PacketConfig) -> PacketConfig:
    """The packet settings ``auto`` weighs a sweep's largest size with: its fine packets. Trains
    (``runner.packet_unit``) hold a transfer's units near a fixed count, so with them a sweep's
    largest size may count fewer packet-hops than a smaller one; fine packets grow with the size,
    so the largest stays the one to decide by."""
    if packet.fine_packet_bytes is None:
        return packet
    return replace(packet, packet_bytes=packet.fine_packet_bytes, fine_packet_bytes=None)


def plan_sweep(fabric: Fabric, asked: str, workloads: dict[int, Workload],
               packet_for: Callable[[Workload], PacketConfig]) -> SweepPlan:
    """The plan of running ``workloads`` (size -> workload) with engine ``asked``, each with its
    packet settings ``packet_for(workload)``: ``auto`` picks one engine for all sizes, by the
    largest (``runner.sweeps.plan`` asks it for every sweep); the flow engine asked for counts no packet-hops."""
    sizes = tuple(sorted(workloads))
    if asked == "flow":  # no packets to count: nothing is announced
        return SweepPlan(engine="flow", asked=asked, units=(), sizes=sizes, packet_hops=(0,) * len(sizes))
    packets = [packet_for(workloads[s]) for s in sizes]
    hops = tuple(packet_hops(fabric, workloads[s], p.packet_bytes) for s, p in zip(sizes, packets))
    engine, weighed_hops = asked, 0
    if sizes:
        largest = weighed(packets[-1])
        weighed_hops = packet_hops(fabric, workloads[sizes[-1]], largest.packet_bytes)
        if asked == "auto":
            engine = choose_engine(fabric, workloads[sizes[-1]], largest)
    elif asked == "auto":
        engine = "flow"
    return SweepPlan(engine=engine, asked=asked, units=tuple(p.packet_bytes for p in packets), sizes=sizes,
                     packet_hops=hops, weighed_hops=weighed_hops)
