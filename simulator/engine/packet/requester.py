"""The requester contract: what an ``OutputPort`` (and a matching switch's ``CrossbarScheduler``)
reads and writes of the queues that ask it for its channel.

Three classes are requesters: ``source.Injector`` (packets a source node sends on this channel),
``switch.VirtualOutputQueue`` (packets at one input of a node waiting for this channel) and
``switch.OutputQueue`` (packets of one VC that crossed a matching switch). ``Requester`` lists every
slot the port reads or writes, once; ``tests/test_engine_contracts.py`` checks that each of the three
carries every one of them in its ``__slots__`` and has the methods. An arbiter reads only three of
them (``arbiters.Bidder``: ``rank``, ``weight``, ``head``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from simulator.engine.packet.packet import Packet


class CrossbarRead(Protocol):
    """The input side a requester's packets leave from, as the port sees it."""

    xbar: float
    """Time the input's crossbar read is free again (s): an output crossbar input feeds one output
    at a time (``OutputPort.start_time``); -inf for injection and output queues (no constraint)."""


class Requester(Protocol):
    """A queue of packets that asks one output port for its channel."""

    head: "Packet | None"
    """The packet that would go next, or None when the queue is empty (the port skips it). Read by
    the port every time it looks (``kick``), by ``take_ahead`` (None: nothing of the stream is
    queued before the packet it sends on) and by the arbiter (``head.t_inject``)."""
    rank: int
    """Arbitration order, >= 0 (ascending; ties go to the lowest): the input channel id, a VC for an
    output queue, and for injection a rank after every channel (``network.INJECT_RANK``). The port
    keeps its requesters sorted by it (``add_requester``)."""
    weight: int
    """The input's weight (weighted_rr) or priority (fixed_priority), from
    ``PacketConfig.arbiter_weights``; 1 unless configured."""
    grants: int
    """Packets granted to this requester so far: written by the port (+1 per packet it sends) and by
    the matching scheduler for a VOQ it crosses; read for ``switch_grants`` and ``OutputPort.sent``."""
    name: str
    """Who asks, for reports: the upstream node (or node/channel for parallel links), ``local``
    for injection, ``vc<N>`` for an output queue."""
    inbuf: CrossbarRead
    """Where its packets leave from: the ``InputBuffer`` of a VOQ (the port sets its crossbar read
    and tells it the packet left, ``InputBuffer.leave``), an ``Endpoint`` otherwise."""
    crossed: bool
    """True for an output queue: its packets already left their input buffer, so the port calls
    ``sent`` instead of ``inbuf.leave`` (a slot, read per packet)."""

    def pop(self) -> "Packet":
        """Remove and return ``head`` (there is one); the next packet, if any, becomes the head."""
        ...


class CrossedRequester(Requester, Protocol):
    """A requester whose packets crossed a switch already (``crossed`` is True): an output queue."""

    def sent(self, now: float) -> None:
        """The port took the head at ``now``: the queue's slot frees (the scheduler may match again)."""
        ...
