"""The packet engine's own event queue: a heap of (time, sequence number, event), ``push``/``pop``/``now``.

An event is any object with a ``callback`` (``Packet`` for its next arrival, ``Wake`` for
everything else); the run loop pops it, sets ``now`` and calls ``event.callback(event)``.
Events at the same time run in the order they were pushed (the sequence number breaks ties), which
is what makes a run with a given seed repeat exactly. Replaces SimPy's private
``_queue``/``_now``/``_eid``: every event here is made by the engine, so none of SimPy's process
machinery is needed.
"""

from __future__ import annotations

from heapq import heappop, heappush
from itertools import count
from typing import Any, Callable, Iterator


class EventQueue:
    """Time-ordered events of one run (times in simulated seconds)."""

    __slots__ = ("heap", "now", "ids", "reserve", "stopped", "ahead")

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, Any]] = []
        """Pending events as (time s, sequence number, event)."""
        self.now = 0.0
        """Time of the event being processed (s)."""
        self.ids: Iterator[int] = count()
        """Sequence numbers: one per event pushed (or reserved)."""
        self.reserve: Callable[[], int] = self.ids.__next__
        """``reserve()``: a sequence number for an event that may be pushed later with ``push_as``
        (keeps the order it would have had if pushed now): the counter's own ``__next__``, so no
        Python call is spent on it (an eager delivery reserves one per packet)."""
        self.stopped = False
        """Set by ``stop``: ``run`` returns after the current event."""
        self.ahead = 0
        """Arrival events never scheduled because their hop was taken ahead (``OutputPort.take_ahead``):
        a run's event count includes them, so it does not depend on whether hops were taken ahead."""

    def push(self, t: float, event: Any) -> None:
        """Schedule ``event`` at time ``t`` (s), after every event already scheduled at ``t``."""
        heappush(self.heap, (t, next(self.ids), event))

    def push_as(self, t: float, seq: int, event: Any) -> None:
        """Schedule ``event`` at ``t`` with a sequence number from ``reserve``."""
        heappush(self.heap, (t, seq, event))

    def pop(self) -> Any:
        """Remove the earliest event, advance ``now`` to its time and return it."""
        t, _, event = heappop(self.heap)
        self.now = t
        return event

    def run(self) -> None:
        """Process events in time order until none is left or ``stop`` was called: pop, advance
        ``now``, call the event's callback with the event."""
        heap = self.heap
        self.stopped = False
        while heap and not self.stopped:
            t, _, event = heappop(heap)
            self.now = t
            event.callback(event)

    def stop(self) -> None:
        """End ``run`` after the current event."""
        self.stopped = True

    def __len__(self) -> int:
        """Events pending."""
        return len(self.heap)

    def issued(self) -> int:
        """Sequence numbers handed out so far (events pushed or reserved). Draws one number itself,
        so call it once, when the run is over."""
        return next(self.ids)
