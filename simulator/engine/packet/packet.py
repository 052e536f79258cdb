"""The unit the engine moves: one packet, minimal, also its own event (no allocation per hop)."""

from __future__ import annotations

from simulator.engine.packet.ahead import NEVER


class Packet:
    """A piece of one transfer following one route. Doubles as the event scheduled for its next
    arrival (``callback`` is what ``EventQueue.run`` calls), so a hop costs no extra object.
    """

    __slots__ = ("callback", "seq", "tid", "route", "last", "voqs", "hop", "bytes", "wire", "t_inject",
                 "t_tail", "t_ready", "queue_s", "ahead")

    def __init__(self, seq: int, tid: int, route: tuple[int, ...], nbytes: int, wire: int,
                 voqs: list | None = None, ahead: int = NEVER) -> None:
        self.callback = None
        """What the event queue calls with this packet when it lands (set by the port that sends it)."""
        self.seq = seq
        """Global packet number (exactly-once bookkeeping)."""
        self.tid = tid
        self.route = route
        """Channel ids from source to destination."""
        self.last = len(route) - 1
        """Index in ``route`` of the final channel."""
        self.voqs = [None] * len(route) if voqs is None else voqs
        """Per route index i: the VOQ the packet waits in before channel ``route[i]``, once known
        (``InputBuffer.arrive`` looks it up on the route's first packet; shared by the packets of
        one flow)."""
        self.hop = -1
        """Index in ``route`` of the channel the packet is on (or last arrived over)."""
        self.bytes = nbytes
        """Payload bytes."""
        self.wire = wire
        """Bytes on the wire and in buffers (payload + header)."""
        self.t_inject = -1.0
        """When its first byte left the source (s)."""
        self.t_tail = 0.0
        """When its tail is (or will be) fully at the current node (s)."""
        self.t_ready = 0.0
        """When it became eligible to leave the current node (s)."""
        self.queue_s = 0.0
        """Time spent waiting at switches for arbitration, credits or a busy output (s)."""
        self.ahead = ahead
        """Route index from which every hop is exclusive, so the port before it may send the packet
        on without an event per hop (``ahead.suffix_start``; ``NEVER``: every hop by event)."""

    def __repr__(self) -> str:
        return f"Packet(seq={self.seq}, transfer={self.tid}, hop={self.hop}/{len(self.route)}, bytes={self.bytes})"


class Wake:
    """A one-shot event that calls ``fn(event)`` (port wake-ups, transfer releases, scheduler
    ticks); ``at`` is when it fires (s), or the owner's tag for it (a scheduler's slot number)."""

    __slots__ = ("callback", "at")

    def __init__(self, fn, at: float) -> None:
        self.callback = fn
        self.at = at
