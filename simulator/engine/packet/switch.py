"""Switch input side: the receive buffer of one channel, with virtual output queues or a FIFO per VC.

Every node (switch, GPU, NIC) owns one ``InputBuffer`` per incoming channel. Packets that must be
forwarded wait in a ``VirtualOutputQueue`` keyed by (next channel, next VC), which is also the
requester the output port's arbiter sees. Without VOQs (``voq=False``) packets wait in one FIFO per
VC and only each FIFO's head sits in its VOQ, so a head blocked on a busy output blocks the packets
behind it (head-of-line blocking). The crossbar is modelled at the input: while a packet crosses
(output serialization / speedup) the input cannot feed another output.
"""

from __future__ import annotations

from collections import deque


class VirtualOutputQueue:
    """Packets at one input waiting for one (output channel, VC): one requester of that output."""

    __slots__ = ("q", "head", "inbuf", "rank", "weight", "grants", "name")

    def __init__(self, inbuf: "InputBuffer", rank: int, weight: int, name: str) -> None:
        self.q: deque = deque()
        self.head = None
        """First packet, or None when empty (kept as a slot: the hot path reads it directly)."""
        self.inbuf = inbuf
        self.rank = rank
        """Arbitration order: the input channel id."""
        self.weight = weight
        self.grants = 0
        """Packets this input won at this output."""
        self.name = name
        """Input name for reports (upstream node, or upstream node/channel for parallel links)."""

    def push(self, p) -> None:
        q = self.q
        q.append(p)
        if self.head is None:
            self.head = p

    def pop(self):
        q = self.q
        p = q.popleft()
        self.head = q[0] if q else None
        return p

    def __len__(self) -> int:
        """Packets queued."""
        return len(self.q)


class InputBuffer:
    """Receive side of one channel at its destination node."""

    __slots__ = ("cid", "xbar", "voqs", "fifos", "name", "weight", "held")

    def __init__(self, cid: int, vcs: int, name: str, weight: int) -> None:
        self.cid = cid
        self.xbar = float("-inf")
        """Time the input's crossbar read is free again (s)."""
        self.voqs: dict[int, VirtualOutputQueue] = {}
        """(next channel id * vcs + next VC) -> VOQ, created on first use."""
        self.fifos = [deque() for _ in range(vcs)]
        """Without VOQs: packets per VC in arrival order (the head is also in its VOQ)."""
        self.name = name
        self.weight = weight
        self.held = 0
        """Packets that arrived and have not started leaving (kept by the engine, O(1))."""


class Endpoint:
    """Stand-in input for injection at a source node: no crossbar constraint."""

    __slots__ = ("xbar",)

    def __init__(self) -> None:
        self.xbar = float("-inf")
