"""Routing spreads over parallel links and planes and never transits a GPU."""

from pathlib import Path

import networkx as nx
import pytest

from simulator.topology import synthetic
from simulator.topology.builder import build_fabric
from simulator.topology.fabric import Channel, Fabric, Node
from simulator.topology.routing import MAX_NODE_PATHS, PREFERRED_FABRICS, equal_cost_routes, hop_count, route_latency_s

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"


def _two_plane_fabric(parallel: int) -> Fabric:
    """Two GPUs, two switches, ``parallel`` links from each GPU to each switch."""
    nodes = [Node("g0", "gpu", "x", rank=0), Node("g1", "gpu", "x", rank=1),
             Node("s0", "switch", "x", latency_s=5e-9), Node("s1", "switch", "x", latency_s=5e-9)]
    credit = synthetic.default_credit()
    chans = []
    link = 0
    for g in ("g0", "g1"):
        for s in ("s0", "s1"):
            for _ in range(parallel):
                for a, b in ((g, s), (s, g)):
                    chans.append(Channel(len(chans), link, a, b, "nvlink", "x", 2, 1e9, 1e9, 1e-9, credit))
                link += 1
    return Fabric.from_parts("planes", nodes, chans)


def test_routes_use_every_parallel_link_once():
    fabric = _two_plane_fabric(parallel=3)
    routes = equal_cost_routes(fabric, "g0", "g1")
    assert len(routes) == 6  # 2 planes x 3 parallel links
    first_hops = [r[0] for r in routes]
    assert len(set(first_hops)) == 6
    assert {fabric.channels[c].src for c in first_hops} == {"g0"}


def test_route_never_transits_gpu():
    fabric = synthetic.star(4)
    for route in equal_cost_routes(fabric, "gpu0", "gpu3"):
        interior = [fabric.channels[c].dst for c in route[:-1]]
        assert all(fabric.nodes[n].kind != "gpu" for n in interior)


def test_route_latency_adds_links_and_switch():
    fabric = _two_plane_fabric(parallel=1)
    route = equal_cost_routes(fabric, "g0", "g1")[0]
    assert route_latency_s(fabric, route) == 2e-9 + 5e-9


def _node_paths(fabric: Fabric, routes) -> list[list[str]]:
    """The distinct node paths of ``routes`` in their order."""
    out: list[list[str]] = []
    for r in routes:
        path = [fabric.channels[r[0]].src] + [fabric.channels[c].dst for c in r]
        if path not in out:
            out.append(path)
    return out


def _oracle(fabric: Fabric, src: str, dst: str, graphs: dict | None = None) -> list[list[str]]:
    """networkx's shortest node paths avoiding other GPUs, over NVLink alone if it connects the two
    (PREFERRED_FABRICS), else over every channel; in name order, the first MAX_NODE_PATHS.
    ``graphs``: the fabric's graph per channel set, filled on first use."""
    graphs = {} if graphs is None else graphs
    gpus = {n for n, node in fabric.nodes.items() if node.kind == "gpu"} - {src, dst}
    for allowed in (*PREFERRED_FABRICS, None):
        if allowed not in graphs:
            graphs[allowed] = nx.DiGraph((c.src, c.dst) for c in fabric.channels
                                         if allowed is None or c.fabric in allowed)
        graph = nx.restricted_view(graphs[allowed], gpus, [])
        if src in graph and dst in graph and nx.has_path(graph, src, dst):
            return sorted(nx.all_shortest_paths(graph, src, dst))[:MAX_NODE_PATHS]
    raise AssertionError(f"no path {src} -> {dst}")


def _pairs(fabric: Fabric) -> list[tuple[str, str]]:
    g = fabric.gpus
    pairs = [(g[0], g[1]), (g[0], g[5]), (g[3], g[72]), (g[3], g[72 + 3]), (g[5], g[72 * 3 + 40]),
             (g[71], g[72 * 7]), ("leaf0", g[100]), (g[9], "spine3"), ("spine0", "spine1"),
             ("rack2.nic4", "rack5.nic30"), ("rack1.grace3", "leaf7"), (g[7], "rack4.nic9")]
    return pairs


def test_routes_are_the_shortest_paths_networkx_finds_across_racks():
    """The two-ended search gives exactly the node paths (and order) of an exhaustive search."""
    fabric = build_fabric(TOPOLOGIES / "gb200_nvl72_x8_ib.yaml")
    graphs: dict = {}
    for src, dst in _pairs(fabric):
        expected = _oracle(fabric, src, dst, graphs)
        assert _node_paths(fabric, equal_cost_routes(fabric, src, dst)) == expected, (src, dst)
        assert hop_count(fabric, src, dst) == len(expected[0]) - 1


def _wide_fabric(spines: int) -> Fabric:
    """g0 - leaf0 - ``spines`` spines - leaf1 - g1, and g2 on leaf0 (a GPU that must not relay)."""
    credit = synthetic.default_credit()
    nodes = [Node(f"g{i}", "gpu", "x", rank=i) for i in range(3)]
    nodes += [Node(n, "switch", "x", latency_s=5e-9) for n in ("leaf0", "leaf1", *(f"s{k:02d}" for k in range(spines)))]
    edges = [("g0", "leaf0"), ("g2", "leaf0"), ("g1", "leaf1")]
    edges += [(leaf, f"s{k:02d}") for leaf in ("leaf0", "leaf1") for k in range(spines)]
    chans = []
    for link, (a, b) in enumerate(edges):
        for u, v in ((a, b), (b, a)):
            chans.append(Channel(len(chans), link, u, v, "network", "x", 1, 1e9, 1e9, 1e-9, credit))
    return Fabric.from_parts("wide", nodes, chans)


def test_more_shortest_paths_than_the_cap_keeps_the_first_in_name_order():
    fabric = _wide_fabric(spines=70)
    paths = _node_paths(fabric, equal_cost_routes(fabric, "g0", "g1"))
    assert len(paths) == MAX_NODE_PATHS
    assert paths == _oracle(fabric, "g0", "g1")
    assert hop_count(fabric, "g0", "g1") == 4
    assert _node_paths(fabric, equal_cost_routes(fabric, "g0", "g2")) == [["g0", "leaf0", "g2"]]


def test_no_route_between_unconnected_nodes():
    fabric = Fabric.from_parts("apart", [Node("a", "gpu", "x", rank=0), Node("b", "gpu", "x", rank=1)], [])
    with pytest.raises(nx.NetworkXNoPath):
        equal_cost_routes(fabric, "a", "b")
    with pytest.raises(nx.NetworkXNoPath):
        hop_count(fabric, "a", "b")
