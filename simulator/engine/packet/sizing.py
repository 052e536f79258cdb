"""Choosing a transfer unit: the largest packet that still models every credit loop honestly.

Bigger packets mean fewer events (a multi-GiB collective in seconds), but a packet larger than the
receive buffer share it may hold puts the engine in coarse mode (``OutputPort.release``): each unit
streams through the buffer and the credit loop is approximated. ``fine_packet_bytes`` finds the
largest power-of-two payload that avoids coarse mode on every channel *and* keeps every channel at
its serialization rate, so packetization itself never caps a link below what 256 B packets would
reach.
"""

from __future__ import annotations

from simulator.engine.packet.credits import credits_for
from simulator.engine.packet.link import credit_loop_rtt_s, serialization_rate_Bps
from simulator.topology.fabric import Channel, Fabric


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
    spec = channel.credit
    share = spec.buffer_bytes // spec.credit_bytes // vcs
    wire = packet_bytes + header_bytes
    k = credits_for(wire, spec.credit_bytes)
    if k > share - (spec.batch - 1):
        return False
    rtt = credit_loop_rtt_s(channel, packet_bytes, header_bytes, reverse_latency_s) + transit_s
    return (share // k) * wire / rtt >= serialization_rate_Bps(channel, header_bytes)


def fine_packet_bytes(fabric: Fabric, header_bytes: int = 0, vcs: int = 1,
                      floor_bytes: int = 256, ceiling_bytes: int = 1 << 20) -> int:
    """Largest power-of-two payload in [floor, ceiling] (B) that ``is_fine`` on every channel of
    ``fabric``; ``floor_bytes`` if none is (buffers too small to cover their loop at any size).

    On GB200 NVL72 (32 KiB NVLink 5 buffers, 16 B credits, batches of 16) this is 8 KiB: four
    packets cover the ~0.63 us loop into a switch (its 100 ns forwarding and the next hop's
    serialization counted); 16 KiB leaves room for two, ~32 GB/s of the link's 42.75.
    """
    slowest_out: dict[str, float] = {}
    for ch in fabric.channels:
        rate = serialization_rate_Bps(ch, header_bytes)
        slowest_out[ch.src] = min(slowest_out.get(ch.src, rate), rate)

    def transit_s(ch: Channel, size: int) -> float:
        if not fabric.forwards(ch.dst):
            return 0.0
        return fabric.nodes[ch.dst].latency_s + (size + header_bytes) / slowest_out[ch.dst]

    size = ceiling_bytes
    while size > floor_bytes:
        if all(is_fine(ch, size, header_bytes, vcs, fabric.reverse_latency_s(ch), transit_s(ch, size))
               for ch in fabric.channels):
            return size
        size //= 2
    return floor_bytes
