"""What was injected and delivered, and when: the one place ports report to.

Ports call ``injected`` when a packet's first byte leaves its source and ``deliver_ahead`` (or, on
the observed path, the packet's ``deliver_cb`` event) when its tail reaches its destination. The
ledger keeps the run's totals, the exactly-once check, per-packet latency and queueing delay, and
tells the transfer DAG (``on_finish``) when a transfer's last byte has landed. Ports never touch the
network object, so ``link`` does not import ``network``.

Per-packet figures take memory bounded by ``PacketSample``: every packet up to ``limit`` packets,
then a systematic sample (every 2nd, 4th, ... packet), so a run of tens of millions of packets keeps
its latency percentiles in a few tens of MB instead of GBs.
"""

from __future__ import annotations

from array import array
from typing import Callable, Sequence

import numpy as np

from simulator.engine.packet.events import EventQueue
from simulator.engine.packet.packet import Packet, Wake


class PacketSample:
    """Per-packet figures (latency, queueing delay, and in eager mode the delivery time that orders
    them) of every ``every``-th packet accounted: all of them while at most ``limit`` are kept; when
    the arrays reach ``limit`` every other entry is dropped and ``every`` doubles. Deterministic (no
    random draws), and a systematic sample of a long run keeps its percentiles: with ``limit``
    = 2^20 at least 2^19 packets remain, so a p99 is off by about one sample rank."""

    __slots__ = ("limit", "every", "seen", "latency", "queue_delay", "delivered_at")

    def __init__(self, limit: int) -> None:
        self.limit = max(2, limit)
        self.every = 1
        """Packets per kept entry (a power of two)."""
        self.seen = 0
        """Packets accounted so far (kept: those whose number is a multiple of ``every``)."""
        self.latency = array("d")
        """Per kept packet: first byte out of the source to tail in at the destination (s)."""
        self.queue_delay = array("d")
        """Per kept packet: time waiting at switches (s)."""
        self.delivered_at = array("d")
        """Eager mode: delivery time of each kept packet (recorded in send order, sorted into
        delivery order at the end)."""

    def add(self, latency: float, queue_s: float, delivered_at: float | None) -> None:
        """Account one packet (kept or skipped)."""
        n = self.seen
        self.seen = n + 1
        if n & (self.every - 1):
            return
        self.latency.append(latency)
        self.queue_delay.append(queue_s)
        if delivered_at is not None:
            self.delivered_at.append(delivered_at)
        if len(self.latency) >= self.limit:
            self.latency = self.latency[::2]
            self.queue_delay = self.queue_delay[::2]
            self.delivered_at = self.delivered_at[::2]
            self.every *= 2

    def in_delivery_order(self, values: array) -> np.ndarray:
        """Kept figures in delivery order (eager mode records them in send order; a stable sort by
        delivery time restores the order of (time, sequence number), as those grow with sends)."""
        out = np.frombuffer(values, dtype=np.float64).copy()
        if self.delivered_at:
            when = np.frombuffer(self.delivered_at, dtype=np.float64)
            if (np.diff(when) < 0).any():
                out = out[np.argsort(when, kind="stable")]
        return out


class DeliveryLedger:
    """Injection and delivery accounting of one run."""

    def __init__(self, transfer_bytes: Sequence[int], n_packets: int, events: EventQueue,
                 on_finish: Callable[[int, float], None], observer=None, packet_stats: bool = True,
                 packet_stats_limit: int = 1 << 20) -> None:
        n = len(transfer_bytes)
        self.events = events
        self.on_finish = on_finish
        """Called with (transfer id, time s) when a transfer's last payload byte is delivered."""
        self.obs = observer
        self.start_s = np.full(n, np.nan)
        self.started = bytearray(n)
        """Per transfer: its first packet left (a plain flag, cheaper to test than a NaN)."""
        self.left = list(transfer_bytes)
        """Payload bytes of each transfer not yet delivered."""
        self.n_packets = n_packets
        self.seen = bytearray(n_packets)
        """Per packet number: delivered once already."""
        self.duplicates = 0
        self.bytes_injected = 0
        self.bytes_delivered = 0
        self.packets_injected = 0
        self.packets_delivered = 0
        self.sample = PacketSample(packet_stats_limit)
        """Per-packet latency and queueing delay (all packets, or a systematic sample of long runs)."""
        self.last_delivery_t = [-np.inf] * n
        self.last_delivery_seq = [0] * n
        """Eager mode, per transfer: event key (time, sequence number) of its latest delivery."""
        self.last_delivery_s = -np.inf
        """Eager mode: latest delivery time accounted so far (s)."""
        self.packet_stats = packet_stats
        """Record per-packet latency and queueing delay (else only totals)."""
        self.deliver_cb = self.deliver
        """Callback of a packet event at its destination (the engine may wrap them)."""

    def injected(self, p: Packet, now: float) -> None:
        """``p``'s first byte left its source at ``now``."""
        p.t_inject = now
        self.bytes_injected += p.bytes
        self.packets_injected += 1
        tid = p.tid
        if not self.started[tid]:
            self.started[tid] = 1
            self.start_s[tid] = now

    def _account(self, p: Packet, t: float) -> int:
        """Count ``p`` as delivered at ``t`` (bytes, exactly-once check, latency); returns its bytes."""
        nbytes = p.bytes
        self.bytes_delivered += nbytes
        self.packets_delivered += 1
        seq = p.seq
        if self.seen[seq]:
            self.duplicates += 1
        else:
            self.seen[seq] = 1
        return nbytes

    def deliver(self, p: Packet) -> None:
        """Event: ``p``'s tail reached its destination now (observed path)."""
        now = self.events.now
        nbytes = self._account(p, now)
        if self.packet_stats:
            self.sample.add(now - p.t_inject, p.queue_s, None)
        if self.obs is not None:
            self.obs.delivered(p, now)
        tid = p.tid
        left = self.left[tid] - nbytes
        self.left[tid] = left
        if left == 0:
            self.on_finish(tid, now)

    def deliver_ahead(self, p: Packet, t: float) -> None:
        """Eager mode: ``p``'s tail will reach its destination at ``t`` (its final hop just started).

        Accounts the delivery now and schedules nothing, except the transfer's finish when this was
        its last outstanding packet: that event gets the key (time, sequence number) of the latest
        delivery of the transfer, so it runs exactly where the observed path's last delivery event
        would (each delivery still reserves its sequence number, keeping every other event's order
        and the event count unchanged). Halves the events of single-hop traffic.
        """
        seq = self.events.reserve()
        nbytes = self._account(p, t)
        if self.packet_stats:
            self.sample.add(t - p.t_inject, p.queue_s, t)
        if t > self.last_delivery_s:
            self.last_delivery_s = t
        tid = p.tid
        if t >= self.last_delivery_t[tid]:  # ties: the later sequence number is the later delivery
            self.last_delivery_t[tid] = t
            self.last_delivery_seq[tid] = seq
        left = self.left[tid] - nbytes
        self.left[tid] = left
        if left == 0:
            t = self.last_delivery_t[tid]
            events = self.events
            self.events.push_as(t, self.last_delivery_seq[tid],
                                Wake(lambda ev: self.on_finish(tid, events.now), t))

    def local_copy(self, tid: int, nbytes: int) -> None:
        """A transfer whose source is its destination: its bytes count as injected and delivered."""
        self.bytes_injected += nbytes
        self.bytes_delivered += nbytes
        self.left[tid] = 0

    def in_flight(self) -> int:
        """Packets injected and not yet delivered."""
        return self.packets_injected - self.packets_delivered
