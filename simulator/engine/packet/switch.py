"""Switch input and output side: receive buffers with virtual output queues (or a FIFO per VC), and
the output queues after a matching crossbar.

Every node (switch, GPU, NIC) owns one ``InputBuffer`` per incoming channel. A packet that must be
forwarded waits in a ``VirtualOutputQueue`` keyed by (next channel, next VC) (``voq_for``: the one
VOQ lookup). Without VOQs (``fifo``) packets wait in one FIFO per VC and only each FIFO's head sits
in its VOQ, so a head blocked on a busy output blocks the packets behind it (head-of-line blocking).

Who a VOQ asks depends on the switch's crossbar:

- *output* crossbar: the VOQ is a requester of the next channel's ``OutputPort``, which arbitrates
  the moment it frees; while a packet crosses (output serialization / speedup) the input cannot
  feed another output (``InputBuffer.xbar``).
- *matching* crossbar: the VOQ is a requester of the switch's ``CrossbarScheduler``, which every
  cell time matches inputs to outputs and moves the matched heads into ``OutputQueue``\\ s; the
  output port then serializes from its output queues.

Either way a packet frees its input buffer space, and so returns its credits upstream, in one place:
``InputBuffer.leave``.
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Protocol

from simulator.engine.packet.events import EventQueue
from simulator.engine.packet.packet import Packet


class Port(Protocol):
    """What the input side needs of an ``OutputPort`` (``link``; named here so that ``link`` and
    ``scheduler`` import this module and not the other way round)."""

    def release(self, t_free: float, vc: int, wire: int) -> None: ...

    def kick(self) -> None: ...

    def wake(self, t: float) -> None: ...

    def add_requester(self, req) -> None: ...


class Scheduler(Protocol):
    """What the input and output queues need of a ``CrossbarScheduler`` (``scheduler``)."""

    def add_voq(self, q: "VirtualOutputQueue") -> None: ...

    def request(self, q: "VirtualOutputQueue", now: float) -> None: ...

    def poke(self, t: float) -> None: ...


class VirtualOutputQueue:
    """Packets at one input waiting for one (output channel, VC): one requester of that output
    (``requester.Requester``), or of the switch's matching scheduler."""

    __slots__ = ("q", "head", "inbuf", "rank", "weight", "grants", "name", "nxt", "vc", "port", "out", "oq",
                 "crossed")

    def __init__(self, inbuf: "InputBuffer", nxt: int, vc: int) -> None:
        self.crossed = False
        """Packets here have not crossed the switch yet (see ``OutputQueue.crossed``; a slot, not a
        class attribute: the hot path reads it per packet)."""
        self.q: deque[Packet] = deque()
        """The packets behind the head."""
        self.head: Packet | None = None
        """First packet, or None when empty (kept apart from ``q``: the hot path reads it directly,
        and a queue of one, the usual case, costs no deque operation)."""
        self.inbuf = inbuf
        self.rank = inbuf.cid
        """Arbitration order: the input channel id."""
        self.weight = inbuf.weight
        self.grants = 0
        """Packets this input won at this output."""
        self.name = inbuf.name
        """Input name for reports (upstream node, or upstream node/channel for parallel links)."""
        self.nxt = nxt
        """Channel id the packets leave on."""
        self.vc = vc
        """VC they take on it."""
        self.port: Port | None = None
        """Output crossbar: the port of channel ``nxt``, which this VOQ asks."""
        self.out = -1
        """Matching crossbar: index of the output at the scheduler."""
        self.oq: OutputQueue | None = None
        """Matching crossbar: the output queue the packets cross into."""

    def push(self, p: Packet) -> None:
        if self.head is None:
            self.head = p
        else:
            self.q.append(p)

    def pop(self) -> Packet:
        """Remove and return the head (there is one)."""
        p = self.head
        q = self.q
        self.head = q.popleft() if q else None
        return p

    def __len__(self) -> int:
        """Packets queued."""
        return len(self.q) + (self.head is not None)


class InputBuffer:
    """Receive side of one channel at its destination node: arrival, VOQs, leaving."""

    __slots__ = ("cid", "xbar", "voqs", "fifos", "fifo", "name", "weight", "held", "up", "ports",
                 "sched", "vc_at", "vcs", "events", "obs", "arrive_cb", "pending")

    def __init__(self, cid: int, name: str, weight: int, *, fifo: bool, vc_at: list[int], vcs: int,
                 up: Port, ports: list[Port], sched: Scheduler | None, events: EventQueue, obs) -> None:
        self.cid = cid
        self.xbar = float("-inf")
        """Output crossbar: time the input's crossbar read is free again (s)."""
        self.voqs: dict[int, VirtualOutputQueue] = {}
        """(next channel id * vcs + next VC) -> VOQ, created on first use (``voq_for``)."""
        self.fifo = fifo
        """True: one FIFO per VC (the head is also in its VOQ); False: VOQs."""
        self.fifos: list[deque[Packet]] = [deque() for _ in range(vcs)]
        self.name = name
        self.weight = weight
        self.held = 0
        """Packets that arrived and have not started leaving (kept by the engine, O(1))."""
        self.up = up
        """The port feeding this buffer: it holds the credits this buffer's space stands for."""
        self.ports = ports
        """Every output port of the run, by channel id (the next channel of a packet)."""
        self.sched = sched
        """The node's matching scheduler, or None (output crossbar)."""
        self.vc_at = vc_at
        """VC of a packet on the channel at route index i: ``vc_at[i]`` (one table for the run)."""
        self.vcs = vcs
        self.events = events
        self.obs = obs
        self.arrive_cb: Callable[[Packet], None] = self.arrive
        """Callback of a packet event arriving here (the engine may wrap them, see ``Faults``)."""
        self.pending = 0
        """Arrival events scheduled here and not yet run (a packet taken ahead may not pass them)."""

    def voq_for(self, nxt: int, vc: int) -> VirtualOutputQueue:
        """The VOQ of packets leaving on channel ``nxt`` with ``vc`` (made and registered on first use)."""
        key = nxt * self.vcs + vc
        q = self.voqs.get(key)
        if q is None:
            q = self.voqs[key] = VirtualOutputQueue(self, nxt, vc)
            if self.sched is None:
                q.port = self.ports[nxt]
                q.port.add_requester(q)
            else:
                self.sched.add_voq(q)
        return q

    def route_voq(self, p: Packet, hop: int) -> VirtualOutputQueue:
        """The VOQ ``p`` waits in before route index ``hop``: looked up on the route's first packet
        here and kept in ``p.voqs`` (shared by the packets of its flow)."""
        q = p.voqs[hop] = self.voq_for(p.route[hop], self.vc_at[hop])
        return q

    def arrive(self, p: Packet) -> None:
        """``p`` may leave this node: queue it for its next channel and request that output."""
        self.pending -= 1
        hop = p.hop + 1
        q = p.voqs[hop]
        if q is None:
            q = self.route_voq(p, hop)
        self.held += 1
        if self.fifo:
            fifo = self.fifos[self.vc_at[p.hop]]
            fifo.append(p)
            if len(fifo) > 1:
                if self.obs is not None:
                    self.obs.queue(self.cid, self.events.now, self.held)
                return
        q.push(p)
        if self.obs is not None:
            self.obs.queue(self.cid, self.events.now, self.held)
        # ask whoever decides: the output port now, or the scheduler at the next slot
        if self.sched is None:
            q.port.kick()
        else:
            self.sched.request(q, self.events.now)

    def waiting_for(self) -> list[int]:
        """Channel ids the packets at the heads of this buffer's VOQs wait for, in the order the
        VOQs were made (a channel may repeat: one VOQ per VC); for deadlock reports."""
        return [q.head.route[q.head.hop + 1] for q in self.voqs.values() if q.head is not None]

    def expect(self, p: Packet, t: float) -> None:
        """Schedule ``p``'s arrival here at ``t``."""
        p.callback = self.arrive_cb
        self.pending += 1
        self.events.push(t, p)

    def leave(self, p: Packet, t_free: float, read_free: float | None = None) -> None:
        """``p`` (arrived on this channel, popped from its VOQ) leaves the buffer: its space frees at
        ``t_free`` (its tail left), so its credits go back upstream; a FIFO's next head may request.
        ``read_free``: output crossbar, the time the input's crossbar read is free again (``xbar``)."""
        if read_free is not None:
            self.xbar = read_free
        vc = self.vc_at[p.hop]
        self.up.release(t_free, vc, p.wire)
        self.held -= 1
        if self.obs is not None:
            self.obs.queue(self.cid, self.events.now, self.held)
        if self.fifo:
            fifo = self.fifos[vc]
            fifo.popleft()
            if fifo:
                nxt_p = fifo[0]
                h = nxt_p.hop + 1
                q = self.voq_for(nxt_p.route[h], self.vc_at[h])
                q.push(nxt_p)
                if self.sched is None:
                    self.ports[q.nxt].wake(self.events.now)
                else:
                    self.sched.request(q, self.events.now)


class BufferPool:
    """Packet slots of output queues beyond the one slot each queue keeps for itself: one pool per
    output queue (dedicated buffers), or one per switch shared by all its output queues (a
    shared-memory switch). The own slot means an empty queue can always take a packet, so one VC
    filling a shared pool can never stop another VC (VCs stay deadlock-free)."""

    __slots__ = ("free", "blocked")

    def __init__(self, packets: int) -> None:
        self.free = packets
        """Packets that still fit."""
        self.blocked = False
        """A request was withheld because the pool was full (a freed slot pokes the scheduler)."""


class OutputQueue:
    """Matching crossbar: packets of one VC that crossed the switch and wait for their output link.

    The requester the output port sees (rank = VC; a ``requester.CrossedRequester``). The scheduler
    matches an input to this output only while the queue's ``pool`` has room (the queue is credited
    towards the crossbar). A slot frees when the port starts sending the packet (it moves to the
    serializer).
    """

    __slots__ = ("q", "head", "inbuf", "rank", "weight", "grants", "name", "pool", "sched", "crossed")

    def __init__(self, sched: Scheduler, vc: int, pool: BufferPool, inbuf) -> None:
        self.crossed = True
        """Packets here already left their input buffer (credits upstream are on their way back)."""
        self.q: deque[Packet] = deque()
        """The packets behind the head."""
        self.head: Packet | None = None
        self.inbuf = inbuf
        """An ``Endpoint``: no crossbar-read constraint at the output side."""
        self.rank = vc
        self.weight = 1
        self.grants = 0
        self.name = f"vc{vc}"
        self.pool = pool
        self.sched = sched

    push = VirtualOutputQueue.push
    pop = VirtualOutputQueue.pop
    __len__ = VirtualOutputQueue.__len__

    def admits(self) -> bool:
        """True if the crossbar may deliver one more packet: the queue's own slot is free, or its
        pool has one. False marks the pool blocked, so that the slot freeing pokes the scheduler
        (``sent``)."""
        if self.head is None or self.pool.free > 0:
            return True
        self.pool.blocked = True
        return False

    def add(self, p: Packet) -> None:
        """A packet crossed into the queue (takes the own slot, or one of the pool)."""
        if self.head is not None:
            self.pool.free -= 1
        self.push(p)

    def sent(self, now: float) -> None:
        """The port took the head: its slot frees; a withheld request may now be matched."""
        pool = self.pool
        if self.head is not None:  # more than one packet was queued: a pool slot frees
            pool.free += 1
        if pool.blocked:
            pool.blocked = False
            self.sched.poke(now)


class Endpoint:
    """Stand-in input for injection at a source node and for output queues: no crossbar constraint
    (a ``requester.CrossbarRead`` whose read is always free)."""

    __slots__ = ("xbar",)

    def __init__(self) -> None:
        self.xbar = float("-inf")
