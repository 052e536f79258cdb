"""Injection at a source node: transfers cut into packets, spread over routes, served round-robin.

A transfer of ``B`` bytes becomes ``ceil(B / packet_bytes)`` packets dealt round-robin over its
routes, starting at a seeded random route so that many small transfers do not all pile onto the
first one. Each (transfer, route) pair is a ``Flow``; every output channel of a source node has one
``Injector`` holding the flows that start on it, served one packet at a time in round-robin (the
concurrent NCCL channels of a GPU share a link fairly). Packets are made lazily, one ahead.
"""

from __future__ import annotations

from collections import deque

from simulator.engine.packet.ahead import NEVER
from simulator.engine.packet.packet import Packet
from simulator.engine.packet.switch import Endpoint


class Flow:
    """The packets of one transfer that follow one route."""

    __slots__ = ("tid", "route", "left", "last_bytes", "seq", "voqs", "ahead")

    def __init__(self, tid: int, route: tuple[int, ...], packets: int, last_bytes: int,
                 seq: list[int], ahead: int = NEVER) -> None:
        self.tid = tid
        self.route = route
        self.left = packets
        """Packets still to make."""
        self.last_bytes = last_bytes
        """Payload of this flow's final packet (the transfer's remainder, or a full packet)."""
        self.seq = seq
        """Shared one-element counter of the transfer's next packet number."""
        self.voqs: list = [None] * len(route)
        """The VOQs along the route, shared by the flow's packets (``Packet.voqs``)."""
        self.ahead = ahead
        """Where the route's exclusive suffix starts (``Packet.ahead``)."""


def split_packets(nbytes: int, packet_bytes: int, n_routes: int, offset: int) -> list[tuple[int, int, int]]:
    """Deal ``ceil(nbytes / packet_bytes)`` packets round-robin over routes starting at ``offset``.

    Returns (route index, packets, payload of its last packet) for each route that gets any.
    """
    n = -(-nbytes // packet_bytes)
    last_route = (n - 1) % n_routes
    tail = nbytes - (n - 1) * packet_bytes
    out = []
    for j in range(min(n_routes, n)):
        count = (n - j + n_routes - 1) // n_routes
        out.append(((j + offset) % n_routes, count, tail if j == last_route else packet_bytes))
    return out


class Injector:
    """Requester of one output port at a source node (``requester.Requester``): round-robin over
    the flows starting there."""

    __slots__ = ("flows", "head", "inbuf", "rank", "weight", "grants", "name", "packet_bytes",
                 "header_bytes", "seq_base", "crossed")

    def __init__(self, rank: int, packet_bytes: int, header_bytes: int, seq_base: list[int]) -> None:
        self.flows: deque[Flow] = deque()
        self.head: Packet | None = None
        self.inbuf = Endpoint()
        self.rank = rank
        self.weight = 1
        self.grants = 0
        self.name = "local"
        self.crossed = False
        """Injected packets are not in any switch (read only for packets past their first hop)."""
        self.packet_bytes = packet_bytes
        self.header_bytes = header_bytes
        self.seq_base = seq_base
        """Per transfer id: global number of its first packet."""

    def add(self, flow: Flow) -> None:
        self.flows.append(flow)
        if self.head is None:
            self.head = self._make()

    def _make(self) -> Packet | None:
        """The next packet, from the flow at the front (which then goes to the back), or None."""
        flows = self.flows
        if not flows:
            return None
        flow = flows.popleft()
        flow.left -= 1
        nbytes = self.packet_bytes if flow.left else flow.last_bytes
        if flow.left:
            flows.append(flow)
        seq = flow.seq
        n = seq[0]
        seq[0] = n + 1
        return Packet(self.seq_base[flow.tid] + n, flow.tid, flow.route, nbytes, nbytes + self.header_bytes,
                      flow.voqs, flow.ahead)

    def pop(self) -> Packet:
        """Hand out the head and make the next one."""
        p = self.head
        self.head = self._make()
        return p
