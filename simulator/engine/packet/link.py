"""One channel (one direction of a link) seen from its sender: serialization, propagation, credits.

The sender port serializes one packet at a time at the channel rate, holds the credit counter of the
receiver's buffer, and arbitrates among the requesters that want the channel (switch input VOQs and
local injection). Credit updates travel back as timestamped entries in a small heap that the port
absorbs lazily whenever it looks at its credits; only a port that is actually blocked schedules a
wake-up, one event at the earliest return. A port that finishes a packet with nothing queued
schedules nothing at all: its ``busy_until`` is enough for the next arrival to wait on.
"""

from __future__ import annotations

import heapq
import math
from heapq import heappush
from typing import TYPE_CHECKING

from simulator.engine.packet.credits import StaticCredits, credits_for
from simulator.engine.packet.packet import PortWake, Wake
from simulator.topology.fabric import Channel

if TYPE_CHECKING:
    from simulator.engine.packet.network import PacketNetwork

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


class OutputPort:
    """Sender side of one channel: requesters, arbiter, credit counter, serializer."""

    __slots__ = ("cid", "name", "net", "env", "spb", "latency", "node_latency", "next_latency",
                 "credits", "batcher", "credit_bytes", "full_wire", "full_k", "max_k", "max_bytes",
                 "full_advance", "ret_lag", "rets",
                 "busy_until", "wake_at", "blocked", "stall_since", "stall_s", "busy_s", "bytes",
                 "sent", "reqs", "arbiter", "speedup", "cut_through", "vc_max", "obs", "wake_cbs",
                 "reverse", "response_spb",
                 "spare", "streams")

    def __init__(self, net: "PacketNetwork", channel: Channel, *, spb: float, node_latency: float,
                 next_latency: float, credits, batcher, ret_lag: float, full_wire: int, max_k: int, arbiter,
                 speedup: float, cut_through: bool, vc_max: int, obs) -> None:
        self.cid = channel.id
        self.name = f"{channel.src}->{channel.dst}#{channel.id}"
        self.net = net
        self.env = net.env
        self.spb = spb
        """Seconds per wire byte."""
        self.latency = channel.latency_s
        self.node_latency = node_latency
        """Forwarding latency of the sending node (s): a tail cannot leave before tail-in + this."""
        self.next_latency = next_latency
        """Forwarding latency of the receiving node (s), added before it may forward a packet."""
        self.credits = credits
        self.batcher = batcher
        """Receiver side of this channel's credits (batching of returns)."""
        self.credit_bytes = channel.credit.credit_bytes
        self.full_wire = full_wire
        self.max_k = max_k
        """Most credits one packet may take (a packet bigger than the buffer takes all of it)."""
        self.full_k = min(credits_for(full_wire, channel.credit.credit_bytes), max_k)
        """Credits of a full packet (precomputed)."""
        self.max_bytes = max_k * channel.credit.credit_bytes
        """Usable buffer of one packet (bytes)."""
        self.full_advance = max(0, full_wire - self.max_bytes) * spb
        """Coarse mode: how much earlier a full packet's space frees than its tail leaves (s)."""
        self.ret_lag = ret_lag
        """Credit return delay + reverse propagation (s)."""
        self.rets: list[tuple[float, int, int]] = []
        """Credit updates on their way back: heap of (arrival time, vc, credits)."""
        self.busy_until = -INF
        self.wake_at = INF
        """Time of the earliest wake-up already scheduled."""
        self.blocked = False
        """Had a packet to send but no credits at the last look."""
        self.stall_since = -1.0
        self.stall_s = 0.0
        self.busy_s = 0.0
        self.bytes = 0
        self.sent = 0
        self.reqs: list = []
        """Requesters in ascending rank (VOQs of inputs at this node, local injector)."""
        self.arbiter = arbiter
        self.speedup = speedup
        self.cut_through = cut_through
        self.vc_max = vc_max
        self.obs = obs
        self.wake_cbs = (self.kick,)
        self.spare: PortWake | None = None
        """A spent wake-up of this port, reused by the next ``wake``."""
        self.streams = obs is None and type(credits) is StaticCredits and net.eager
        """Single-hop injections may take ``_stream`` (see there)."""
        self.reverse: OutputPort | None = None
        """The port of this link's other direction, when it carries responses for our bytes."""
        self.response_spb = 0.0
        """Reverse-port seconds per payload byte sent here (``Channel.reverse_overhead`` x its s/B)."""

    def respond(self, nbytes: int, now: float) -> None:
        """The receiver answers ``nbytes`` of payload (write responses, acknowledgements): the
        reverse direction's serializer is busy for them at its first free moment, so a link loaded
        both ways moves less each way (``Channel.reverse_overhead``)."""
        rev = self.reverse
        start = rev.busy_until if rev.busy_until > now else now
        cost = nbytes * self.response_spb
        rev.busy_until = start + cost
        rev.busy_s += cost

    def add_requester(self, req) -> None:
        """Register a VOQ or injector (kept sorted by rank)."""
        self.reqs.append(req)
        self.reqs.sort(key=lambda r: r.rank)

    def cost_of(self, wire: int) -> tuple[int, float]:
        """Credits a packet of ``wire`` bytes takes, and how much earlier its credits come back when
        it is larger than the buffer (coarse mode, see ``release``); full-size packets use the
        precomputed ``full_k``/``full_advance``."""
        advance = (wire - self.max_bytes) * self.spb if wire > self.max_bytes else 0.0
        return self.credits_of(wire), advance

    def credits_of(self, wire_bytes: int) -> int:
        """Credits a packet of ``wire_bytes`` takes on this channel (capped at ``max_k``)."""
        k = credits_for(wire_bytes, self.credit_bytes)
        return k if k < self.max_k else self.max_k

    # -- wake-ups -------------------------------------------------------------------------------
    def wake(self, t: float) -> None:
        """Make sure the port looks again at time ``t`` (one event, de-duplicated)."""
        if t < self.wake_at:
            self.wake_at = t
            env = self.env
            now = env._now
            # env.schedule(Wake(self.kick, t), 1, t - now) inlined (same event time and order)
            w = self.spare
            if w is None:
                w = PortWake(self.wake_cbs, t)
            else:  # reuse the port's last spent wake-up (one allocation less per packet-hop)
                self.spare = None
                w.at = t
            heappush(env._queue, (now + (t - now), 1, next(env._eid), w))

    def release(self, t_free: float, vc: int, wire: int) -> None:
        """The receiver frees the space of a ``wire``-byte packet of ``vc`` at ``t_free`` (its tail
        left or was delivered): the credits go back after ``ret_lag`` (maybe batched).

        Coarse mode (packet larger than the usable buffer): the unit streams through the buffer,
        so the space its head needs again frees (wire - buffer) serialization times before its tail
        leaves; the return is advanced by that much. This keeps large transfer units at line rate
        when the buffer covers the credit loop (real NVLink/IB buffers do) and is optimistic by up
        to wire/buffer when it does not: study credit loops with packets smaller than the buffer.
        """
        k, advance = (self.full_k, self.full_advance) if wire == self.full_wire else self.cost_of(wire)
        batcher = self.batcher
        if batcher.batch != 1:  # batcher.free(vc, k) inlined
            held = batcher.held[vc] + k
            k = held - held % batcher.batch
            batcher.held[vc] = held - k
        if k:
            t = t_free - advance + self.ret_lag
            now = self.env._now
            if t < now:
                t = now
            heapq.heappush(self.rets, (t, vc, k))
            if self.blocked:
                self.wake(t)

    def _absorb(self, now: float) -> None:
        rets, credits, obs = self.rets, self.credits, self.obs
        while rets and rets[0][0] <= now + EPS_S:
            t, vc, k = heapq.heappop(rets)
            credits.give(vc, k)
            if obs is not None:
                obs.credits(self.cid, t, credits.available())

    # -- arbitration and sending --------------------------------------------------------------
    def kick(self, ev: Wake | None = None) -> None:
        """Send the next packet if the channel is free and a requester has credits for its head.

        ``ev``: the port's own wake-up when called as its event callback (the wake-up is spent).
        """
        if ev is not None:
            if ev.at >= self.wake_at:
                self.wake_at = INF
            self.spare = ev
        now = self.env._now
        soon = now + EPS_S
        if self.busy_until > soon:
            self.wake(self.busy_until)
            return
        credits = self.credits
        rets = self.rets
        if rets and rets[0][0] <= soon:
            if self.obs is None:  # _absorb(now) inlined
                while rets and rets[0][0] <= soon:
                    _, vc, k = heapq.heappop(rets)
                    credits.give(vc, k)
            else:
                self._absorb(now)
        vc_max = self.vc_max
        reqs = self.reqs
        if len(reqs) == 1:
            r = reqs[0]
            p = r.head
            if p is None:
                return
            if p.hop < 0 and self.streams and len(p.route) == 1:
                self._stream(r, p, now)
                return
            xbar = r.inbuf.xbar
            if xbar > soon:
                self.wake(xbar)
                return
            w = p.wire
            k = self.full_k if w == self.full_wire else self.credits_of(w)
            vc = p.hop + 1
            if vc > vc_max:
                vc = vc_max
            if not credits.fits(vc, k):
                self._stall(now)
                return
            self._send(r, p, k, vc, now)
            return
        cands = []
        xbar_next = INF
        starved = False
        for r in reqs:
            p = r.head
            if p is None:
                continue
            xbar = r.inbuf.xbar
            if xbar > soon:
                if xbar < xbar_next:
                    xbar_next = xbar
                continue
            w = p.wire
            k = self.full_k if w == self.full_wire else self.credits_of(w)
            vc = p.hop + 1
            if vc > vc_max:
                vc = vc_max
            if credits.fits(vc, k):
                cands.append(r)
            else:
                starved = True
        if not cands:
            if xbar_next < INF:
                self.wake(xbar_next)
            if starved:
                self._stall(now)
            return
        r = cands[0] if len(cands) == 1 else self.arbiter.pick(cands)
        p = r.head
        w = p.wire
        k = self.full_k if w == self.full_wire else self.credits_of(w)
        vc = p.hop + 1
        if vc > vc_max:
            vc = vc_max
        self._send(r, p, k, vc, now)

    def _stall(self, now: float) -> None:
        self.blocked = True
        if self.stall_since < 0:
            self.stall_since = now
        if self.rets:
            self.wake(self.rets[0][0])

    def _stream(self, r, p, now: float) -> None:
        """``kick`` + ``_send`` specialised for the commonest packet-hop of collectives: the only
        requester is the local injector and the packet's one-hop route ends at the receiver (NVLS
        up/down transfers, copies into a switch). Ports with static credits and no observer only
        (``streams``); same arithmetic in the same order as the general path, fewer lookups."""
        w = p.wire
        k, advance = (self.full_k, self.full_advance) if w == self.full_wire else self.cost_of(w)
        credits = self.credits
        used = credits.used
        u = used[0] + k  # a packet at its source travels on VC 0
        if u > credits.cap:  # credits.fits(0, k)
            self._stall(now)
            return
        r.pop()
        r.grants += 1
        used[0] = u  # credits.take(0, k): cannot exceed the cap here
        if u > credits.peak:
            credits.peak = u
        self.blocked = False
        if self.stall_since >= 0:
            self.stall_s += now - self.stall_since
            self.stall_since = -1.0
        p.hop = 0
        end = now + w * self.spb
        p.t_inject = now
        net = self.net
        nbytes = p.bytes
        net.bytes_injected += nbytes
        net.packets_injected += 1
        tid = p.tid
        if not net.started[tid]:
            net.started[tid] = 1
            net.start_s[tid] = now
        self.busy_until = end
        self.busy_s += end - now
        self.bytes += nbytes
        self.sent += 1
        if self.reverse is not None:
            self.respond(nbytes, now)
        t_tail = end + self.latency
        p.t_tail = t_tail
        # self.release(t_tail, 0, w) inlined (the port is not blocked: no wake-up)
        batcher = self.batcher
        if batcher.batch != 1:
            held = batcher.held[0] + k
            k = held - held % batcher.batch
            batcher.held[0] = held - k
        if k:
            t = t_tail - advance + self.ret_lag
            if t < now:
                t = now
            heappush(self.rets, (t, 0, k))
        net.deliver_ahead(p, t_tail)
        if r.head is not None:
            self.wake(end)

    def _send(self, r, p, k: int, vc: int, now: float) -> None:
        r.pop()
        r.grants += 1
        self.credits.take(vc, k)
        self.blocked = False
        if self.stall_since >= 0:
            self.stall_s += now - self.stall_since
            self.stall_since = -1.0
        hop = p.hop + 1
        p.hop = hop
        end = now + p.wire * self.spb
        route = p.route
        net = self.net
        if hop == 0:
            p.t_inject = now
            # the first byte left its source: injection totals, the transfer's start
            net.bytes_injected += p.bytes
            net.packets_injected += 1
            tid = p.tid
            if not net.started[tid]:
                net.started[tid] = 1
                net.start_s[tid] = now
        else:
            p.queue_s += now - p.t_ready
            bound = p.t_tail + self.node_latency
            if end < bound:
                end = bound  # cut-through cannot outrun the incoming tail
            up = net.ports[route[hop - 1]]
            w = p.wire
            up_vc = hop - 1 if hop - 1 < self.vc_max else self.vc_max
            up.release(end, up_vc, w)
            inbuf = r.inbuf
            inbuf.xbar = now + (end - now) / self.speedup
            inbuf.held -= 1
            if self.obs is not None:
                self.obs.queue(inbuf.cid, now, inbuf.held)
            if net.fifo_mode:
                net.unstage(inbuf, p)
        self.busy_until = end
        self.busy_s += end - now
        self.bytes += p.bytes
        self.sent += 1
        if self.reverse is not None:
            self.respond(p.bytes, now)
        t_tail = end + self.latency
        p.t_tail = t_tail
        env = self.env
        # env.schedule(p, 1, at - now) inlined: this line runs once per packet-hop
        if hop == len(route) - 1:
            # the sink frees the space when the tail arrives; known now, so the credits are queued
            # now (a coarse unit's return may precede its delivery, see ``release``)
            self.release(t_tail, hop if hop < self.vc_max else self.vc_max, p.wire)
            if net.eager:
                net.deliver_ahead(p, t_tail)
            else:
                p.callbacks = net.deliver_cbs
                heappush(env._queue, (t_tail, 1, next(env._eid), p))
        else:
            ready = (now + self.latency if self.cut_through else t_tail) + self.next_latency
            p.t_ready = ready
            p.callbacks = net.arrive_cbs
            heappush(env._queue, (ready, 1, next(env._eid), p))
        obs = self.obs
        if obs is not None:
            obs.link_busy(self.cid, now, end, p)
            obs.credits(self.cid, now, self.credits.available())
        if len(self.reqs) > 1 or r.head is not None:
            self.wake(end)
