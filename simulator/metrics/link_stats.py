"""Per-link and per-packet figures from a packet-engine ``RunResult``: utilization, throughput,
credit-stall time, queueing delay, latency percentiles, arbitration shares and fairness.

All rates are per direction (one channel); GB = 10^9 B.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.engine.result import RunResult
from simulator.topology.fabric import Fabric
from simulator.units import GB


@dataclass(frozen=True)
class LinkStat:
    """One channel over one run."""

    channel: int
    src: str
    dst: str
    bytes: int
    """Payload bytes carried."""
    utilization: float
    """Serializing time / makespan (0..1)."""
    throughput_GBps: float
    """Payload bytes / makespan (GB/s, one direction)."""
    credit_stall_s: float
    """Time the sender had a packet but no credits (s)."""
    credit_stall_fraction: float
    """Credit-stall time / makespan (0..1)."""


@dataclass(frozen=True)
class LatencySummary:
    """Distribution of per-packet figures (s)."""

    packets: int
    """Packets the figures describe: every delivered one, or the run's systematic sample
    (``sampled_every`` > 1) beyond ``PacketConfig.packet_stats_limit``."""
    p50_s: float
    p99_s: float
    max_s: float
    mean_queue_s: float
    """Mean time a packet waited at switches (arbitration, credits, busy output)."""
    p99_queue_s: float
    sampled_every: int = 1
    """The figures come from every this-many-th delivered packet (1: all of them)."""


def link_stats(result: RunResult, fabric: Fabric | None = None, busy_only: bool = True) -> list[LinkStat]:
    """Per channel figures; ``busy_only`` skips channels that carried nothing."""
    span = result.makespan_s if result.makespan_s > 0 else float("inf")
    util = result.utilization()
    out = []
    for cid, nbytes in enumerate(result.channel_bytes):
        if busy_only and nbytes == 0:
            continue
        ch = fabric.channels[cid] if fabric is not None else None
        stall = float(result.channel_credit_stall_s[cid])
        out.append(LinkStat(channel=cid, src=ch.src if ch else "", dst=ch.dst if ch else "",
                            bytes=int(nbytes), utilization=float(util[cid]),
                            throughput_GBps=float(nbytes) / span / GB, credit_stall_s=stall,
                            credit_stall_fraction=stall / span))
    return out


def latency_summary(result: RunResult) -> LatencySummary:
    """Packet latency (injection to delivery) p50/p99/max and queueing delay."""
    lat, queue = result.packet_latency_s, result.queue_delay_s
    if lat.size == 0:
        return LatencySummary(0, 0.0, 0.0, 0.0, 0.0, 0.0)
    p50, p99 = np.percentile(lat, [50, 99])
    return LatencySummary(packets=int(lat.size), p50_s=float(p50), p99_s=float(p99), max_s=float(lat.max()),
                          mean_queue_s=float(queue.mean()), p99_queue_s=float(np.percentile(queue, 99)),
                          sampled_every=result.packet_sample_every)


def grant_shares(result: RunResult) -> dict[str, dict[str, float]]:
    """Per switch: fraction of its grants won by each input (inputs with no grants included)."""
    out = {}
    for switch, grants in result.switch_grants.items():
        total = sum(grants.values())
        if total:
            out[switch] = {name: g / total for name, g in grants.items()}
    return out


def jain_index(values) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 for equal shares, 1/n when one takes all."""
    x = np.asarray(list(values), dtype=float)
    if x.size == 0 or not np.any(x):
        return 1.0
    return float(x.sum() ** 2 / (x.size * (x * x).sum()))
