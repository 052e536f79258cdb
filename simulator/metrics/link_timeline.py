"""Per-link load over time of a flow-engine run, rebuilt from its transfers' start and finish times.

The flow engine reports when each transfer started and finished, not its rate at every instant. A
transfer's bytes are taken to move at their mean rate while it drains: from its start to its
finish minus the zero-load latency of its slowest route (the engine adds that latency after the
last byte leaves). They are split over the transfer's routes as the engine splits them
(``routing.route_shares``). So every link carries exactly the bytes the engine
counted on it (the integral of its load is ``RunResult.channel_bytes``); only the shape within a
transfer is averaged. For steady collectives, whose transfers run concurrently at constant rates,
that is the engine's own timeline. Rates are per direction (one channel), bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.engine.result import RunResult
from simulator.engine.transfer import Workload
from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes, route_latency_s, route_shares


@dataclass(frozen=True, slots=True)
class LinkStep:
    """One channel's load from ``t_s`` until its next step."""

    channel: int
    t_s: float
    load_Bps: float
    """Bytes/s crossing the channel (one direction)."""


def flow_link_steps(fabric: Fabric, workload: Workload, result: RunResult) -> list[LinkStep]:
    """Every channel's load as a step function: steps in time order per channel, channel by
    channel; a channel nothing crossed has no steps. The last step of a channel returns to 0."""
    cids, times, deltas = [], [], []
    routes_of: dict[tuple[str, str], tuple] = {}
    for t in workload.transfers:
        start, finish = float(result.start_s[t.id]), float(result.finish_s[t.id])
        if t.bytes == 0 or t.src == t.dst:
            continue
        routes = t.paths
        if not routes:
            key = (t.src, t.dst)
            routes = routes_of.get(key) or routes_of.setdefault(key, equal_cost_routes(fabric, t.src, t.dst))
        end = finish - max(route_latency_s(fabric, r) for r in routes)
        if end <= start:
            continue
        shares = route_shares(fabric, routes)
        mean = t.bytes / (end - start)
        for route, share in zip(routes, shares):
            for cid in route:
                cids += [cid, cid]
                times += [start, end]
                deltas += [mean * share, -mean * share]
    if not cids:
        return []
    cid_a, t_a, d_a = np.array(cids), np.array(times), np.array(deltas)
    order = np.lexsort((t_a, cid_a))
    cid_a, t_a, d_a = cid_a[order], t_a[order], d_a[order]
    steps: list[LinkStep] = []
    for cid in np.unique(cid_a):
        sel = cid_a == cid
        ts, load = t_a[sel], np.cumsum(d_a[sel])
        last = np.r_[ts[1:] != ts[:-1], True]  # one step per instant: the load after all its changes
        for when, value in zip(ts[last], load[last]):
            steps.append(LinkStep(int(cid), float(when), max(0.0, float(value)) if abs(value) > 1e-6 * abs(d_a[sel]).max()
                                  else 0.0))
    return steps
