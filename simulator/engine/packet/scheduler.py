"""The matching crossbar of one switch: every cell time, request -> grant -> accept, then the matched
packets cross into output queues.

Time is cut into slots of one *cell time* (a full packet on the switch's fastest port) divided by
the speedup S, so S matchings happen per cell time. At the start of a slot:

1. **Request.** Every input asks each output for which one of its VOQs holds a packet that is
   ready (its head arrived and the switch latency passed) and whose output queue has room (the
   output queue is credited towards the crossbar; with ``shared_buffer`` all output queues of the
   switch draw on one pool, a shared-memory switch). An input with several VCs for one output offers
   the one that has waited longest.
2. **Grant / accept**, ``iterations`` rounds, by the switch's ``Allocator`` (iSLIP, PIM, ...):
   each unmatched output grants one requesting unmatched input, each input accepts one grant.
3. **Cross.** Each matched VOQ moves its head into the output queue. The packet leaves its input
   buffer when its tail has crossed (one slot later, or when the tail arrives if later), which is
   when its credits start back upstream (``InputBuffer.leave``). The output port serializes from
   its output queues at the link rate, gated by the link's credits as on every hop.

The scheduler is event-driven but gives the matchings of a slotted switch: it ticks only while some
VOQ has a packet, always on the slot grid, and wakes at the first slot after a packet becomes ready
or an output queue frees. A switch with nothing waiting costs no events.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Sequence

import numpy as np

from simulator.engine.packet.allocators import ALLOCATORS
from simulator.engine.packet.packet import Wake
from simulator.engine.packet.switch import BufferPool, Endpoint, OutputQueue, VirtualOutputQueue

if TYPE_CHECKING:
    from simulator.engine.packet.events import EventQueue
    from simulator.engine.packet.link import OutputPort

EPS_S = 1e-15
"""Time tolerance (s), as in ``link``: sums of the same delays in another order differ by rounding."""
SNAP = 1e-6
"""Slot fraction: a time within a millionth of a slot after a boundary belongs to that boundary
(sums of the same delays in another order differ by float rounding)."""
LATE = 1e-9
"""Slot fraction: a slot's matching runs this long after its boundary, so that every packet that
arrives *at* the boundary (up to rounding, or later in that instant's event order) takes part."""


class CrossbarScheduler:
    """Request-grant-accept matching of one switch, one matching per slot."""

    def __init__(self, name: str, in_cids: Sequence[int], weights: Sequence[int], ports: Sequence["OutputPort"], *,
                 arbiter: str, iterations: int, slot_s: float, output_queue_packets: int,
                 shared_buffer: bool, rng: np.random.Generator, events: "EventQueue") -> None:
        self.name = name
        self.ports = list(ports)
        """Output ports of the switch; index = output number."""
        self.inputs = {cid: i for i, cid in enumerate(in_cids)}
        """Input channel id -> input number."""
        self.outputs = {p.cid: j for j, p in enumerate(ports)}
        """Output channel id -> output number."""
        self.voqs: list[list[VirtualOutputQueue]] = [[] for _ in in_cids]
        """Per input: its VOQs (every VC of every output it has used)."""
        self.waiting: dict[VirtualOutputQueue, int] = {}
        """VOQs holding packets -> their input number (what a slot scans; a big idle switch costs little)."""
        self.oqs: dict[tuple[int, int], OutputQueue] = {}
        """(output, VC) -> output queue."""
        self.allocator = ALLOCATORS[arbiter](len(in_cids), len(ports), rng, weights)
        """Weights: per input, from ``PacketConfig.arbiter_weights`` (weighted_rr, fixed_priority)."""
        self.iterations = iterations
        self.slot_s = slot_s
        """Length of one matching slot: cell time / speedup (s)."""
        self.capacity = output_queue_packets
        """Packets per output queue (dedicated), or per output (shared)."""
        self.shared = BufferPool((output_queue_packets - 1) * len(ports)) if shared_buffer else None
        """Shared-memory switch: the pool every output queue draws on beyond its own slot (so
        output_queue_packets x outputs packets in all when one VC per output is in use)."""
        self.events = events
        self.next_k = math.inf
        """Slot number of the tick already scheduled (inf: none)."""
        self.last_k = -1
        """Slot number of the last tick run (one matching per slot)."""
        self.endpoint = Endpoint()
        self.slots = 0
        """Slots in which a matching was computed (statistics)."""
        self.matched = 0
        """Packets moved through the crossbar (statistics)."""

    # -- wiring ---------------------------------------------------------------------------------
    def add_voq(self, q: VirtualOutputQueue) -> None:
        """Register a new VOQ of one of this switch's inputs (called by ``InputBuffer.voq_for``)."""
        out = self.outputs[q.nxt]
        oq = self.oqs.get((out, q.vc))
        if oq is None:
            pool = self.shared or BufferPool(self.capacity - 1)
            oq = self.oqs[(out, q.vc)] = OutputQueue(self, q.vc, pool, self.endpoint)
            self.ports[out].add_requester(oq)
        q.out, q.oq = out, oq
        self.voqs[self.inputs[q.inbuf.cid]].append(q)

    def request(self, q: VirtualOutputQueue, now: float) -> None:
        """``q`` has a (new) head: it takes part in the matchings from the next slot on."""
        self.waiting[q] = self.inputs[q.inbuf.cid]
        self.poke(now)

    def held(self) -> int:
        """Packets in the output queues (crossed, not yet sent)."""
        return sum(len(oq) for oq in self.oqs.values())

    # -- timing ---------------------------------------------------------------------------------
    def poke(self, t: float) -> None:
        """Make sure a matching runs at the first slot boundary at or after ``t`` (not twice in one slot)."""
        self._at(math.ceil(t / self.slot_s - SNAP))

    def _at(self, k: int) -> None:
        """Make sure a matching runs in slot ``k`` (or the next slot not yet matched)."""
        if k <= self.last_k:
            k = self.last_k + 1
        if k < self.next_k:
            self.next_k = k
            self.events.push((k + LATE) * self.slot_s, Wake(self.tick, k))

    def tick(self, ev: Wake) -> None:
        """One slot: collect requests, match, cross. ``ev.at`` is the slot number."""
        if ev.at != self.next_k:
            return  # superseded by an earlier tick
        self.next_k = math.inf
        self.last_k = ev.at
        now = self.events.now
        soon = now + EPS_S
        requests: dict[int, list[int]] = {}
        age: dict[tuple[int, int], float] = {}
        offer: dict[tuple[int, int], VirtualOutputQueue] = {}
        later = math.inf
        for q, i in self.waiting.items():
            p = q.head
            if p.t_ready > soon:
                later = min(later, p.t_ready)
                continue
            if not q.oq.admits():  # full: withheld (a freed slot pokes the scheduler)
                continue
            key = (i, q.out)
            best = offer.get(key)
            if best is None:
                requests.setdefault(q.out, []).append(i)
            elif p.t_ready >= best.head.t_ready:
                continue
            offer[key] = q
            age[key] = p.t_inject
        if requests:
            self.slots += 1
            for inputs in requests.values():
                inputs.sort()
            for i, out in self.allocator.match(requests, age, self.iterations).items():
                self._cross(offer[(i, out)], now)
            self._at(ev.at + 1)
        if later < math.inf:
            self.poke(later)

    def _cross(self, q: VirtualOutputQueue, now: float) -> None:
        """Move ``q``'s head through the crossbar into its output queue."""
        p = q.pop()
        if q.head is None:
            del self.waiting[q]
        q.grants += 1
        self.matched += 1
        t_free = now + self.slot_s
        if t_free < p.t_tail:
            t_free = p.t_tail  # cut-through: the tail cannot leave before it has arrived
        q.inbuf.leave(p, t_free)
        p.queue_s += now - p.t_ready
        p.t_ready = now  # from here on it waits in the output queue
        q.oq.add(p)
        self.ports[q.out].kick()
