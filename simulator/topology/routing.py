"""Routes: equal-cost paths between two nodes, spread over parallel links and switch planes.

A route is a tuple of channel ids. GPUs are endpoints and never forward traffic (NCCL does not
relay through a GPU without a kernel doing it; the workloads model such relays as separate
transfers); hosts may (a root complex forwards PCIe peer-to-peer between its ports). Among shortest node paths (fewest hops), parallel links between the same two
nodes are dealt out diagonally: path *j* uses parallel link *j mod k* at each hop, so the set of
paths touches every parallel link once and no product explosion occurs (HGX H100: 5+4+4+5 = 18
paths GPU to GPU; GB200 NVL72: one per switch chip, 18).

Two nodes joined by an NVLink-only path are routed over NVLink only (``PREFERRED_FABRICS``), as
NCCL's P2P transport does: a shared PCIe switch would otherwise offer a 2-hop GPU-to-GPU path as
short as the one through an NVSwitch. Other pairs route over all channels.
"""

from __future__ import annotations

import networkx as nx

from simulator.topology.fabric import Fabric

_ENDPOINT_KINDS = frozenset({"gpu"})
MAX_NODE_PATHS = 64
"""Cap on distinct shortest node paths considered per pair (large leaf/spine fabrics)."""

PREFERRED_FABRICS: tuple[frozenset[str], ...] = (frozenset({"nvlink"}),)
"""Channel sets tried in order before falling back to every channel (see module docstring)."""

Route = tuple[int, ...]


def _parallel(fabric: Fabric, u: str, v: str, allowed: frozenset[str] | None = None) -> list[int]:
    if allowed is None:
        return sorted(fabric.graph[u][v])
    return sorted(k for k in fabric.graph[u][v] if fabric.channels[k].fabric in allowed)


def equal_cost_routes(fabric: Fabric, src: str, dst: str) -> tuple[Route, ...]:
    """All shortest-hop routes from ``src`` to ``dst`` as channel-id tuples (deterministic order).

    Cached on the fabric. Raises ``nx.NetworkXNoPath`` when the two are not connected.
    """
    key = (src, dst)
    routes = fabric.route_cache.get(key)
    if routes is None:
        routes = fabric.route_cache[key] = _compute_routes(fabric, src, dst)
    return routes


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
    """Shortest-hop routes using only channels of the ``allowed`` fabrics (None: all)."""
    routes: list[Route] = []
    for path in _shortest_node_paths(fabric, src, dst, allowed):
        hops = [_parallel(fabric, u, v, allowed) for u, v in zip(path, path[1:])]
        width = max(len(h) for h in hops)
        routes.extend(tuple(h[j % len(h)] for h in hops) for j in range(width))
    return tuple(routes)


def _restricted_graph(fabric: Fabric, allowed: frozenset[str]) -> nx.MultiDiGraph:
    """The fabric's graph with only channels of ``allowed`` fabrics; built once per fabric (cached
    in ``route_cache`` under ``(None, allowed)``, a key no node pair can take)."""
    key = (None, allowed)
    graph = fabric.route_cache.get(key)
    if graph is None:
        if all(ch.fabric in allowed for ch in fabric.channels):
            graph = fabric.graph
        else:
            graph = nx.MultiDiGraph()
            graph.add_nodes_from(fabric.graph.nodes)
            graph.add_edges_from((ch.src, ch.dst, ch.id) for ch in fabric.channels if ch.fabric in allowed)
        fabric.route_cache[key] = graph
    return graph


def _shortest_node_paths(fabric: Fabric, src: str, dst: str,
                         allowed: frozenset[str] | None = None) -> list[list[str]]:
    """Shortest-hop node paths whose interior avoids endpoints, at most MAX_NODE_PATHS, sorted."""
    graph, nodes = fabric.graph, fabric.nodes
    if allowed is not None:
        graph = _restricted_graph(fabric, allowed)

    def transit(n: str) -> bool:
        return nodes[n].kind not in _ENDPOINT_KINDS

    dist = {dst: 0}
    frontier = [dst]
    while frontier and src not in dist:  # BFS backwards from dst
        nxt = []
        for v in frontier:
            if v != dst and not transit(v):
                continue
            for u in graph.pred[v]:
                if u not in dist:
                    dist[u] = dist[v] + 1
                    nxt.append(u)
        frontier = nxt
    if src not in dist:
        raise nx.NetworkXNoPath(f"no route from {src} to {dst}")
    paths: list[list[str]] = []

    def walk(path: list[str]) -> None:
        if len(paths) >= MAX_NODE_PATHS:
            return
        u = path[-1]
        if u == dst:
            paths.append(list(path))
            return
        for w in sorted(graph.succ[u]):
            if dist.get(w) == dist[u] - 1 and (w == dst or transit(w)):
                path.append(w)
                walk(path)
                path.pop()

    walk([src])
    return paths


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
