"""Rail-aware channel orders on multi-node fabrics (NCCL's ring/tree search, reduced to its effect).

On a multi-node fabric (GPUs grouped by ``Node.group``, nodes joined by the scale-out network), a
flat ring in rank order leaves every node through the same GPU, hence the same NIC, in every
channel: one rail carries all inter-node traffic. NCCL instead builds each channel so that its
inter-node hop uses a different NIC, and on rail-optimized networks enters and leaves a node on
the same rail (NCCL_CROSS_NIC=0). Here channel ``c`` leaves every node from local GPU
``e = c mod m`` (m GPUs per node) and enters the next node at the local GPU ``x`` closest to ``e``
in hops (same PCIe switch, hence same rails; ties: the next local index), each ``x`` used once; the
GPUs in between are visited in local order over NVLink. Over m channels every GPU (and the NIC
next to it) sends and receives exactly one inter-node hop per node boundary. NCCL's search finds
at most 32 distinct channels (MAXCHANNELS / 2, src/init.cc) and runs each twice (src/graph/connect.cc
``ncclTopoPostset``, at most MAXCHANNELS = 64), so on nodes of more than 32 GPUs (an NVL72 rack)
channel c leaves from local GPU c mod 32: 32 of the node's NICs carry the rings, 2 channels each.

Uneven nodes (a job of 72 + 56 GPUs, or one that a placement spreads unevenly) keep rail-aware
orders, as NCCL builds its rings and trees over nodes of any size: channel ``c`` leaves node i (m_i
GPUs) from local GPU ``c mod m_i`` and enters it at the GPU fewest hops from the previous node's
exit (not its own exit GPU; ties: the next local index after it), the others in local order between;
the channel count is rounded to the largest node's GPU count.

Expected ring bus bandwidth (all_gather, per GPU, one direction), n = k x m GPUs, R rails of
NIC payload rate B_nic per node, NVLink payload rate B_nv per GPU:
    every ring edge carries (n-1)/n S; a node has one outgoing edge per channel, spread over its
    R NICs, and each GPU's other (m-1)/m of its out-edges are NVLink, so
    busbw ~= min(R x B_nic, B_nv x m / (m-1)) x protocol efficiency.
"""

from __future__ import annotations

from simulator.hardware.nccl_gpu import load_gpu_side
from simulator.topology.fabric import Fabric
from simulator.topology.placement import layout
from simulator.topology.nics import net_hops
from simulator.topology.routing import hop_count
from simulator.workloads.collectives.base import link_kind
from simulator.workloads.collectives.dtree import dtree_parents


def nodes_of(fabric: Fabric, gpus) -> list[tuple[str, ...]]:
    """GPUs grouped by ``Node.group`` in order of first appearance (cached on the fabric per GPU
    tuple: every channel of every candidate asks)."""
    key = ("rails.nodes", tuple(gpus))
    nodes = fabric.route_cache.get(key)
    if nodes is None:
        groups: dict[str, list[str]] = {}
        for g in gpus:
            groups.setdefault(fabric.nodes[g].group, []).append(g)
        nodes = fabric.route_cache[key] = tuple(tuple(v) for v in groups.values())
    return list(nodes)


def rail_nodes(fabric: Fabric, gpus) -> list[tuple[str, ...]] | None:
    """The nodes when rail-aware orders apply: at least 2 nodes, one of them with at least 2 of
    the GPUs (nodes may differ in size), joined over the scale-out network; else None (flat rank
    order)."""
    nodes = nodes_of(fabric, gpus)
    if len(nodes) < 2 or max(len(n) for n in nodes) < 2:
        return None
    if link_kind(fabric, nodes[0][-1], nodes[1][0]) != "network":
        return None
    return nodes


def rail_channels(fabric: Fabric, gpus, channels: int) -> int:
    """``channels`` rounded down to a multiple of the distinct channels per node (at least one per
    GPU) when rail-aware orders apply, so every rail in use carries the same number of channels.
    NCCL's search finds at most ``search_channels`` (32) distinct channels, each leaving a node
    through one NIC, and runs each twice up to ``max_channels`` (64) (``distinct``): a node of more
    GPUs than that (an NVL72 rack: 72) sends over 32 of its NICs, on 64 channels."""
    nodes = rail_nodes(fabric, gpus)
    if nodes is None:
        return channels
    m = max(len(n) for n in nodes)
    lib = load_gpu_side().library
    if m > lib.search_channels:
        return min(lib.max_channels, 2 * lib.search_channels)
    return min(lib.max_channels, max(m, channels - channels % m))


def distinct(m: int) -> int:
    """Distinct channels (exit GPUs, hence NICs) of a node of ``m`` GPUs: every GPU's, up to NCCL's
    search limit (``search_channels``, ``rail_channels``)."""
    return min(m, load_gpu_side().library.search_channels)


def even(nodes: list[tuple[str, ...]]) -> bool:
    """Every node holds the same number of the GPUs."""
    return len({len(n) for n in nodes}) == 1


def exit_entry(fabric: Fabric, nodes: list[tuple[str, ...]]) -> list[tuple[int, int]]:
    """For each exit local index e: (e, entry local index x), x != e, x fewest hops from node 0's
    GPU e to node 1's GPU x (ties: smallest (x - e) mod m), every x used once."""
    m = len(nodes[0])
    hops = [[hop_count(fabric, nodes[0][e], nodes[1][x]) for x in range(m)] for e in range(m)]
    free, out = set(range(m)), []
    for e in range(m):
        choices = [x for x in free if x != e] or list(free)
        x = min(choices, key=lambda x: (hops[e][x], (x - e) % m))
        free.discard(x)
        out.append((e, x))
    return out


def ring_orders(fabric: Fabric, gpus: tuple[str, ...], channels: int) -> list[tuple[str, ...]]:
    """One ring (a permutation of ``gpus``) per channel: rank order on a single node; on
    multi-node fabrics each node entered at x and left from e (module docstring)."""
    nodes = rail_nodes(fabric, gpus)
    if nodes is None:
        return [tuple(gpus)] * channels
    if not even(nodes):
        return _uneven_rings(fabric, nodes, channels)
    m = len(nodes[0])
    local = []
    for e, x in exit_entry(fabric, nodes):
        middle = [(x + j) % m for j in range(1, m) if (x + j) % m != e]
        local.append([x, *middle, e] if x != e else [x, *middle])
    rings = [tuple(node[i] for node in nodes for i in order) for order in local]
    d = distinct(m)
    return [rings[c % d] for c in range(channels)]  # channel c and c + d share one tuple


def _uneven_rings(fabric: Fabric, nodes: list[tuple[str, ...]], channels: int) -> list[tuple[str, ...]]:
    """Rings over nodes of different sizes (module docstring): channel c leaves node i from local
    GPU c mod m_i and enters it at the GPU fewest hops from the previous node's exit."""
    rings: dict[tuple[int, ...], tuple[str, ...]] = {}
    out = []
    for c in range(channels):
        exits = tuple(c % distinct(len(node)) for node in nodes)
        ring = rings.get(exits)
        if ring is None:
            order: list[str] = []
            for i, node in enumerate(nodes):
                m, e = len(node), exits[i]
                if m == 1:
                    order.append(node[0])
                    continue
                came_from = nodes[i - 1][exits[i - 1]]
                x = min((x for x in range(m) if x != e),
                        key=lambda x: (hop_count(fabric, came_from, node[x]), (x - e) % m))
                middle = [(x + j) % m for j in range(1, m) if (x + j) % m != e]
                order += [node[j] for j in (x, *middle, e)]
            ring = rings[exits] = tuple(order)
        out.append(ring)
    return out


def tree_parents(fabric: Fabric, gpus: tuple[str, ...], channel: int) -> list[dict[str, str]] | None:
    """NCCL's double binary tree of one search channel on a multi-node fabric, as two child ->
    parent maps: inside each node a chain starting at local GPU ``channel mod m`` (the node's head,
    which sends to and receives from the other nodes on its own NIC, so channels use different
    NICs), and the heads joined by NCCL's trees over node indices (src/graph/trees.cc
    ``ncclGetDtree``: ``dtree.dtree_parents``). Nodes of m_i GPUs start their chain at local GPU
    ``channel mod m_i`` (uneven nodes: each chain as long as its node); at one GPU per node the
    trees join the GPUs themselves. None inside one node."""
    nodes = network_nodes(fabric, gpus)
    if nodes is None:
        return None
    heads = [channel % distinct(len(node)) for node in nodes]
    chains = [node[h:] + node[:h] for node, h in zip(nodes, heads)]
    out = []
    for tree in dtree_parents(len(nodes)):
        parent: dict[str, str] = {}
        for chain in chains:
            for i in range(1, len(chain)):
                parent[chain[i]] = chain[i - 1]
        for i, p in enumerate(tree):
            if p >= 0:
                parent[chains[i][0]] = chains[p][0]
        out.append(parent)
    return out


def network_nodes(fabric: Fabric, gpus) -> list[tuple[str, ...]] | None:
    """The nodes of a call that spans several joined by the scale-out network, whatever their GPU
    counts (``rail_nodes``, or one GPU per node: NCCL's nNodes > 1); None inside one node."""
    nodes = rail_nodes(fabric, gpus)
    if nodes is None and one_gpu_per_node(fabric, gpus):
        nodes = nodes_of(fabric, gpus)
    return nodes


def one_gpu_per_node(fabric: Fabric, gpus) -> bool:
    """Every node (``Node.group``) holds one of the GPUs, there are several, and they are joined by
    the scale-out network (NCCL's nNodes == nRanks); cached on the fabric per GPU tuple."""
    key = ("rails.ppn1", tuple(gpus))
    cache = fabric.route_cache
    value = cache.get(key)
    if value is None:
        nodes = nodes_of(fabric, gpus)
        value = cache[key] = (len(nodes) > 1 and max(len(n) for n in nodes) == 1
                              and link_kind(fabric, nodes[0][0], nodes[1][0]) == "network")
    return value


def job_set(fabric: Fabric, gpus) -> frozenset[str]:
    """The GPUs of a call as a set, cached on the fabric per GPU tuple (every transfer asks)."""
    key = ("rails.job", tuple(gpus))
    found = fabric.route_cache.get(key)
    if found is None:
        found = fabric.route_cache[key] = frozenset(gpus)
    return found


def pxn_relay(fabric: Fabric, gpus: tuple[str, ...], src: str, dst: str) -> str | None:
    """PXN (NCCL src/graph/paths.cc: a GPU reaches a NIC through an NVLink peer on its node,
    ``ncclTopoGetPxnRanks``; on by default, ``NCCL_PXN_DISABLE=1`` turns it off): the GPU of the
    job on ``src``'s host (compute tray or server: NCCL relays only through a GPU of the same system,
    ``NCCL_TOPO_ID_SYSTEM_ID``) through which ``src`` sends to ``dst`` on another node, or None to
    send from its own NIC. A relay is used when its NIC reaches ``dst`` in fewer hops than any of
    ``src``'s own NIC's (``topology.nics``; on a rail-optimized network: the NIC on ``dst``'s rail,
    where ``src``'s own traffic would cross a spine) and ``src`` reaches it over NVLink; of several,
    the fewest hops from ``src``, then the same local index as ``dst``. NCCL relays only in the GPU -> NIC
    direction (receiving locally, sending remotely), as here: the relay's NIC sends. Cached on the
    fabric per (job, pair)."""
    key = ("rails.pxn", tuple(gpus), src, dst)
    cache = fabric.route_cache
    if key in cache:
        return cache[key]
    relay = None
    group = fabric.nodes[src].group
    if fabric.nodes[dst].group != group and link_kind(fabric, src, dst) == "network":
        node = next(n for n in nodes_of(fabric, gpus) if fabric.nodes[n[0]].group == group)
        far = next(n for n in nodes_of(fabric, gpus) if fabric.nodes[n[0]].group == fabric.nodes[dst].group)
        j = far.index(dst)
        job = job_set(fabric, gpus)
        own = net_hops(fabric, src, dst, job)
        host = layout(fabric).unit_of["tray"]
        peers = [g for g in node if g != src and host[g] == host[src] and link_kind(fabric, src, g) == "nvlink"]
        best = min(peers, default=None, key=lambda g: (net_hops(fabric, g, dst, job), hop_count(fabric, src, g),
                                                      node.index(g) != j, node.index(g)))
        if best is not None and net_hops(fabric, best, dst, job) < own:
            relay = best
    cache[key] = relay
    return relay
