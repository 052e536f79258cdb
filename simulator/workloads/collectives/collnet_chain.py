"""CollNetChain: a chain of each node's GPUs under a head that reduces with the other nodes in the
InfiniBand switch (SHARP), NCCL's CollNet Chain algorithm.

NCCL (src/device/all_reduce.h ``RunWorkColl<AllReduce, COLLNET_CHAIN, Simple>``, runTreeUpDown over
the chain; src/graph/connect.cc ``connectCollNet``; the SHARP plugin, NCCL_COLLNET_ENABLE=1): every
channel chains the GPUs of a node (as Tree does inside a node); the chain's head sends the node's
partial sum up to the network, where the switch reduces the heads of every node (SHARP in-network
aggregation), and gets the total back, which goes down the chain. Here channel c's chain starts at
local GPU c mod m (``rails.tree_parents``' chains: channels use different NICs) and the head's
parent is the switch of its own NIC if that switch reduces (``Node.reduction``; the rail's leaf on a
rail-optimized fabric, where the heads of one channel all meet), so the network carries S / C
per channel each way per node, whatever the node count, and the chains 2S each way per GPU over
NVLink (up and down): on HGX H100 servers the chain binds, not the NICs.

The CTA is split between reduce-up and broadcast-down as Tree's (``tree.tree_Bps``); latency is
NCCL's CollNetChain model (src/graph/tuning.cc: ``2 x (nRanks/nNodes - 1) x intraLat + interLat``):
the chain's NVLink steps both ways and one network step for the switch's round trip
(``tree.path_delay_s`` with half a level each way). Not modelled: the switch's aggregation rate and
buffers (SHARP runs at line rate here), CollNetDirect, and NVLS with SHARP (NCCL's NVLS algorithm
across nodes when CollNet is on).
"""

from __future__ import annotations

from simulator.errors import InputError
from simulator.topology.placement import layout
from simulator.workloads.collectives.base import CollectiveSpec, DagBuilder
from simulator.workloads.collectives.rails import distinct, rail_nodes
from simulator.workloads.collectives.registry import AlgorithmRecord
from simulator.workloads.collectives.tree import run_trees

OPS = frozenset({"all_reduce"})


def sharp_switch(fabric, gpu: str) -> str | None:
    """The switch of ``gpu``'s own NIC (the node's GPUs and NICs paired in order, as on HGX servers
    and GB200 trays: GPU j of m takes NIC j x NICs / m) if it reduces in the network (SHARP), else
    None. Cached on the fabric."""
    key = ("collnet.switch", gpu)
    cache = fabric.route_cache
    if key not in cache:
        group = fabric.nodes[gpu].group
        nics = [n for n, node in fabric.nodes.items() if node.kind == "nic" and node.group == group]
        node_gpus = layout(fabric).nodes.get(group, ())
        found = None
        if nics and node_gpus:
            nic = nics[layout(fabric).local[gpu] * len(nics) // len(node_gpus)]
            switch = next((c.dst for c in fabric.out_channels(nic) if c.fabric == "network"), None)
            found = switch if switch is not None and fabric.nodes[switch].reduction else None
        cache[key] = found
    return cache[key]


def chains(fabric, gpus: tuple[str, ...], channel: int) -> dict[str, str] | None:
    """Channel ``channel``'s chains as one child -> parent map: each node's GPUs from local GPU
    ``channel mod m`` on, its head's parent the SHARP switch (``sharp_switch``); None when a head
    reaches none."""
    nodes = rail_nodes(fabric, gpus)
    parent: dict[str, str] = {}
    for node in nodes:
        h = channel % distinct(len(node))
        chain = node[h:] + node[:h]
        switch = sharp_switch(fabric, chain[0])
        if switch is None:
            return None
        parent[chain[0]] = switch
        for j in range(1, len(chain)):
            parent[chain[j]] = chain[j - 1]
    return parent


def applicable(fabric, gpus) -> str | None:
    """None if CollNetChain can run: nodes joined by the network whose heads (every channel's) reach
    a switch with in-network reduction (SHARP); else why."""
    nodes = rail_nodes(fabric, gpus)
    if nodes is None:
        return "CollNetChain reduces across nodes in the network; these GPUs are in one node"
    if any(chains(fabric, gpus, c) is None for c in range(max(distinct(len(n)) for n in nodes))):
        return ("the first network switch of the GPUs' NICs has no in-network reduction (SHARP): "
                "CollNet needs one (use ring or tree)")
    return None


def build(spec: CollectiveSpec, dag: DagBuilder) -> None:
    reason = applicable(spec.fabric, spec.gpus)
    if reason:
        raise InputError(f"collnet_chain impossible on {spec.fabric.name}: {reason}", field="algo")
    m = max(len(n) for n in rail_nodes(spec.fabric, spec.gpus))
    channels = []
    for c in range(spec.channels):
        parent = chains(spec.fabric, spec.gpus, c)
        channels.append((0, [parent], m))  # depth: the chain and the switch
    run_trees(spec, dag, channels, multi_node=True, levels=0.5, name="collnet")


RECORD = AlgorithmRecord(
    "collnet_chain", OPS, build, "NCCL CollNetChain: each node's chain, reduced across nodes in the switch (SHARP)",
    applicable=applicable, auto_ops=frozenset(), rail_aware=True, nccl_algo="CollNetChain",
    nccl_since=(2, 14))
"""CollNetChain's rules: NCCL's collective channels, fewer for small calls, rounded to the rails;
``auto`` never considers it: NCCL runs CollNet only with NCCL_COLLNET_ENABLE=1 and its SHARP plugin,
so it runs by name (``--algo collnet_chain``, a log's NCCL_ALGO=CollNetChain). Simple only
(NCCL: CollNetChain's busBw is 0 for LL and LL128)."""
