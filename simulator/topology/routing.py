"""Routes: equal-cost paths between two nodes, spread over parallel links and switch planes.

A route is a tuple of channel ids. GPUs are endpoints and never forward traffic (NCCL does not
relay through a GPU without a kernel doing it; the workloads model such relays as separate
transfers); hosts may (a root complex forwards PCIe peer-to-peer between its ports). Among shortest node paths (fewest hops), parallel links between the same two
nodes are dealt out diagonally: path *j* uses parallel link *j mod k* at each hop, so the set of
paths touches every parallel link once and no product explosion occurs (HGX H100: 5+4+4+5 = 18
paths GPU to GPU; GB200 NVL72: one per switch chip, 18). When the bundles along a path differ in
width some links serve two routes; ``route_weights`` says how to split traffic so they carry no
more than the others.

Two nodes joined by an NVLink-only path are routed over NVLink only (``PREFERRED_FABRICS``), as
NCCL's P2P transport does: a shared PCIe switch would otherwise offer a 2-hop GPU-to-GPU path as
short as the one through an NVSwitch. Other pairs route over all channels.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain

import networkx as nx
import numpy as np

from simulator.topology.fabric import Fabric

_ENDPOINT_KINDS = frozenset({"gpu"})
MAX_NODE_PATHS = 64
"""Cap on distinct shortest node paths considered per pair (large leaf/spine fabrics)."""

PREFERRED_FABRICS: tuple[frozenset[str], ...] = (frozenset({"nvlink"}),)
"""Channel sets tried in order before falling back to every channel (see module docstring)."""

Route = tuple[int, ...]

class _Index:
    """The channels of some fabric kinds as integer adjacency, built once per fabric and channel
    set (memory linear in links): the parallel channels of each node pair, and for every node its
    successors and predecessors that may forward (not endpoints), sorted by node name so routes
    come out in the same deterministic order as a name-sorted search. No per-destination state:
    each pair is searched from both ends (``_layers``)."""

    __slots__ = ("names", "of", "parallel", "fwd", "bwd")

    def __init__(self, fabric: Fabric, allowed: frozenset[str] | None) -> None:
        self.names = sorted(fabric.nodes)
        self.of = {n: i for i, n in enumerate(self.names)}
        transit = [fabric.nodes[m].kind not in _ENDPOINT_KINDS for m in self.names]
        succ: list[set[int]] = [set() for _ in self.names]
        pred: list[set[int]] = [set() for _ in self.names]
        self.parallel: dict[tuple[int, int], list[int]] = {}
        for ch in fabric.channels:  # in id order, so parallel lists are sorted
            if allowed is not None and ch.fabric not in allowed:
                continue
            u, v = self.of[ch.src], self.of[ch.dst]
            if transit[v]:
                succ[u].add(v)
            if transit[u]:
                pred[v].add(u)
            self.parallel.setdefault((u, v), []).append(ch.id)
        self.fwd = [sorted(x) for x in succ]  # indices follow name order
        self.bwd = [sorted(x) for x in pred]


def _index(fabric: Fabric, allowed: frozenset[str] | None) -> _Index:
    key = ("routing.index", allowed)
    index = fabric.route_cache.get(key)
    if index is None:
        index = fabric.route_cache[key] = _Index(fabric, allowed)
    return index


def equal_cost_routes(fabric: Fabric, src: str, dst: str) -> tuple[Route, ...]:
    """All shortest-hop routes from ``src`` to ``dst`` as channel-id tuples (deterministic order).

    Cached on the fabric. Raises ``nx.NetworkXNoPath`` when the two are not connected.
    """
    key = (src, dst)
    routes = fabric.route_cache.get(key)
    if routes is None:
        routes = fabric.route_cache[key] = _compute_routes(fabric, src, dst)
    return routes


def hop_count(fabric: Fabric, src: str, dst: str) -> int:
    """Links on a shortest route from ``src`` to ``dst`` (the length of every route
    ``equal_cost_routes`` gives), from the same search without enumerating paths; cached on the
    fabric per pair."""
    if src == dst:
        return 0
    key = ("routing.hops", src, dst)
    hops = fabric.route_cache.get(key)
    if hops is None:
        for allowed in (*PREFERRED_FABRICS, None):
            index = _index(fabric, allowed)
            layers = _layers(index, index.of[src], index.of[dst], prune=False)
            if layers is not None:
                hops = fabric.route_cache[key] = len(layers) - 1
                break
        else:
            raise nx.NetworkXNoPath(f"no route from {src} to {dst}")
    return hops


def _compute_routes(fabric: Fabric, src: str, dst: str) -> tuple[Route, ...]:
    if src == dst:
        return ((),)
    for allowed in PREFERRED_FABRICS:
        try:
            return _routes_over(fabric, src, dst, allowed)
        except nx.NetworkXNoPath:
            continue
    return _routes_over(fabric, src, dst, None)


def _routes_over(fabric: Fabric, src: str, dst: str, allowed: frozenset[str] | None) -> tuple[Route, ...]:
    """Shortest-hop routes using only channels of the ``allowed`` fabrics (None: all). Among
    shortest node paths, parallel links are dealt out diagonally (module docstring)."""
    index = _index(fabric, allowed)
    routes: list[Route] = []
    parallel = index.parallel
    for path in _shortest_node_paths(index, index.of[src], index.of[dst]):
        hops = [parallel[(u, v)] for u, v in zip(path, path[1:])]
        width = max(map(len, hops))
        if width == 1:
            routes.append(tuple(h[0] for h in hops))
        else:
            routes.extend(tuple(h[j % len(h)] for h in hops) for j in range(width))
    return tuple(routes)


def _layers(index: _Index, src: int, dst: int, prune: bool = True) -> list[list[int]] | None:
    """The nodes on shortest ``src`` -> ``dst`` paths whose interior avoids endpoints, by hops from
    ``src`` (layer 0 is ``[src]``, the last ``[dst]``), each layer sorted by name; None when no
    such path exists. ``prune=False``: only the right number of layers (for the hop count).

    A breadth-first search from both ends, each step growing the smaller frontier by one hop, until
    the two meet: with forward depth a and backward depth b at the first meeting, every shortest
    path has length a + b (a shorter one would have met a step earlier), so both searches stay
    within a few hops of their end instead of sweeping the fabric. Then the layers are trimmed to
    the nodes that lie on such a path: backwards from the meeting layer on the forward side,
    forwards from it on the backward side."""
    parallel, fwd, bwd = index.parallel, index.fwd, index.bwd
    dist_f, dist_b = {src: 0}, {dst: 0}
    front_f, front_b = [src], [dst]
    levels_f, levels_b = [front_f], [front_b]
    met: list[int] = []
    while not met:
        if not front_f or not front_b:
            return None
        if len(front_f) <= len(front_b):  # grow the forward side by one hop
            depth, nxt = len(levels_f), []
            for u in front_f:
                for w in fwd[u]:
                    if w not in dist_f:
                        dist_f[w] = depth
                        nxt.append(w)
                if dst not in dist_f and (u, dst) in parallel:
                    dist_f[dst] = depth
                    nxt.append(dst)
            front_f = nxt
            levels_f.append(nxt)
            met = [w for w in nxt if w in dist_b]
        else:  # grow the backward side
            depth, nxt = len(levels_b), []
            for v in front_b:
                for w in bwd[v]:
                    if w not in dist_b:
                        dist_b[w] = depth
                        nxt.append(w)
                if src not in dist_b and (src, v) in parallel:
                    dist_b[src] = depth
                    nxt.append(src)
            front_b = nxt
            levels_b.append(nxt)
            met = [w for w in nxt if w in dist_f]
    a, b = len(levels_f) - 1, len(levels_b) - 1
    hops = a + b
    if not prune:
        return [[]] * (hops + 1)
    layers: list[list[int]] = [[] for _ in range(hops + 1)]
    layers[a] = sorted(u for u in levels_f[a] if dist_b.get(u) == b)
    for k in range(a - 1, -1, -1):  # forward side: nodes with a successor on a shortest path
        on = set(layers[k + 1])
        layers[k] = sorted(u for u in levels_f[k]
                           if any(w in on for w in fwd[u]) or (dst in on and (u, dst) in parallel))
    for k in range(a + 1, hops + 1):  # backward side: nodes with a predecessor on a shortest path
        on = set(layers[k - 1])
        layers[k] = sorted(w for w in levels_b[hops - k]
                           if any(v in on for v in bwd[w]) or (src in on and (src, w) in parallel))
    return layers


def _shortest_node_paths(index: _Index, src: int, dst: int) -> list[list[int]]:
    """Shortest-hop node paths whose interior avoids endpoints, at most MAX_NODE_PATHS, in name
    order (depth first over name-sorted successors)."""
    layers = _layers(index, src, dst)
    if layers is None:
        raise nx.NetworkXNoPath(f"no route from {index.names[src]} to {index.names[dst]}")
    parallel, last = index.parallel, len(layers) - 1
    nexts: dict[int, list[int]] = {}  # a node sits in one layer: its next hops are found once

    def next_of(u: int, k: int) -> list[int]:
        out = nexts.get(u)
        if out is None:
            out = nexts[u] = [w for w in layers[k] if (u, w) in parallel]
        return out

    paths: list[list[int]] = []
    path, stack = [src], [iter(next_of(src, 1))]
    while stack:
        w = next(stack[-1], None)
        if w is None:
            stack.pop()
            path.pop()
        elif len(path) == last:  # w is dst
            paths.append([*path, w])
            if len(paths) >= MAX_NODE_PATHS:
                break
        else:
            path.append(w)
            stack.append(iter(next_of(w, len(path))))
    return paths


def route_weights(routes: tuple[Route, ...] | list[Route]) -> np.ndarray:
    """Relative share of traffic each route should carry so that no link of the set carries more
    than another's worth (1 for every route when each link is used equally). Dealing parallel links
    diagonally gives every link one route when the bundles of a path are equally wide; when they
    are not (HGX GPU 0 with 4 of its 5 links to a switch left: 5 routes over 4 links), a link used
    by u routes gets 1/u on each, so a route's weight is 1 / (most routes sharing any of its links).
    The flow engine splits a transfer's bytes in proportion to rate x weight."""
    uses = Counter(chain.from_iterable(routes))
    if len(uses) == sum(map(len, routes)):  # no link serves two routes
        return np.ones(len(routes))
    weights = np.array([1.0 / max((uses[c] for c in r), default=1) for r in routes])
    return weights / weights.max() if len(weights) else weights


def route_latency_s(fabric: Fabric, route: Route) -> float:
    """Zero-load latency of a route: link latencies plus forwarding latency of transit switches."""
    channels, nodes = fabric.channels, fabric.nodes
    total = 0.0
    for cid in route:
        total += channels[cid].latency_s
    for cid in route[:-1]:
        total += nodes[channels[cid].dst].latency_s
    return total


def route_rate_Bps(fabric: Fabric, route: Route) -> float:
    """Bottleneck payload rate of one route (bytes/s, one direction)."""
    return min(fabric.channels[cid].rate_Bps for cid in route) if route else float("inf")
