"""The retry lab: one link under bit errors, swept over BER x replay-buffer size.

Each point puts the closed form of ``hardware.retry`` (go-back-N efficiency from the packet error
probability, the round trip in packets and the replay buffer) next to a seeded simulation of the
same link's sender, packet by packet: every transmission is hit with probability ``p``; the
receiver NAKs a bad packet, the NAK reaches the sender one round trip after the packet started,
and the sender resends the bad packet and everything after it; the sender never has more packets
unacknowledged than its replay buffer holds. The simulation is this lab's own go-back-N sender
(time in packet slots), not the full packet engine, which does not model replays: a fabric with a
``ber`` fault runs both engines at the closed form's effective rate instead.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from simulator.errors import InputError
from simulator.hardware.retry import RetryPart, link_down, retry_parts, retry_point, unusable_ber
from simulator.workloads.labs.catalog_link import catalog_link

DEFAULT_BERS = (1e-12, 1e-9, 1e-7, 1e-6, 3e-6, 1e-5)
DEFAULT_BUFFERS = (2048, 4096, 16384, 65536)
"""Replay buffers (B): below and above the bandwidth-delay product of a 1 m NVLink 5 hop."""
DEFAULT_PACKETS = 40_000
"""Packets delivered per simulated point: thousands of errors at the highest default BER."""


def simulate_go_back_n(p: float, round_trip: int, window: int, packets: int,
                       rng: np.random.Generator) -> float:
    """Delivered packets per packet slot of a go-back-N sender (see module docstring)."""
    sent_at: list[int] = []
    """Send slot of each packet since ``base`` (index = sequence - base)."""
    bad: list[bool] = []
    t = base = delivered = 0
    while delivered < packets:
        # acknowledgements (or a NAK) that have come back by slot t, oldest first
        while sent_at and sent_at[0] + round_trip <= t:
            if bad[0]:
                sent_at.clear()
                bad.clear()  # go back: resend from base
                break
            sent_at.pop(0)
            bad.pop(0)
            base += 1
            delivered += 1
        if len(sent_at) < window:
            sent_at.append(t)
            bad.append(bool(rng.random() < p))
            t += 1
        else:
            t = sent_at[0] + round_trip
    return delivered / t if t else 1.0


def _usable(generation: str, ber: float) -> RetryPart:
    """The replay parameters of ``generation``'s links; an InputError (``--bers``) at a BER that takes
    the link down (``hardware.retry.link_down``), where the go-back-N sender would replay for ever."""
    kind = "pcie" if generation.startswith("pcie") else "network" if generation.startswith("ib") else "nvlink"
    part = retry_parts()[kind]
    if link_down(ber, part):
        raise InputError(f"{ber:g}: at or above ber={unusable_ber(part.packet_B, part.replay_limit):.2g} a {generation} "
                         f"link is down (a {part.packet_B:.0f} B packet fails all {part.replay_limit} transmissions "
                         "more often than not: hardware/retry.py); choose lower bit error rates", field="bers")
    return part


def retry_row(generation: str, ber: float, buffer_B: int, cable_m: float = 1.0, packets: int = DEFAULT_PACKETS,
              seed: int = 0) -> dict:
    """One lab point: closed form and simulation of ``generation`` over ``cable_m`` (GB = 1e9 B)."""
    link = catalog_link(generation, cable_m)
    part = _usable(generation, ber)
    rtt_s = 2 * link.latency_s + part.ack_delay_s
    point = retry_point(ber, packet_B=part.packet_B, replay_buffer_B=buffer_B, round_trip_s=rtt_s,
                        rate_Bps=link.rate_Bps)
    sim = simulate_go_back_n(point.packet_error, point.round_trip_packets, point.window_packets, packets,
                             np.random.default_rng(seed))
    return {"generation": generation, "ber": ber, "replay_buffer_bytes": buffer_B, "packet_bytes": part.packet_B,
            "packet_error": point.packet_error, "round_trip_packets": point.round_trip_packets,
            "window_packets": point.window_packets, "rate_GBps": link.rate_Bps / 1e9,
            "closed_form_GBps": link.rate_Bps * point.efficiency / 1e9, "simulated_GBps": link.rate_Bps * sim / 1e9,
            "error_pct": 100.0 * (sim - point.efficiency) / point.efficiency,
            "limited_by": "replay buffer" if point.window_packets < point.round_trip_packets else
            "replays" if point.efficiency < 0.99 else "line rate"}


def retry_sweep(generation: str = "nvlink5", bers: Sequence[float] = DEFAULT_BERS,
                buffers: Sequence[int] = DEFAULT_BUFFERS, packets: int = DEFAULT_PACKETS, seed: int = 0) -> list[dict]:
    """Rows of :func:`retry_row` for every replay buffer x BER; each point has its own seeded generator.
    Every BER is checked before the first point runs."""
    for ber in bers:
        _usable(generation, ber)
    return [retry_row(generation, ber, buf, packets=packets, seed=seed + k)
            for k, (buf, ber) in enumerate((b, e) for b in buffers for e in bers)]


def explain_retry(rows: Sequence[dict]) -> str:
    """Two sentences computed from the rows."""
    worst = max(rows, key=lambda r: abs(r["error_pct"]))
    r0 = rows[0]
    bdp = r0["round_trip_packets"] * r0["packet_bytes"]
    return (f"{r0['generation']}: a replay buffer below the round trip ({r0['round_trip_packets']} packets of "
            f"{r0['packet_bytes']:.0f} B = {bdp / 1024:.1f} KiB) stalls the link even without errors; above it, "
            f"each error costs one round trip of packets, so goodput = (1 - p) / (1 + (R - 1) p) with "
            f"p = 1 - (1 - BER)^(8 x packet bytes). The simulation stays within {abs(worst['error_pct']):.2f} % of the "
            f"closed form (worst: BER {worst['ber']:g}, {worst['replay_buffer_bytes'] // 1024} KiB).")
