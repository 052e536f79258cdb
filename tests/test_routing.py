"""Routing spreads over parallel links and planes and never transits a GPU."""

from simulator.topology import synthetic
from simulator.topology.fabric import Channel, Fabric, Node
from simulator.topology.routing import equal_cost_routes, route_latency_s


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
