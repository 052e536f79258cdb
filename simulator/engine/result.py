"""What every engine returns: timings per transfer and counters per channel, all plain data."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(slots=True)
class RunResult:
    """Outcome of one engine run. Times in seconds of simulated time; bytes are payload bytes."""

    engine: str
    """``packet`` or ``flow``."""
    makespan_s: float
    start_s: np.ndarray
    """Per transfer id: when its first byte left (or its delay began, for pure delays)."""
    finish_s: np.ndarray
    """Per transfer id: when its last byte was delivered."""
    bytes_injected: int
    bytes_delivered: int
    channel_bytes: np.ndarray
    """Per channel id: payload bytes carried."""
    channel_busy_s: np.ndarray
    """Per channel id: time spent serializing (utilization = busy / makespan)."""
    channel_credit_stall_s: np.ndarray
    """Per channel id: time the sender had data but no credits (0 for the flow engine)."""
    packet_latency_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Per delivered packet: injection to delivery (packet engine only)."""
    queue_delay_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Per delivered packet: time spent waiting in queues (packet engine only)."""
    packet_sample_every: int = 1
    """The two arrays above hold every this-many-th delivered packet (1: all; long packet-engine
    runs keep a systematic sample, see ``PacketConfig.packet_stats_limit``)."""
    switch_grants: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per switch: grants won by each input (channel src name or id as text)."""
    events: int = 0
    """Simulation events processed (speed figure)."""
    wall_s: float = 0.0
    invariants: dict[str, bool] = field(default_factory=dict)
    """Name -> held, checked at the end of the run (bytes conserved, credits in range, ...)."""
    fault_events: list[dict] = field(default_factory=list)
    """Faults that struck during the run (flow engine, ``at:``): per time ``at_s``, ``faults``
    (one line each), ``bytes_rerouted`` (bytes in flight moved to surviving routes) and
    ``transfers_rerouted`` (transfers in flight or still to start given new routes)."""

    def utilization(self) -> np.ndarray:
        """Per channel: busy time / makespan (0..1)."""
        if self.makespan_s <= 0:
            return np.zeros_like(self.channel_busy_s)
        return self.channel_busy_s / self.makespan_s
