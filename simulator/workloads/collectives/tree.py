"""Double binary tree (NCCL Tree) all_reduce: reduce up two complementary trees, broadcast down.

Tree A is the heap tree over rank positions (parent of i is (i-1)//2); tree B is its mirror
(position n-1-i), so a rank that is inner in one tree is a leaf in the other (n even). Each tree
carries half the message; up (reduce) and down (broadcast) run pipelined and concurrently.
On multi-node fabrics each channel chains the GPUs of a node behind a head GPU that differs per
channel (so channels use different NICs) and joins the heads by NCCL's two trees over nodes
(rails.py, dtree.py); each search channel runs once on each tree, as NCCL duplicates its channels.

Latency on multi-node fabrics is NCCL's (src/graph/tuning.cc, ``ncclTopoTuneModel``, Tree
all_reduce: ``baseLat + 2 x ((nRanks/nNodes - 1) x intraLat + log2i(nNodes) x interLat)``): a
piece of data goes up the deepest chain of a node (m - 1 NVLink steps), up the tree of node heads
(floor(log2 k) network steps), then back down the same way; every edge of a channel waits for that
path. Each step pays its own link kind's latency (the chain's NVLink, the heads' network row of
``parts/protocols.yaml``), so the tree's latency grows with log2 of the node count, not with the
node count, and its network steps are few.
"""

from __future__ import annotations

import math

from simulator.workloads.collectives.base import (CollectiveSpec, DagBuilder, channel_paths, dealt_paths, n_chunks,
                                                  route_lat_s)
from simulator.workloads.collectives.rails import nodes_of, tree_parents
from simulator.workloads.collectives.registry import AlgorithmRecord

OPS = frozenset({"all_reduce"})


def trees(gpus: tuple[str, ...]) -> list[dict[str, str]]:
    """The two trees as child -> parent maps (roots absent)."""
    n = len(gpus)
    heap = {gpus[i]: gpus[(i - 1) // 2] for i in range(1, n)}
    mirror = {gpus[n - 1 - i]: gpus[n - 1 - (i - 1) // 2] for i in range(1, n)}
    return [heap, mirror]


def tree_of(channel: int, channels: int) -> tuple[int, int]:
    """(tree, search channel) of ``channel`` among ``channels``: NCCL runs its search's channels
    twice, channel c on tree 0 and channel c + nChannels on tree 1 over the same chains and NICs
    (src/graph/connect.cc ``connectTrees``: channel0 = c, channel1 = c + nChannels), so the first
    half of the channels runs tree 0 and the second tree 1 (a single channel runs tree 0)."""
    half = (channels + 1) // 2
    return (0, channel) if channel < half else (1, channel - half)


def channel_trees(spec: CollectiveSpec, channel: int) -> tuple[list[dict[str, str]], int]:
    """The two trees of one search channel and their depth (edges from the deepest leaf to the
    root): rail-aware on multi-node fabrics (rails.tree_parents), else the heap tree and its mirror."""
    rail = tree_parents(spec.fabric, spec.gpus, channel)
    if rail is None:
        return trees(spec.gpus), max(1, int(math.floor(math.log2(spec.n))))
    chain, levels = chain_levels(spec)
    return rail, chain + levels


def chain_levels(spec: CollectiveSpec) -> tuple[int, int]:
    """On a multi-node fabric: the steps of the deepest chain inside a node (its GPUs less one, in a
    node of the most GPUs) and the levels of the tree over the k nodes' heads, floor(log2 k)
    (NCCL ``log2i(nNodes)``, src/graph/tuning.cc), at least 1."""
    nodes = nodes_of(spec.fabric, spec.gpus)
    return max(len(n) for n in nodes) - 1, max(1, int(math.floor(math.log2(len(nodes)))))


def path_delay_s(spec: CollectiveSpec, parent: dict[str, str], base: float, levels: float | None = None) -> float:
    """The delay of a multi-node tree's edges before their own route latency, which the engines
    charge (an edge (src, dst) waits this less ``route_lat_s(src, dst)``): the base latency plus the
    up-and-down path through the deepest chain and the heads' tree (module docstring), each step at
    its own kind's protocol hop and route latency (the mean over the tree's edges of that kind:
    inside a node, between nodes). ``levels``: the network steps of the path one way (default the
    heads' tree's, ``chain_levels``)."""
    chain, tree_levels = chain_levels(spec)
    levels = tree_levels if levels is None else levels
    fabric, nodes = spec.fabric, spec.fabric.nodes
    sums = {True: [0, 0.0, 0.0], False: [0, 0.0, 0.0]}  # inside a node?: [edges, hop, route latency]
    for c, p in parent.items():
        kind = sums[nodes[c].group == nodes[p].group]
        kind[0] += 1
        kind[1] += spec.hop_s(c, p)
        kind[2] += route_lat_s(fabric, c, p)

    def mean_step(kind: list) -> float:
        return kind[1] / kind[0] + kind[2] / kind[0] if kind[0] else 0.0

    return base + 2 * (chain * mean_step(sums[True]) + levels * mean_step(sums[False]))


def build(spec: CollectiveSpec, dag: DagBuilder) -> None:
    """The first half of the channels runs tree A, the second half tree B over the same chains
    (``tree_of``), each channel carrying S / channels; a single channel runs tree A alone."""
    C = spec.channels
    per_channel_trees = [channel_trees(spec, tree_of(c, C)[1]) for c in range(C)]
    multi_node = tree_parents(spec.fabric, spec.gpus, 0) is not None
    run_trees(spec, dag, [(tree_of(c, C)[0], *per_channel_trees[c]) for c in range(C)], multi_node)


def run_trees(spec: CollectiveSpec, dag: DagBuilder, channels: list[tuple[int, list[dict[str, str]], int]],
              multi_node: bool, levels: float | None = None, name: str = "tree") -> None:
    """Channel c's transfers up (reduce) and down (broadcast) its tree: ``channels[c]`` is (the tree
    it runs, the trees as child -> parent maps, their depth); each channel carries S / channels.
    ``multi_node``: delays by ``path_delay_s`` (``levels`` network steps one way), else the tree's
    own depth at each edge's kind."""
    C, fabric = spec.channels, spec.fabric
    base = spec.base_s()
    per_channel = spec.nbytes / C
    wire = spec.wire(per_channel)
    edge: dict[tuple, tuple] = {}  # (src, dst, down, depth, delay) -> (delay, rate, dealt paths)
    for c, (t, both, depth) in enumerate(channels):
        parent = both[t]
        if spec.granularity == "steady":
            ways = ((False, f"{name}{t}.ch{c}.up"), (True, f"{name}{t}.ch{c}.down"))
            start = path_delay_s(spec, parent, base, levels) if multi_node else 0.0
            for child, par in parent.items():
                if not spec.builds(child, par):  # the same pair both ways
                    continue
                for down, tag in ways:
                    src, dst = (par, child) if down else (child, par)
                    key = (src, dst, down, depth, start)
                    facts = edge.get(key)
                    if facts is None:
                        delay = start - route_lat_s(fabric, src, dst) if multi_node else (
                            base + 2 * depth * spec.hop_s(src, dst) + (2 * depth - 1) * route_lat_s(fabric, src, dst))
                        facts = edge[key] = (delay, tree_Bps(spec, src, dst, down), dealt_paths(fabric, src, dst, C))
                    dag.add(src, dst, wire, (), facts[0], facts[2][c], tag, facts[1])
        else:
            _chunked(dag, spec, parent, per_channel, c, base, f"{name}{t}.ch{c}")


def tree_Bps(spec: CollectiveSpec, src: str, dst: str, down: bool) -> float:
    """Rate limit of one channel's tree transfer: the CTA's rate (``CollectiveSpec.cta_Bps``: the
    op's one-channel rate or the slot loop), at most the rate of the half of the CTA's threads that
    runs this direction (``GpuSide.tree_Bps``: NCCL's ``runTreeSplit``); 0 without a GPU side."""
    rate = spec.cta_Bps(src, dst)
    side = spec.side
    split = side.tree_Bps(spec.protocol.name, up=not down) if side else 0.0
    return min(rate, split) if rate and split else rate


def _chunked(dag, spec, parent, per_channel, c, base, tag) -> None:
    C, fabric = spec.channels, spec.fabric
    children: dict[str, list[str]] = {}
    for child, par in parent.items():
        children.setdefault(par, []).append(child)
    order = _leaves_first(parent, children)
    loops = n_chunks(per_channel, spec.chunk_bytes)
    piece = spec.wire(per_channel / loops)
    up: dict[tuple[int, str], int] = {}
    down: dict[tuple[int, str], int] = {}
    for loop in range(loops):
        for v in order:  # children before parents
            deps = [up[(loop, ch)] for ch in children.get(v, [])]
            if loop >= spec.window:
                deps.append(up[(loop - spec.window, v)])
            p = parent[v]
            delay = spec.hop_s(v, p) + (base if v not in children and loop == 0 else 0.0)
            up[(loop, v)] = dag.add(v, p, piece, deps, delay, channel_paths(fabric, v, p, c, C), f"{tag}.l{loop}.up",
                                    tree_Bps(spec, v, p, down=False))
        for v in reversed(order):  # parents before children
            p = parent[v]
            deps = [down[(loop, p)]] if p in parent else [up[(loop, ch)] for ch in children[p]]
            down[(loop, v)] = dag.add(p, v, piece, deps, spec.hop_s(p, v),
                                      channel_paths(fabric, p, v, c, C), f"{tag}.l{loop}.down",
                                      tree_Bps(spec, p, v, down=True))


def _leaves_first(parent: dict[str, str], children: dict[str, list[str]]) -> list[str]:
    depth: dict[str, int] = {}

    def d(v: str) -> int:
        if v not in depth:
            depth[v] = 0 if v not in parent else d(parent[v]) + 1
        return depth[v]

    return sorted(parent, key=lambda v: (-d(v), v))


RECORD = AlgorithmRecord(
    "tree", OPS, build, "NCCL Tree: all_reduce up and down a double binary tree, across nodes",
    auto_multi_node_only=True, rail_aware=True, nccl_algo="Tree", nccl_rating=lambda n, op: 0.92 * 0.5)
"""Tree's rules: NCCL's collective channels, fewer for small calls; rail-aware trees on multi-node
fabrics; ``auto`` considers it only across nodes joined by the network (inside one NVLink domain
NCCL runs Ring or NVLS: measured, 2x H200, NCCL 2.28), rated across more than two nodes as NCCL's
tuner rates it (busBw x 0.92, algbw = busBw / 2: as if every node sent 2S / 0.92 over its NICs,
where NCCL's trees over three nodes send 1.5S), so ``auto`` runs Ring there at large sizes as NCCL
does, and ``--algo tree`` (NCCL_ALGO=Tree) the faster tree."""
