"""Max-min fair rate allocation by progressive filling (numpy, one pass per bottleneck level)."""

from __future__ import annotations

import numpy as np

_SATURATED = 1e-12
"""A channel is saturated when its unallocated capacity is below this fraction of its capacity."""


def max_min_rates(n_flows: int, entry_flow: np.ndarray, entry_channel: np.ndarray,
                  capacity_Bps: np.ndarray, weight: np.ndarray | None = None,
                  coef: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rates (B/s) of ``n_flows`` flows over channels of ``capacity_Bps``.

    Flow ``entry_flow[k]`` crosses channel ``entry_channel[k]`` (one entry per flow and channel).
    Progressive filling: raise every unfrozen flow's rate equally until some channel is full,
    freeze the flows crossing it, repeat. Each flow must cross at least one channel.
    ``weight[f]`` (default 1) counts flow ``f`` as that many identical flows (same channels), each
    getting the returned rate: identical flows always share equally under max-min fairness.
    ``coef[k]`` (default 1) is the capacity entry ``k`` uses per byte/s of its flow's rate (e.g. a
    link's reverse direction carrying responses for the flow's bytes).
    """
    rate = np.zeros(n_flows)
    if n_flows == 0:
        return rate
    present = np.zeros(len(capacity_Bps), dtype=bool)
    present[entry_channel] = True
    used = np.flatnonzero(present)  # channels crossed, renumbered 0..len(used)-1 (no sort needed)
    index = np.zeros(len(capacity_Bps), dtype=np.int64)
    index[used] = np.arange(len(used))
    local = index[entry_channel]
    cap = capacity_Bps[used].astype(float)
    left = cap.copy()
    frozen = np.zeros(n_flows, dtype=bool)
    live = np.ones(len(entry_flow), dtype=bool)
    per_entry = None
    if weight is not None or coef is not None:
        per_entry = (np.ones(len(entry_flow)) if weight is None else weight[entry_flow]) * \
            (1.0 if coef is None else coef)
    while live.any():
        count = np.bincount(local[live], weights=None if per_entry is None else per_entry[live],
                            minlength=len(used))
        busy = count > 0
        share = np.full(len(used), np.inf)
        share[busy] = left[busy] / count[busy]
        step = share.min()
        rate[~frozen] += step
        left -= step * count
        full = busy & (left <= _SATURATED * cap)
        frozen[entry_flow[live & full[local]]] = True  # repeats write the same True
        live = ~frozen[entry_flow]
    return rate
