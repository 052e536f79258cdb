"""Choosing a transfer unit: the largest packet that still models every credit loop honestly.

Bigger packets mean fewer events (a multi-GiB collective in seconds), but a packet larger than the
receive buffer share it may hold puts the engine in coarse mode (``OutputPort.release``): each unit
streams through the buffer and the credit loop is approximated. ``fine_packet_bytes`` finds the
largest power-of-two payload that avoids coarse mode on every channel *and* keeps every channel at
its serialization rate, so packetization itself never caps a link below what 256 B packets would
reach. Given a run's routes (``route_use``), it asks that only of the channels the run crosses, and
counts a receiver's forwarding only where a route goes on past it: a channel no route crosses
cannot stall the run, and a receiver where every route ends frees the space on arrival (the NVLS
reduction ends at the switch), so one run's credit loops may allow a larger unit than another's.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping

from simulator.engine.packet.credits import credits_for
from simulator.engine.packet.link import credit_loop_rtt_s, serialization_rate_Bps
from simulator.engine.transfer import Workload
from simulator.topology.fabric import Channel, Fabric
from simulator.topology.routing import equal_cost_routes


def is_fine(channel: Channel, packet_bytes: int, header_bytes: int = 0, vcs: int = 1,
            reverse_latency_s: float | None = None, transit_s: float = 0.0) -> bool:
    """True if ``packet_bytes`` payload packets are modelled without coarse mode on ``channel`` and
    keep it at its serialization rate (static credit partition over ``vcs`` VCs). ``transit_s``: how
    much longer a transit receiver (switch, root complex) holds the space than a sink: its
    forwarding latency plus the packet's serialization on the next link.

    Not coarse: the packet's credits fit what one packet may hold, the VC's share of the buffer
    less the ``batch - 1`` credits batching may withhold (the engine's rule). Full rate: the n
    packets that fit the share at once cover one credit round trip into a sink,
    n x wire / RTT >= serialization rate (``credit_loop_rtt_s``; a switch receiver holds space a
    little longer, by its forwarding latency).
    """
    if is_coarse(channel, packet_bytes, header_bytes, vcs):
        return False
    spec = channel.credit
    share = spec.buffer_bytes // spec.credit_bytes // vcs
    wire = packet_bytes + header_bytes
    k = credits_for(wire, spec.credit_bytes)
    rtt = credit_loop_rtt_s(channel, packet_bytes, header_bytes, reverse_latency_s) + transit_s
    return (share // k) * wire / rtt >= serialization_rate_Bps(channel, header_bytes)


def is_coarse(channel: Channel, packet_bytes: int, header_bytes: int = 0, vcs: int = 1) -> bool:
    """True if a ``packet_bytes`` payload packet takes more credits than one packet may hold on
    ``channel`` (its VC's share of the buffer less the ``batch - 1`` credits batching may withhold,
    the engine's rule), so it streams through the buffer (coarse mode, ``OutputPort.release``)."""
    spec = channel.credit
    share = spec.buffer_bytes // spec.credit_bytes // vcs
    return credits_for(packet_bytes + header_bytes, spec.credit_bytes) > share - (spec.batch - 1)


def transit_s(fabric: Fabric, ch: Channel, size: int, header_bytes: int = 0,
              use: Mapping[int, bool] | None = None) -> float:
    """How much longer than a sink ``ch``'s receiver holds a ``size``-byte packet's space (s): its
    forwarding latency plus the packet's serialization on its slowest way out, when it forwards
    (and, given ``route_use``, some route goes on past it); else 0."""
    if not fabric.forwards(ch.dst) or (use is not None and not use[ch.id]):
        return 0.0
    key = ("sizing.slowest_out", header_bytes)
    slowest = fabric.route_cache.get(key)
    if slowest is None:
        slowest = fabric.route_cache[key] = {}
        for c in fabric.channels:
            rate = serialization_rate_Bps(c, header_bytes)
            slowest[c.src] = min(slowest.get(c.src, rate), rate)
    return fabric.nodes[ch.dst].latency_s + (size + header_bytes) / slowest[ch.dst]


def distinct_routes(fabric: Fabric, workloads: Iterable[Workload]) -> Iterator[tuple[tuple[int, ...], ...]]:
    """The route sets (channel-id tuples) ``workloads`` move bytes over between two nodes, each
    distinct one once: a transfer's pinned paths, else the equal-cost routes the engines spread it
    over. Delays and copies inside one GPU cross nothing."""
    seen: set = set()
    for workload in workloads:
        for t in workload.transfers:
            if not t.bytes or t.src == t.dst:
                continue
            key = id(t.paths) if t.paths is not None else (t.src, t.dst)
            if key in seen:
                continue
            seen.add(key)
            yield t.paths if t.paths is not None else equal_cost_routes(fabric, t.src, t.dst)


def route_use(fabric: Fabric, workloads: Iterable[Workload]) -> dict[int, bool]:
    """Channel id -> whether some route of ``workloads`` goes on past the channel's receiver, for
    every channel the run crosses (``distinct_routes``)."""
    use: dict[int, bool] = {}
    for routes in distinct_routes(fabric, workloads):
        for route in routes:
            last = len(route) - 1
            for i, cid in enumerate(route):
                use[cid] = use.get(cid, False) or i < last
    return use


def fine_packet_bytes(fabric: Fabric, header_bytes: int = 0, vcs: int = 1,
                      floor_bytes: int = 256, ceiling_bytes: int = 1 << 20,
                      use: Mapping[int, bool] | None = None) -> int:
    """Largest power-of-two payload in [floor, ceiling] (B) that ``is_fine`` on every channel of
    ``fabric``; ``floor_bytes`` if none is (buffers too small to cover their loop at any size).
    With ``use`` (``route_use`` of a run), only on the channels the run crosses, each with its
    receiver's forwarding counted only where a route goes on past it.

    On GB200 NVL72 (32 KiB NVLink 5 buffers, 16 B credits, batches of 16) this is 8 KiB: four
    packets cover the ~0.63 us loop into a switch (its 100 ns forwarding and the next hop's
    serialization counted); 16 KiB leaves room for two, ~32 GB/s of the link's 42.75. A run whose
    routes all end at the switch (NVLS) frees the space on arrival: 16 KiB.
    """
    channels = fabric.channels if use is None else [fabric.channels[cid] for cid in sorted(use)]
    size = ceiling_bytes
    while size > floor_bytes:
        if all(is_fine(ch, size, header_bytes, vcs, fabric.reverse_latency_s(ch),
                       transit_s(fabric, ch, size, header_bytes, use)) for ch in channels):
            return size
        size //= 2
    return floor_bytes
