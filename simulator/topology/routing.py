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
    come out in the same deterministic order as a name-sorted search. Each pair is searched from
    both ends (``_layers``); the few hops around a node that its searches explore are kept
    (``_Ball``, at most BALL_NODES nodes each), as every GPU is an end of many pairs."""

    __slots__ = ("names", "of", "parallel", "single_links", "fwd", "bwd", "out_balls", "in_balls")

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
        self.single_links = all(len(hop) == 1 for hop in self.parallel.values())  # every path is one route
        self.fwd = [sorted(x) for x in succ]  # indices follow name order
        self.bwd = [sorted(x) for x in pred]
        self.out_balls: dict[int, _Ball] = {}
        self.in_balls: dict[int, _Ball] = {}

    def ball(self, node: int, out: bool) -> _Ball:
        """The breadth-first search from ``node`` along (``out``) or against the channels, as far
        as it has been grown: kept while it holds at most BALL_NODES nodes (memory linear in nodes)."""
        balls = self.out_balls if out else self.in_balls
        ball = balls.get(node)
        if ball is None:
            ball = _Ball(node, self.fwd if out else self.bwd)
            if len(ball.dist) <= BALL_NODES:
                balls[node] = ball
        return ball

    def forget_large(self, *balls: _Ball) -> None:
        """Drop the cached balls that grew past BALL_NODES."""
        for ball, cache in zip(balls, (self.out_balls, self.in_balls)):
            if len(ball.dist) > BALL_NODES:
                cache.pop(ball.levels[0][0], None)


BALL_NODES = 256
"""Most nodes a cached search ball may hold (a GPU's balls, to the spines of a two-tier fabric, hold
about 90)."""


class _Ball:
    """Breadth-first levels from one node over forwarding nodes only (``adjacency``: the index's
    ``fwd`` or ``bwd``): ``levels[k]`` are the nodes first reached after k hops, ``dist`` their hops."""

    __slots__ = ("levels", "dist", "adjacency")

    def __init__(self, node: int, adjacency: list[list[int]]) -> None:
        self.levels = [[node], list(adjacency[node])]
        self.dist = {node: 0}
        for w in self.levels[1]:
            self.dist.setdefault(w, 1)
        self.levels[1] = [w for w in self.levels[1] if self.dist[w] == 1]
        self.adjacency = adjacency

    def grow(self) -> None:
        """Add the next level (empty when the search has reached everything)."""
        dist, depth, nxt = self.dist, len(self.levels), []
        adjacency = self.adjacency
        for u in self.levels[-1]:
            for w in adjacency[u]:
                if w not in dist:
                    dist[w] = depth
                    nxt.append(w)
        self.levels.append(nxt)


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


def routes_within(fabric: Fabric, src: str, dst: str, fabrics: frozenset[str]) -> tuple[Route, ...]:
    """The shortest-hop routes from ``src`` to ``dst`` over channels of ``fabrics`` only (e.g. the
    scale-out network between two NICs), as ``equal_cost_routes`` deals them; cached on the fabric.
    Raises ``nx.NetworkXNoPath`` when those channels do not join the two."""
    key = ("routing.within", src, dst, fabrics)
    routes = fabric.route_cache.get(key)
    if routes is None:
        routes = fabric.route_cache[key] = _routes_over(fabric, src, dst, fabrics)
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
    single, paths = _shortest_paths(index, index.of[src], index.of[dst])
    if single:
        return tuple(paths)
    routes: list[Route] = []
    for hops in paths:
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

    A breadth-first search from both ends over forwarding nodes, each step growing the smaller
    frontier by one hop, until the two meet: with forward depth a and backward depth b (both at
    least 1) at the first meeting, every shortest path has length a + b (a shorter one would have
    met a step earlier), so both searches stay within a few hops of their end instead of sweeping
    the fabric. Then the layers are trimmed to the nodes that lie on such a path: backwards from
    the meeting layer on the forward side, forwards from it on the backward side."""
    if (src, dst) in index.parallel:
        return [[src], [dst]]
    fwd, bwd = index.fwd, index.bwd
    out, into = index.ball(src, out=True), index.ball(dst, out=False)
    a = b = 1
    met = _meets(out.levels[1], into, 1) or _meets(into.levels[1], out, 1)
    while not met:
        if not out.levels[a] or not into.levels[b]:
            index.forget_large(out, into)
            return None
        if len(out.levels[a]) <= len(into.levels[b]):  # grow the smaller frontier
            a += 1
            if len(out.levels) <= a:
                out.grow()
            met = _meets(out.levels[a], into, b)
        else:
            b += 1
            if len(into.levels) <= b:
                into.grow()
            met = _meets(into.levels[b], out, a)
    index.forget_large(out, into)
    hops = a + b
    if not prune:
        return [[]] * (hops + 1)
    dist_b = into.dist
    layers: list[list[int]] = [[] for _ in range(hops + 1)]
    layers[a] = sorted(u for u in out.levels[a] if dist_b.get(u) == b)
    for k in range(a - 1, -1, -1):  # forward side: nodes with a successor on a shortest path
        on = set(layers[k + 1])
        layers[k] = sorted(u for u in out.levels[k] if any(w in on for w in fwd[u]))
    for k in range(a + 1, hops + 1):  # backward side: nodes with a predecessor on a shortest path
        on = set(layers[k - 1])
        layers[k] = sorted(w for w in into.levels[hops - k] if any(v in on for v in bwd[w]))
    return layers


def _meets(level: list[int], ball: _Ball, most: int) -> bool:
    """Whether a node of ``level`` is at most ``most`` hops into the other search (``ball``)."""
    if len(ball.levels) <= most + 1:  # the ball holds nothing farther
        return not ball.dist.keys().isdisjoint(level)
    dist = ball.dist
    for w in level:
        d = dist.get(w)
        if d is not None and d <= most:
            return True
    return False


def _shortest_paths(index: _Index, src: int, dst: int) -> tuple[bool, list[tuple]]:
    """Shortest-hop paths whose interior avoids endpoints, at most MAX_NODE_PATHS, in name order
    (the order of a depth-first walk over name-sorted successors). Each path is its hops' lists of
    parallel channels, or, when every hop of every path is a single link (first value True), its
    channel ids: then each path is one route. Built backwards from ``dst``, layer by layer: the
    first paths from a node are its name-ordered next hops, each followed by that hop's first
    paths, so every node's list is made once and cut at MAX_NODE_PATHS."""
    layers = _layers(index, src, dst)
    if layers is None:
        raise nx.NetworkXNoPath(f"no route from {index.names[src]} to {index.names[dst]}")
    parallel = index.parallel
    nexts: dict[int, list[tuple[int, list[int]]]] = {}
    for k in range(len(layers) - 1):
        for u in layers[k]:
            nexts[u] = [(w, hop) for w in layers[k + 1] if (hop := parallel.get((u, w))) is not None]
    single = index.single_links or all(len(hop) == 1 for hops in nexts.values() for _, hop in hops)
    tails: dict[int, list[tuple]] = {dst: [()]}
    for k in range(len(layers) - 2, -1, -1):
        for u in layers[k]:
            out: list[tuple] = []
            for w, hop in nexts[u]:
                head = (hop[0],) if single else (hop,)
                out += [head + tail for tail in tails[w]]
                if len(out) >= MAX_NODE_PATHS:
                    break
            tails[u] = out[:MAX_NODE_PATHS]
    return single, tails[src]


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
    key = ("routing.latencies",)
    parts = fabric.route_cache.get(key)
    if parts is None:  # per channel: its latency, and the forwarding latency of the node it enters
        parts = fabric.route_cache[key] = ([c.latency_s for c in fabric.channels],
                                           [fabric.nodes[c.dst].latency_s for c in fabric.channels])
    link, forward = parts
    total = 0.0
    for cid in route:
        total += link[cid]
    for cid in route[:-1]:
        total += forward[cid]
    return total


def route_rate_Bps(fabric: Fabric, route: Route) -> float:
    """Bottleneck payload rate of one route (bytes/s, one direction)."""
    return min(fabric.channels[cid].rate_Bps for cid in route) if route else float("inf")


def route_shares(fabric: Fabric, routes: tuple[Route, ...] | list[Route]) -> np.ndarray:
    """Fraction of a transfer's bytes each of ``routes`` carries: in proportion to the route's
    bottleneck rate x its ``route_weights`` share (striping over parallel links, no link of the set
    carrying more than another's worth). The flow engine splits bytes so; estimates and timelines
    that follow it use this too."""
    rates = np.array([route_rate_Bps(fabric, r) for r in routes]) * route_weights(routes)
    return rates / rates.sum()
