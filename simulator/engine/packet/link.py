"""One channel (one direction of a link) seen from its sender: serialization, propagation, credits.

The sender port serializes one packet at a time at the channel rate, holds the credit counter of the
receiver's buffer, and arbitrates among the requesters that want the channel (switch input VOQs,
a matching switch's output queues, local injection). How one packet moves, top to bottom:

1. ``kick``: the channel is free; among requesters whose head fits the credits (a packet's VC
   is ``vc_at[hop]``, its credits ``cost(wire)``) the arbiter picks one.
2. ``_send``: take the credits, serialize, let the packet leave its input buffer (which frees the
   space upstream, ``InputBuffer.leave``), and schedule its arrival at the next node (or account its
   delivery with the ``DeliveryLedger``).
3. ``release``: when the receiver frees the space, the credits travel back (maybe batched);
   ``_absorb`` takes them into the counter when the port next looks.

Credit updates travel back as timestamped entries in a small heap that the port absorbs lazily
whenever it looks at its credits; only a port that is actually blocked schedules a wake-up, one
event at the earliest return. A port that finishes a packet with nothing queued schedules nothing
at all: its ``busy_until`` is enough for the next arrival to wait on.
"""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from typing import TYPE_CHECKING

from simulator.engine.packet.credits import CreditBatcher, StaticCredits, credits_for
from simulator.engine.packet.events import EventQueue
from simulator.engine.packet.ledger import DeliveryLedger
from simulator.engine.packet.packet import Packet, Wake
from simulator.engine.packet.switch import InputBuffer
from simulator.topology.fabric import Channel

if TYPE_CHECKING:
    from simulator.engine.packet.arbiters import Arbiter
    from simulator.engine.packet.requester import CrossbarRead

EPS_S = 1e-15
"""Time tolerance (s): sums of the same delays in a different order differ by float rounding."""
INF = math.inf


def serialization_rate_Bps(channel: Channel, header_bytes: int) -> float:
    """Rate packets are clocked out at: the payload rate when headers are folded into the channel's
    protocol efficiency (``header_bytes == 0``), else the line rate for payload + header."""
    return channel.rate_Bps if header_bytes == 0 else channel.line_rate_Bps


def credit_loop_rtt_s(channel: Channel, packet_bytes: int, header_bytes: int = 0,
                      reverse_latency_s: float | None = None) -> float:
    """Credit round-trip of one packet on a link into a sink (s): how long its buffer space is held.

    Derivation, in this engine's model: the sender takes the packet's credits when it starts
    serializing at t0. The tail finishes leaving at t0 + s, with s = (payload + header) / rate
    (``serialization_rate_Bps``), and has fully arrived at t0 + s + L (L = ``channel.latency_s``).
    A sink frees the space when the tail has arrived; the receiver waits ``return_delay_s`` (d)
    before sending the credit, which then crosses the reverse direction in L_rev. So the space is
    reusable at t0 + RTT with

        RTT = s + L + d + L_rev.

    A buffer of W bytes therefore sustains at most W / RTT wire bytes per second, and the link
    throughput is min(rate, W / RTT) (``credit_limited_rate_Bps``). Exact when W holds a whole
    number of packets and ``batch == 1``; batching withholds up to (batch - 1) credits. Packets
    larger than W (coarse transfer units) are approximate, see ``OutputPort.release``.
    ``reverse_latency_s`` defaults to ``channel.latency_s`` (links are symmetric).
    """
    rate = serialization_rate_Bps(channel, header_bytes)
    back = channel.latency_s if reverse_latency_s is None else reverse_latency_s
    return (packet_bytes + header_bytes) / rate + channel.latency_s + channel.credit.return_delay_s + back


def credit_limited_rate_Bps(channel: Channel, packet_bytes: int, header_bytes: int = 0,
                            reverse_latency_s: float | None = None) -> float:
    """Closed-form payload throughput of one saturated link: min(rate, buffer / RTT) (B/s, one way).

    With headers, both terms are scaled to payload (a fraction payload / (payload + header) of the
    wire bytes is payload).
    """
    rtt = credit_loop_rtt_s(channel, packet_bytes, header_bytes, reverse_latency_s)
    payload_share = packet_bytes / (packet_bytes + header_bytes)
    wire_rate = serialization_rate_Bps(channel, header_bytes)
    return min(wire_rate, channel.credit.buffer_bytes / rtt) * payload_share


class CostTable(dict):
    """Packet size -> its ``OutputPort.cost``: ``rule(wire)`` runs on the first look-up of a size
    only (a run has one or two sizes), so the hot path pays one dict look-up per packet."""

    __slots__ = ("rule",)

    def __init__(self, rule) -> None:
        super().__init__()
        self.rule = rule

    def __missing__(self, wire: int) -> tuple[int, float]:
        cost = self[wire] = self.rule(wire)
        return cost


class OutputPort:
    """Sender side of one channel: requesters, arbiter, credit counter, serializer."""

    __slots__ = ("cid", "name", "events", "ledger", "eager", "down", "spb", "latency", "node_latency",
                 "next_latency", "credits", "batcher", "credit_bytes", "full_wire", "costs", "max_k",
                 "max_bytes", "ret_lag", "rets", "ret_i", "ret_due", "ret_last", "back", "batched", "busy_until",
                 "wake_at", "stall_since", "stall_s", "busy_s", "bytes", "reqs", "shared", "arbiter", "speedup",
                 "cut_through", "vc_at", "obs", "spare", "reverse", "response_spb")

    def __init__(self, channel: Channel, *, events: EventQueue, ledger: DeliveryLedger, eager: bool,
                 spb: float, node_latency: float, next_latency: float, credits: StaticCredits,
                 batcher: CreditBatcher, ret_lag: float, full_wire: int, max_k: int, arbiter: "Arbiter",
                 speedup: float, cut_through: bool, vc_at: list[int], obs) -> None:
        self.cid = channel.id
        self.name = f"{channel.src}->{channel.dst}#{channel.id}"
        self.events = events
        self.ledger = ledger
        self.eager = eager
        """Account final-hop deliveries when the tail is sent (``DeliveryLedger.deliver_ahead``)
        instead of by an event when it lands (observers and fault injection need the events)."""
        self.down: InputBuffer | None = None
        """Receive buffer at the other end (set once the network has built it)."""
        self.spb = float(spb)
        """Seconds per wire byte."""
        self.latency = float(channel.latency_s)
        self.node_latency = float(node_latency)
        """Forwarding latency of the sending node (s): a tail cannot leave before tail-in + this."""
        self.next_latency = float(next_latency)
        """Forwarding latency of the receiving node (s), added before it may forward a packet."""
        self.credits = credits
        self.batcher = batcher
        """Receiver side of this channel's credits (batching of returns)."""
        self.batched = batcher.batch != 1
        """Returns go back in batches (else every freed credit goes back at once)."""
        self.credit_bytes = channel.credit.credit_bytes
        self.full_wire = full_wire
        self.max_k = max_k
        """Most credits one packet may take (a packet bigger than the buffer takes all of it)."""
        self.max_bytes = max_k * channel.credit.credit_bytes
        """Usable buffer of one packet (bytes)."""
        self.costs = CostTable(self._cost)
        """Wire bytes -> (credits, coarse-mode advance s): ``cost``, worked out once per size."""
        self.ret_lag = float(ret_lag)
        """Credit return delay + reverse propagation (s)."""
        self.rets: list[tuple[float, int, int]] = []
        """Credit updates on their way back, sorted: (arrival time, vc, credits); the ones before
        ``ret_i`` have been absorbed already (dropped in bulk, see ``_absorb``)."""
        self.ret_i = 0
        """Index in ``rets`` of the first update not yet absorbed."""
        self.ret_due = INF
        """Arrival time of the earliest update not yet absorbed (inf: none on the way)."""
        self.ret_last = -INF
        """Arrival time of the latest update in ``rets`` (-inf: none)."""
        self.back = [0] * len(credits.used)
        """Scratch of ``_absorb``: credits back per VC."""
        self.busy_until = -INF
        self.wake_at = INF
        """Time of the earliest wake-up already scheduled."""
        self.stall_since = -1.0
        """Start of the current credit stall (s), or -1: had a packet to send but no credits at the
        last look since (``blocked``)."""
        self.stall_s = 0.0
        self.busy_s = 0.0
        self.bytes = 0
        self.reqs: list = []
        """Requesters in ascending rank (VOQs of inputs at this node or output queues, local injector)."""
        self.shared = False
        """More than one requester: after a packet the port looks again (another may be waiting)."""
        self.arbiter = arbiter
        self.speedup = float(speedup)
        """Output crossbar: an input is busy for (serialization / speedup) per packet it feeds here."""
        self.cut_through = cut_through
        self.vc_at = vc_at
        """VC of a packet on the channel at route index i (one table for the run)."""
        self.obs = obs
        self.spare: Wake | None = None
        """A spent wake-up of this port, reused by the next ``wake``."""
        self.reverse: OutputPort | None = None
        """The port of this link's other direction, when it carries responses for our bytes."""
        self.response_spb = 0.0
        """Reverse-port seconds per payload byte sent here (``Channel.reverse_overhead`` x its s/B)."""

    @property
    def blocked(self) -> bool:
        """Had a packet to send but no credits at the last look (a credit stall is open)."""
        return self.stall_since >= 0.0

    @property
    def sent(self) -> int:
        """Packets sent so far: each one was granted to exactly one requester."""
        return sum(r.grants for r in self.reqs)

    def add_requester(self, req) -> None:
        """Register a VOQ, output queue or injector (kept sorted by rank)."""
        self.reqs.append(req)
        self.reqs.sort(key=lambda r: r.rank)
        self.shared = len(self.reqs) > 1

    # -- the rules: what a packet costs, credits back, credits in -------------------------------
    def cost(self, wire: int) -> tuple[int, float]:
        """Credits a packet of ``wire`` bytes takes on this channel (capped at ``max_k``: a packet
        bigger than the buffer takes all of it), and how much earlier its space frees than its tail
        leaves when it is bigger than the buffer (coarse mode, see ``release``). The hot path reads
        ``costs[wire]``, the same rule remembered per size."""
        return self.costs[wire]

    def _cost(self, wire: int) -> tuple[int, float]:
        """The rule behind ``cost`` (``CostTable`` calls it once per packet size)."""
        k = credits_for(wire, self.credit_bytes)
        if k <= self.max_k:
            return k, 0.0
        return self.max_k, self.max_bytes * self.spb  # coarse: see ``release``

    def release(self, t_free: float, vc: int, wire: int) -> None:
        """The receiver frees the space of a ``wire``-byte packet of ``vc`` at ``t_free`` (its tail
        left or was delivered): the credits go back after ``ret_lag`` (maybe batched).

        Coarse mode (packet of w bytes larger than the usable buffer of W bytes): the unit streams
        through the buffer. When its tail has been sent, its last W bytes are in flight; the next
        unit's first byte needs the slot of the byte W from the end, which frees W serialization
        times (W x s/B) before the tail does. The whole return is advanced by that much, so the next
        unit may start at end + max(0, loop - W x s/B): line rate exactly when the buffer covers the
        credit loop (W >= rate x (latency + return delay + reverse latency), as real NVLink/IB
        buffers do, whatever w is), else w / (loop + (w - W) x s/B), between the flit-level W / loop
        and line rate (optimistic by up to w / W): study credit loops with packets smaller than the
        buffer. (Until this rule, the advance was (w - W) x s/B, which throttled units just above
        the buffer, e.g. 16 KiB on HGX H100's 16 KiB NVLink 4 buffer, to one unit per loop.)
        """
        k, advance = self.costs[wire]
        if self.batched:
            k = self.batcher.free(vc, k)
            if not k:
                return
        t = t_free - advance + self.ret_lag
        if advance:  # coarse: the space may free before now, the credits cannot travel back in time
            now = self.events.now
            if t < now:
                t = now
        if t > self.ret_last:  # the usual case: updates are made in the order they arrive
            self.rets.append((t, vc, k))
            self.ret_last = t
        else:  # same order as a heap of (time, vc, credits)
            insort(self.rets, (t, vc, k), self.ret_i)
        if t < self.ret_due:
            self.ret_due = t
        if self.stall_since >= 0.0:  # blocked: look again when the credits are back
            self.wake(t)

    def _absorb(self, until: float) -> None:
        """Take the credit updates that have arrived by ``until`` into the counter: one ``give``
        per VC for all of them (an observer sees each update as it lands)."""
        rets, i = self.rets, self.ret_i
        if self.ret_last <= until:  # all of them (the usual case for a port waiting on its credits)
            due = rets[i:] if i else rets
            self.rets, self.ret_i, self.ret_due, self.ret_last = [], 0, INF, -INF
        else:  # those up to ``until`` (sorted by time)
            j = bisect_right(rets, (until, INF), i)
            if j == i:
                return
            due = rets[i:j]
            self.ret_due = rets[j][0]
            if j > 256:  # drop the absorbed updates now and then
                del rets[:j]
                j = 0
            self.ret_i = j
        credits, obs = self.credits, self.obs
        if obs is not None or len(due) == 1:  # one by one: observed, or only one has landed
            for t, vc, k in due:
                credits.give(vc, k)
                if obs is not None:
                    obs.credits(self.cid, t, credits.available())
        else:  # many: one ``give`` per VC
            back = self.back
            for _, vc, k in due:
                back[vc] += k
            for vc, k in enumerate(back):
                if k:
                    back[vc] = 0
                    credits.give(vc, k)

    # -- wake-ups -------------------------------------------------------------------------------
    def wake(self, t: float) -> None:
        """Make sure the port looks again at time ``t`` (one event, de-duplicated)."""
        if t < self.wake_at:
            self.wake_at = t
            w = self.spare
            if w is None:
                w = Wake(self.kick, t)
            else:  # reuse the port's last spent wake-up (one allocation less per packet-hop)
                self.spare = None
                w.at = t
            self.events.push(t, w)

    # -- arbitration and sending --------------------------------------------------------------
    def kick(self, ev: Wake | None = None) -> None:
        """Send the next packet if the channel is free and a requester has credits for its head.

        ``ev``: the port's own wake-up when called as its event callback (the wake-up is spent).
        """
        if ev is not None:
            if ev.at >= self.wake_at:
                self.wake_at = INF
            self.spare = ev
        now = self.events.now
        soon = now + EPS_S
        if self.busy_until > soon:
            self.wake(self.busy_until)
            return
        if self.obs is not None and self.ret_due <= soon:
            self._absorb(soon)  # observed: the credit timeline shows every update as it lands
        # requesters whose head may go now: its input's crossbar read is free and its credits fit
        chosen = None
        cands = None
        xbar_next = INF
        starved = False
        for r in self.reqs:
            p = r.head
            if p is None:
                continue
            inbuf = r.inbuf
            xbar = inbuf.xbar
            if xbar > soon:  # its input feeds another output: it asks again when that is done
                if xbar < xbar_next:
                    xbar_next = xbar
                continue
            # the packet's VC on this channel and its credits (``cost``); it may go now (``start_time``)
            vc = self.vc_at[p.hop + 1]
            k = self.costs[p.wire][0]
            if self.start_time(now, inbuf, vc, k) == INF:
                starved = True
                continue
            if chosen is None:
                chosen = r
                chosen_vc = vc
                chosen_k = k
            else:  # a second candidate: the arbiter will decide
                if cands is None:
                    cands = {chosen: (chosen_vc, chosen_k)}
                cands[r] = (vc, k)
        if chosen is None:
            if xbar_next < INF:
                self.wake(xbar_next)
            if starved:
                self._stall(now)
            return
        if cands is not None:
            chosen = self.arbiter.pick(list(cands))
            chosen_vc, chosen_k = cands[chosen]
        p = chosen.pop()
        if self._send(chosen, p, chosen_vc, chosen_k, now):
            self.take_ahead(p)

    def _stall(self, now: float) -> None:
        if self.stall_since < 0.0:
            self.stall_since = now
        if self.ret_due < INF:
            self.wake(self.ret_due)

    def respond(self, nbytes: int, now: float) -> None:
        """The receiver answers ``nbytes`` of payload (write responses, acknowledgements): the
        reverse direction's serializer is busy for them at its first free moment, so a link loaded
        both ways moves less each way (``Channel.reverse_overhead``)."""
        self.reverse.reserve(now, nbytes * self.response_spb)

    def reserve(self, now: float, seconds: float) -> None:
        """Keep the serializer busy for ``seconds`` from its first free moment at or after ``now``
        (the other direction's responses, ``respond``)."""
        start = self.busy_until if self.busy_until > now else now
        self.busy_until = start + seconds
        self.busy_s += seconds

    def _send(self, r, p: Packet, vc: int, k: int, now: float) -> bool:
        """Send ``p``, granted to requester ``r`` (and taken from it), on ``vc`` with ``k`` credits,
        starting ``now``. True when its next hop is exclusive: the caller sends it on at once
        (``take_ahead``); else its next event (arrival or delivery) is scheduled or accounted."""
        r.grants += 1
        self.credits.take(vc, k)
        if self.stall_since >= 0.0:
            self.stall_s += now - self.stall_since
            self.stall_since = -1.0
        end = now + p.wire * self.spb
        hop = p.hop
        if hop < 0:
            self.ledger.injected(p, now)  # the first byte left its source
        else:
            p.queue_s += now - p.t_ready
            bound = p.t_tail + self.node_latency
            if end < bound:
                end = bound  # cut-through cannot outrun the incoming tail
            if r.crossed:  # from a matching switch's output queue: it left its input already
                r.sent(now)
            else:  # its input's crossbar read is busy while it crosses (output serialization / speedup)
                r.inbuf.leave(p, end, now + (end - now) / self.speedup)
        hop += 1
        p.hop = hop
        self.busy_until = end
        self.busy_s += end - now
        self.bytes += p.bytes
        if self.reverse is not None:
            self.respond(p.bytes, now)
        latency = self.latency
        t_tail = end + latency
        p.t_tail = t_tail
        ahead = False
        if hop == p.last:
            # the sink frees the space when the tail arrives; known now, so the credits are queued
            # now (a coarse unit's return may precede its delivery, see ``release``)
            self.release(t_tail, vc, p.wire)
            if self.eager:
                self.ledger.deliver_ahead(p, t_tail)
            else:
                p.callback = self.ledger.deliver_cb
                self.events.push(t_tail, p)
        else:
            ready = (now + latency if self.cut_through else t_tail) + self.next_latency
            p.t_ready = ready
            if hop + 1 < p.ahead:
                self.down.expect(p, ready)
            else:  # exclusive from here on (``ahead``): the caller sends it on at once
                ahead = True
        if self.obs is not None:
            self.obs.link_busy(self.cid, now, end, p)
            self.obs.credits(self.cid, now, self.credits.available())
        if self.shared or r.head is not None:
            self.wake(end)
        return ahead

    def start_time(self, t: float, inbuf: CrossbarRead, vc: int, k: int) -> float:
        """The start rule, one for ``kick`` and ``take_ahead``: a packet that may leave its input
        (``inbuf``) at ``t`` starts on this channel at the latest of ``t``, the serializer's free
        time (``busy_until``) and the input's crossbar read (``inbuf.xbar``), times within ``EPS_S``
        of the one before counting as equal, provided its ``k`` credits of ``vc`` fit with the
        credit updates back by then (taken into the counter, ``_absorb``). Returns that time, or
        ``INF`` when the credits do not fit: the packet waits for credits.

        The credits that come back before a start are taken in when it is asked, so the port is
        asked about a later start only where no other requester could see them early: ``kick``
        asks at ``now`` for packets whose input and serializer are free now (start ``now``),
        ``take_ahead`` at a later ``t`` only on channels one stream owns (``ahead``)."""
        start = t
        if self.busy_until > start + EPS_S:
            start = self.busy_until
        xbar = inbuf.xbar
        if xbar > start + EPS_S:
            start = xbar
        room = self.credits.room  # ``fits(vc, k)`` without a call: this runs once per packet-hop
        if room[vc] >= k:
            return start
        soon = start + EPS_S
        if self.ret_due <= soon:  # credits came back since the last look
            self._absorb(soon)
            if room[vc] >= k:
                return start
        return INF

    def take_ahead(self, p: Packet) -> None:
        """Send ``p``, which this port just sent, on over the exclusive rest of its route at once
        (``ahead``), hop after hop: each port sends it for the time its arrival event would, at
        ``t_ready`` or when the serializer and the input's crossbar read are free, as ``kick``
        would. Stops where an earlier packet of the stream is still queued or on its way, or where
        the credits do not fit with the returns known now: there its arrival event decides. Each
        hop taken counts as the arrival event it stands for (``EventQueue.ahead``)."""
        down = self.down
        hops = 0
        vc_at, voqs, wire = self.vc_at, p.voqs, p.wire  # the run's one VC table; the packet's VOQs, size
        while True:
            hop = p.hop + 1
            q = voqs[hop]
            if q is None:
                q = down.route_voq(p, hop)
            port = q.port
            if q.head is None and not down.pending:  # nothing of the stream before it here
                vc = vc_at[hop]
                k = port.costs[wire][0]
                start = port.start_time(p.t_ready, down, vc, k)
                if start < INF:
                    down.held += 1  # it enters the buffer and starts leaving at once (``leave``)
                    hops += 1
                    if port._send(q, p, vc, k, start):
                        down = port.down
                        continue
                    break  # delivered
            down.expect(p, p.t_ready)  # this hop by its event
            break
        self.events.ahead += hops

    def settle(self, now: float) -> None:
        """End of the run at ``now``: take in every credit update still on the wire (the counter
        must come back to zero) and close an open credit stall (only on a stuck run)."""
        self._absorb(INF)
        if self.stall_since >= 0.0:
            self.stall_s += now - self.stall_since
            self.stall_since = -1.0
