"""Summary figures of a built fabric: counts, per-GPU bandwidth, bisection, static power, cables.

Everything is computed from the :class:`Fabric` records (nothing is read back from the YAML), and
returned as a plain JSON-ready dict; the CLI only prints it. Bandwidths are **data rates**: the
SerDes line rate after encoding/FEC, before packet-header protocol efficiency (50 GB/s per
direction for an NVLink 5 link; ``Channel.line_rate_Bps`` is the code's name for it; the levels are
defined in docs/reference/glossary.md), in decimal GB/s (10^9 B/s), always given per direction and
bidirectional side by side.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import networkx as nx

from simulator.topology.fabric import Fabric
from simulator.units import GB

FABRICS = ("nvlink", "c2c", "pcie", "network")
NETWORK_ENDPOINTS = frozenset({"gpu", "nic"})
"""Node kinds whose network ports count towards a GPU's scale-out bandwidth."""


def describe(fabric: Fabric) -> dict[str, Any]:
    """The ``fabricsim describe --json`` object of ``fabric`` (see module docstring for units)."""
    warnings = list(fabric.warnings)
    kinds = Counter(n.kind for n in fabric.nodes.values())
    per_gpu = per_gpu_GBps(fabric, warnings)
    return {
        "name": fabric.name,
        "gpus": len(fabric.gpus),
        "switch_chips": kinds.get("switch", 0),
        "links": fabric.n_links,
        "lane_pairs": sum(c.lanes for c in fabric.channels),
        "per_gpu_GBps": per_gpu,
        "bisection_GBps": bisection_GBps(fabric),
        "power_W": {"total": float(sum(fabric.static_power_W.values())), **fabric.static_power_W},
        "cables": cable_counts(fabric),
        "warnings": warnings,
        "faults": list(fabric.faults),
        "devices": dict(Counter(n.part for n in fabric.nodes.values())),
        "device_kinds": dict(kinds),
        "links_by_generation": dict(_links_by_generation(fabric)),
    }


def _links_by_generation(fabric: Fabric) -> Counter:
    seen: dict[int, str] = {}
    for ch in fabric.channels:
        seen.setdefault(ch.link, ch.generation)
    return Counter(seen.values())


def _pair(per_direction_Bps: float, reverse_Bps: float | None = None) -> dict[str, float]:
    back = per_direction_Bps if reverse_Bps is None else reverse_Bps
    return {"per_direction": round(min(per_direction_Bps, back) / GB, 6),
            "bidirectional": round((per_direction_Bps + back) / GB, 6)}


def per_gpu_GBps(fabric: Fabric, warnings: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Fabric name -> data rate of one GPU's ports (the smallest GPU's, with a warning if they differ).

    ``network`` is the scale-out bandwidth per GPU: all network ports of GPUs and NICs divided by
    the number of GPUs.
    """
    out: dict[str, dict[str, float]] = {}
    gpus = fabric.gpus
    if not gpus:
        return out
    into: dict[tuple[str, str], float] = {}  # (GPU, fabric) -> ingress data rate, one pass over channels
    for c in fabric.channels:
        if c.dst in fabric.nodes and fabric.nodes[c.dst].kind == "gpu":
            into[(c.dst, c.fabric)] = into.get((c.dst, c.fabric), 0.0) + c.line_rate_Bps
    for kind in ("nvlink", "c2c", "pcie"):
        egress = {g: sum(c.line_rate_Bps for c in fabric.out_channels(g) if c.fabric == kind) for g in gpus}
        if not any(egress.values()):
            continue
        low, high = min(egress.values()), max(egress.values())
        if warnings is not None and high - low > 1e-9 * high:
            warnings.append(f"GPUs differ in {kind} bandwidth: {low / GB:g} to {high / GB:g} GB/s per "
                            f"direction; the smallest is reported")
        ingress = min(into.get((g, kind), 0.0) for g in gpus)
        out[kind] = _pair(low, ingress)
    net = [c for c in fabric.channels if c.fabric == "network" and fabric.nodes[c.src].kind in NETWORK_ENDPOINTS]
    if net:
        egress_net = sum(c.line_rate_Bps for c in net) / len(gpus)
        ingress_net = sum(c.line_rate_Bps for c in fabric.channels if c.fabric == "network"
                          and fabric.nodes[c.dst].kind in NETWORK_ENDPOINTS) / len(gpus)
        out["network"] = _pair(egress_net, ingress_net)
    return out


def _capacity_graph(fabric: Fabric) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(fabric.nodes)
    for ch in fabric.channels:
        if graph.has_edge(ch.src, ch.dst):
            graph[ch.src][ch.dst]["capacity"] += ch.line_rate_Bps
        else:
            graph.add_edge(ch.src, ch.dst, capacity=ch.line_rate_Bps)
    return graph


def _max_flow(graph: nx.DiGraph, sources: list[str], sinks: list[str]) -> float:
    """Max flow from ``sources`` to ``sinks``; GPUs never relay (as in routing), so sending GPUs
    lose their inbound edges and receiving GPUs their outbound ones."""
    g = graph.copy()
    g.remove_edges_from([e for s in sources for e in list(g.in_edges(s))])
    g.remove_edges_from([e for t in sinks for e in list(g.out_edges(t))])
    g.add_edges_from((("__src__", s) for s in sources))  # no capacity attribute: unbounded
    g.add_edges_from(((t, "__dst__") for t in sinks))
    return nx.maximum_flow_value(g, "__src__", "__dst__")


def bisection_GBps(fabric: Fabric) -> dict[str, float]:
    """Max flow between the two rank halves of the GPUs (data rate), each way and both ways together.

    ``per_direction`` is the smaller of the two one-way flows; ``bidirectional`` their sum.
    """
    gpus = fabric.gpus
    if len(gpus) < 2:
        return {"per_direction": 0.0, "bidirectional": 0.0}
    half = len(gpus) // 2
    low, high = gpus[:half], gpus[half:]
    graph = _capacity_graph(fabric)
    return _pair(_max_flow(graph, low, high), _max_flow(graph, high, low))


def cable_counts(fabric: Fabric) -> dict[str, int]:
    """Physical links by cable kind (each link is one cable assembly; board traces not counted)."""
    kind_of: dict[int, str] = {}
    for ch in fabric.channels:
        if ch.cable:
            kind_of.setdefault(ch.link, ch.cable)
    return dict(sorted(Counter(kind_of.values()).items()))
