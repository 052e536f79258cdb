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

import networkx as nx
import numpy as np

from simulator.topology.fabric import Fabric

_ENDPOINT_KINDS = frozenset({"gpu"})
MAX_NODE_PATHS = 64
"""Cap on distinct shortest node paths considered per pair (large leaf/spine fabrics)."""

PREFERRED_FABRICS: tuple[frozenset[str], ...] = (frozenset({"nvlink"}),)
"""Channel sets tried in order before falling back to every channel (see module docstring)."""

Route = tuple[int, ...]

_UNREACHED = -1


class _Index:
    """The channels of some fabric kinds as integer adjacency: successors and predecessors sorted by
    node name (so routes come out in the same deterministic order as a name-sorted search), the
    parallel channels of each node pair, and which nodes may forward. Built once per fabric and
    channel set; per-destination hop distances are cached beside it (``distances_to``)."""

    __slots__ = ("names", "of", "succ", "pred_ptr", "pred_idx", "parallel", "transit", "dist")

    def __init__(self, fabric: Fabric, allowed: frozenset[str] | None) -> None:
        self.names = sorted(fabric.nodes)
        self.of = {n: i for i, n in enumerate(self.names)}
        n = len(self.names)
        succ: list[set[int]] = [set() for _ in range(n)]
        pred: list[set[int]] = [set() for _ in range(n)]
        self.parallel: dict[tuple[int, int], list[int]] = {}
        for ch in fabric.channels:  # in id order, so parallel lists are sorted
            if allowed is not None and ch.fabric not in allowed:
                continue
            u, v = self.of[ch.src], self.of[ch.dst]
            succ[u].add(v)
            pred[v].add(u)
            self.parallel.setdefault((u, v), []).append(ch.id)
        self.succ = [sorted(x) for x in succ]  # indices follow name order
        counts = np.array([len(x) for x in pred], dtype=np.int64)
        self.pred_ptr = np.concatenate(([0], np.cumsum(counts)))
        self.pred_idx = np.array([u for x in pred for u in sorted(x)], dtype=np.int64)
        self.transit = np.array([fabric.nodes[m].kind not in _ENDPOINT_KINDS for m in self.names], dtype=bool)
        self.dist: dict[int, np.ndarray | tuple[np.ndarray, np.ndarray]] = {}

    def distances_to(self, dst: int) -> np.ndarray:
        """Hops from every node to ``dst`` over paths whose interior avoids endpoints (-1: none):
        a breadth-first search backwards from ``dst``, one whole frontier per numpy step. Kept
        compact (int8; only the reached nodes when they are few, as over NVLink alone), so the
        cache costs about one byte per node and destination."""
        kept = self.dist.get(dst)
        if kept is None:
            kept = self.dist[dst] = self._compact(self._search(dst))
        if isinstance(kept, tuple):
            dense = np.full(len(self.names), _UNREACHED, dtype=np.int8)
            dense[kept[0]] = kept[1]
            return dense
        return kept

    def _search(self, dst: int) -> np.ndarray:
        dist = np.full(len(self.names), _UNREACHED, dtype=np.int32)
        dist[dst] = 0
        frontier, d = np.array([dst], dtype=np.int64), 0
        ptr, idx = self.pred_ptr, self.pred_idx
        while frontier.size:
            d += 1
            if d > 1:  # a non-transit node ends a path: it never relays
                frontier = frontier[self.transit[frontier]]
            starts, ends = ptr[frontier], ptr[frontier + 1]
            lengths = ends - starts
            if not lengths.sum():
                break
            gather = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
            preds = idx[gather]
            fresh = np.zeros(len(dist), dtype=bool)
            fresh[preds[dist[preds] == _UNREACHED]] = True  # deduplicated without sorting
            frontier = np.flatnonzero(fresh)
            dist[frontier] = d
        return dist

    @staticmethod
    def _compact(dist: np.ndarray) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        if dist.max() > np.iinfo(np.int8).max:
            raise ValueError("routes longer than 127 hops are not supported")
        reached = np.flatnonzero(dist != _UNREACHED)
        if 8 * len(reached) < len(dist):
            return reached.astype(np.int32), dist[reached].astype(np.int8)
        return dist.astype(np.int8)


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
    ``equal_cost_routes`` gives), from the cached per-destination distances: no path enumeration."""
    if src == dst:
        return 0
    for allowed in (*PREFERRED_FABRICS, None):
        index = _index(fabric, allowed)
        d = int(index.distances_to(index.of[dst])[index.of[src]])
        if d != _UNREACHED:
            return d
    raise nx.NetworkXNoPath(f"no route from {src} to {dst}")


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
    for path in _shortest_node_paths(index, index.of[src], index.of[dst]):
        hops = [index.parallel[(u, v)] for u, v in zip(path, path[1:])]
        width = max(len(h) for h in hops)
        routes.extend(tuple(h[j % len(h)] for h in hops) for j in range(width))
    return tuple(routes)


def _shortest_node_paths(index: _Index, src: int, dst: int) -> list[list[int]]:
    """Shortest-hop node paths whose interior avoids endpoints, at most MAX_NODE_PATHS, in name
    order (depth first over name-sorted successors)."""
    dist = index.distances_to(dst).tolist()
    if dist[src] == _UNREACHED:
        raise nx.NetworkXNoPath(f"no route from {index.names[src]} to {index.names[dst]}")
    succ, transit = index.succ, index.transit.tolist()
    paths: list[list[int]] = []

    def walk(path: list[int]) -> None:
        if len(paths) >= MAX_NODE_PATHS:
            return
        u = path[-1]
        if u == dst:
            paths.append(list(path))
            return
        want = dist[u] - 1
        if want == 0:  # one hop from dst means a link to it: no need to scan u's successors
            path.append(dst)
            walk(path)
            path.pop()
            return
        for w in succ[u]:
            if dist[w] == want and (w == dst or transit[w]):
                path.append(w)
                walk(path)
                path.pop()

    walk([src])
    return paths


def route_weights(routes: tuple[Route, ...] | list[Route]) -> np.ndarray:
    """Relative share of traffic each route should carry so that no link of the set carries more
    than another's worth (1 for every route when each link is used equally). Dealing parallel links
    diagonally gives every link one route when the bundles of a path are equally wide; when they
    are not (HGX GPU 0 with 4 of its 5 links to a switch left: 5 routes over 4 links), a link used
    by u routes gets 1/u on each, so a route's weight is 1 / (most routes sharing any of its links).
    The flow engine splits a transfer's bytes in proportion to rate x weight."""
    uses: dict[int, int] = {}
    for r in routes:
        for c in r:
            uses[c] = uses.get(c, 0) + 1
    weights = np.array([1.0 / max((uses[c] for c in r), default=1) for r in routes])
    return weights / weights.max() if len(weights) else weights


def route_latency_s(fabric: Fabric, route: Route) -> float:
    """Zero-load latency of a route: link latencies plus forwarding latency of transit switches."""
    total = 0.0
    for cid in route:
        ch = fabric.channels[cid]
        total += ch.latency_s
    for cid in route[:-1]:
        total += fabric.nodes[fabric.channels[cid].dst].latency_s
    return total


def route_rate_Bps(fabric: Fabric, route: Route) -> float:
    """Bottleneck payload rate of one route (bytes/s, one direction)."""
    return min(fabric.channels[cid].rate_Bps for cid in route) if route else float("inf")
