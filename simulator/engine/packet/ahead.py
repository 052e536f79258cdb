"""Which hops a packet may take ahead of the event queue: the exclusive-suffix rule.

A channel is *exclusive* in a run when one stream of packets owns its sender: every route that
crosses it comes in over the same previous channel, at the same route position (so on the same VC),
none starts on it (no injection), and every route over that previous channel either ends there or
goes on to it. Its port then has one requester, a single VOQ that no other output reads from, and
nothing but that stream ever changes its serializer, its credits or its crossbar read. (The network
adds the switch-side conditions: the node arbitrates per output with VOQs, and the link's other
direction carries no responses for it, ``PacketNetwork._exclusive``.)

When a packet's remaining route is exclusive from hop ``i`` on (its *suffix*), the port that sends it
over hop ``i - 1`` already knows everything that decides the rest of its trip: the packet lands at
``t_ready``; the next port sends it at ``max(t_ready, busy_until, crossbar read free)`` if its
credits fit (``OutputPort.start_time``: the same rule ``kick`` applies), and credits only ever come
back, so credits that fit with the returns known now also fit with those still to be made. So the
port sends it on at once, hop after hop, instead of scheduling an arrival event per hop
(``OutputPort.take_ahead``). Where credits do not fit yet, or an earlier packet of the stream is
still queued or on its way there by event (``InputBuffer.pending``), the packet falls back to its
arrival event at that hop, and everything after it waits in order.

The result is the same simulation: the same send times on every channel, the same credit counts,
the same deliveries, to the engine's time tolerance (``EPS_S``; ``tests/test_engine_ahead.py``
checks it against every hop by event). The run's event count includes one arrival per hop taken
ahead (``EventQueue.ahead``), so it does not depend on this. Runs with an observer or injected
faults take every hop by event: they are there to see each one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

NEVER = 1 << 30
"""Suffix start of a route with no exclusive suffix (larger than any route index)."""


def exclusive_channels(routes: Iterable[Sequence[int]], eligible: set[int]) -> set[int]:
    """Channels of ``eligible`` that one stream owns, given every route of the run (channel ids)."""
    before: dict[int, set[tuple[int, int]]] = {}
    """Channel -> (previous channel, route index) pairs it is reached by (-1: injected)."""
    after: dict[int, set[int]] = {}
    """Channel -> channels routes go on to after it (-1: a route ends there)."""
    for route in routes:
        for i, c in enumerate(route):
            before.setdefault(c, set()).add((route[i - 1] if i else -1, i))
            after.setdefault(c, set()).add(route[i + 1] if i + 1 < len(route) else -1)
    solo = set()
    for c, ins in before.items():
        if c not in eligible or len(ins) != 1:
            continue
        (prev, _), = ins
        if prev >= 0 and after[prev] <= {c, -1}:
            solo.add(c)
    return solo


def suffix_start(route: Sequence[int], solo: set[int]) -> int:
    """Index of the first hop from which every remaining channel of ``route`` is exclusive, or
    ``NEVER``."""
    i = len(route)
    while i > 1 and route[i - 1] in solo:
        i -= 1
    return i if i < len(route) else NEVER
