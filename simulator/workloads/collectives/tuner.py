"""``algo=auto``: predict each (algorithm, protocol) time with an alpha-beta model, pick the fastest.

Like NCCL's tuner, but the model is read off the steady-state workload itself instead of
per-algorithm formulas: transfers are grouped into phases (their depth in the DAG); a phase's
bandwidth time is its most loaded channel (bytes / rate_Bps, alpha-beta "beta"), its latency the
largest delay + route latency ("alpha"); phases add along the DAG's critical path. Protocol
constants come from the protocol parts, bandwidths and latencies from the fabric.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from simulator.engine.transfer import Workload
from simulator.errors import InputError
from simulator.hardware.protocols import PROTOCOL_NAMES, ProtocolTable
from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes, route_latency_s, route_rate_Bps


def predict_s(fabric: Fabric, workload: Workload) -> float:
    """Alpha-beta estimate of ``workload``'s makespan on ``fabric`` (s)."""
    ts = workload.transfers
    depth = np.zeros(len(ts), dtype=np.int64)
    for t in ts:
        if t.deps:
            depth[t.id] = 1 + max(depth[d] for d in t.deps)
    load: dict[int, np.ndarray] = defaultdict(lambda: np.zeros(len(fabric.channels)))
    spread: dict[tuple, tuple[np.ndarray, np.ndarray, float]] = {}
    latency = np.zeros(len(ts))
    for t in ts:
        if t.bytes == 0:
            continue
        key = (t.src, t.dst, t.paths)
        if key not in spread:
            spread[key] = _spread(fabric, t.paths if t.paths is not None else equal_cost_routes(fabric, t.src, t.dst))
        channels, share, latency[t.id] = spread[key]
        np.add.at(load[int(depth[t.id])], channels, t.bytes * share)
    capacity = np.array([c.rate_Bps for c in fabric.channels])
    phase_beta = {d: float(np.max(v / capacity)) for d, v in load.items()}
    finish = np.zeros(len(ts))
    for t in ts:
        ready = max((finish[d] for d in t.deps), default=0.0)
        finish[t.id] = ready + t.delay_s + latency[t.id] + phase_beta.get(int(depth[t.id]), 0.0)
    return float(finish.max()) if len(ts) else 0.0


def _spread(fabric: Fabric, routes) -> tuple[np.ndarray, np.ndarray, float]:
    """Channels a transfer crosses, the share of its bytes on each, its route latency."""
    rates = np.array([route_rate_Bps(fabric, r) for r in routes])
    shares = rates / rates.sum()
    channels = np.array([c for r in routes for c in r], dtype=np.int64)
    per_channel = np.concatenate([np.full(len(r), s) for r, s in zip(routes, shares)]) if len(channels) else np.zeros(0)
    return channels, per_channel, max((route_latency_s(fabric, r) for r in routes), default=0.0)


DIRECT_MAX_RANKS = 16
"""The tuner considers one-shot (direct) collectives up to this many ranks (assumption: one-shot
kernels serve small TP groups; beyond, n(n-1) messages are never competitive)."""


def choose(fabric: Fabric, gpus: tuple[str, ...], op: str, nbytes: int, algo: str, protocol: str,
           table: ProtocolTable) -> tuple[str, str, float]:
    """The (algorithm, protocol, predicted seconds) with the smallest prediction; ``auto`` in
    either argument means "any"."""
    from simulator.workloads.collectives import ALGORITHMS, build_collective, why_not

    algos = list(ALGORITHMS) if algo == "auto" else [algo]
    protos = list(PROTOCOL_NAMES) if protocol == "auto" else [protocol]
    best: tuple[float, str, str] | None = None
    for a in algos:
        for p in protos:
            if why_not(fabric, gpus, op, a, p, table):
                continue
            if a == "direct" and len(gpus) > DIRECT_MAX_RANKS and op not in ("alltoall", "sendrecv"):
                continue
            t = predict_s(fabric, build_collective(fabric, gpus, op, nbytes, a, p, table=table))
            if best is None or t < best[0]:
                best = (t, a, p)
    if best is None:
        raise InputError(f"no algorithm/protocol can run {op} on these {len(gpus)} GPUs", field="algo")
    return best[1], best[2], best[0]
