"""What the labs measure: packet deliveries, recorded by an engine observer, turned into rates.

Rates are steady-state: payload delivered after the first delivery divided by the time from the
first to the last delivery. The one-way latency before the first delivery is latency, not
bandwidth, so it is excluded; what remains is an end effect of at most one credit window over
the run (the labs run enough windows to keep it below 1 %).
"""

from __future__ import annotations

from array import array

import numpy as np

from simulator.engine.packet import EngineObserver


class DeliveryLog(EngineObserver):
    """Records (time s, transfer id, payload bytes) of every delivered packet."""

    __slots__ = ("t_s", "tid", "nbytes")

    def __init__(self) -> None:
        self.t_s = array("d")
        self.tid = array("q")
        self.nbytes = array("q")

    def delivered(self, packet, t_s: float) -> None:
        self.t_s.append(t_s)
        self.tid.append(packet.tid)
        self.nbytes.append(packet.bytes)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(times s, transfer ids, payload bytes) in delivery order."""
        return (np.frombuffer(self.t_s, dtype=np.float64), np.frombuffer(self.tid, dtype=np.int64),
                np.frombuffer(self.nbytes, dtype=np.int64))

    def select(self, tids) -> tuple[np.ndarray, np.ndarray]:
        """(times s, payload bytes) of the deliveries of the transfers in ``tids``."""
        t, tid, nbytes = self.arrays()
        keep = np.isin(tid, np.fromiter(tids, dtype=np.int64))
        return t[keep], nbytes[keep]


def steady_rate_Bps(t_s: np.ndarray, nbytes: np.ndarray) -> float:
    """Payload rate (B/s) from the first to the last delivery, the first packet excluded."""
    if t_s.size < 2 or t_s[-1] <= t_s[0]:
        raise ValueError("a steady rate needs at least two deliveries at different times")
    return float(nbytes[1:].sum()) / float(t_s[-1] - t_s[0])


def rate_in_window_Bps(t_s: np.ndarray, nbytes: np.ndarray, start_s: float, end_s: float) -> float:
    """Payload rate (B/s) of the deliveries in (start_s, end_s]."""
    keep = (t_s > start_s) & (t_s <= end_s)
    return float(nbytes[keep].sum()) / (end_s - start_s)


def jain_index(values) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 for equal shares, 1/n when one takes all."""
    x = np.asarray(values, dtype=float)
    square_sum = float((x * x).sum())
    return float(x.sum()) ** 2 / (x.size * square_sum) if square_sum > 0 else 1.0
