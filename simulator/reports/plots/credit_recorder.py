"""An engine observer that records one channel's credit loop for :func:`credit_timeseries`.

The packet engine reports the sender's *available* credits and the receive buffer's depth as two
separate event streams; the plot wants credits *in use* and depth on one time base. Both are
piecewise constant, so the streams are merged by sample-and-hold.
"""

from __future__ import annotations

import numpy as np

from simulator.engine.packet.observer import EngineObserver
from simulator.topology.fabric import Channel


class CreditRecorder(EngineObserver):
    """Collects (time, credits in use) and (time, queue depth in packets) of channel ``channel.id``."""

    __slots__ = ("cid", "buffer_credits", "credit_bytes", "name", "_credits", "_queue")

    def __init__(self, channel: Channel) -> None:
        self.cid = channel.id
        self.credit_bytes = channel.credit.credit_bytes
        """Bytes one credit stands for."""
        self.name = f"{channel.src} -> {channel.dst} (channel {channel.id})"
        """The link's ends, for titles."""
        self.buffer_credits = channel.credit.buffer_bytes // channel.credit.credit_bytes
        """Receive buffer of the channel in credits (the dashed line of the plot)."""
        self._credits: list[tuple[float, int]] = [(0.0, 0)]
        self._queue: list[tuple[float, int]] = [(0.0, 0)]

    def credits(self, cid: int, t_s: float, available: int) -> None:
        if cid == self.cid:
            self._credits.append((t_s, self.buffer_credits - available))

    def queue(self, cid: int, t_s: float, depth: int) -> None:
        if cid == self.cid:
            self._queue.append((t_s, depth))

    def series(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(times_s, credits in use, queue depth) on the union of both streams' event times."""
        return merge_step_series(self._credits, self._queue)


def merge_step_series(a: list[tuple[float, float]], b: list[tuple[float, float]]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two step series of (time, value) on one time base: each holds its last value until it changes.

    Events are ordered by time (stable, so of several at one instant the last reported wins)."""
    ta, va = (np.asarray(x, dtype=float) for x in zip(*sorted(a, key=lambda e: e[0])))
    tb, vb = (np.asarray(x, dtype=float) for x in zip(*sorted(b, key=lambda e: e[0])))
    times = np.union1d(ta, tb)
    ia = np.searchsorted(ta, times, side="right") - 1
    ib = np.searchsorted(tb, times, side="right") - 1
    return times, va[ia], vb[ib]
