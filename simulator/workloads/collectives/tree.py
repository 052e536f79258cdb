"""Double binary tree (NCCL Tree) all_reduce: reduce up two complementary trees, broadcast down.

Tree A is the heap tree over rank positions (parent of i is (i-1)//2); tree B is its mirror
(position n-1-i), so a rank that is inner in one tree is a leaf in the other (n even). Each tree
carries half the message; up (reduce) and down (broadcast) run pipelined and concurrently.
On multi-node fabrics each channel chains the GPUs of a node behind a head GPU that differs per
channel (so channels use different NICs) and joins the heads by the two trees (rails.py).
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


def channel_trees(spec: CollectiveSpec, channel: int) -> tuple[list[dict[str, str]], int]:
    """The two trees of one channel and their depth (edges from the deepest leaf to the root):
    rail-aware on multi-node fabrics (rails.tree_parents), else the heap tree and its mirror."""
    rail = tree_parents(spec.fabric, spec.gpus, channel)
    if rail is None:
        return trees(spec.gpus), max(1, int(math.floor(math.log2(spec.n))))
    nodes = nodes_of(spec.fabric, spec.gpus)  # the longest chain, in a node of the most GPUs
    return rail, max(len(n) for n in nodes) - 1 + max(1, int(math.floor(math.log2(len(nodes)))))


def build(spec: CollectiveSpec, dag: DagBuilder) -> None:
    """Channel c runs tree c mod 2 (as NCCL alternates the two trees over its channels), each
    channel carrying S / channels; a single channel runs tree A alone."""
    C, fabric = spec.channels, spec.fabric
    base = spec.base_s()
    per_channel = spec.nbytes / C
    per_channel_trees = [channel_trees(spec, c) for c in range(C)]
    wire = spec.wire(per_channel)
    edge: dict[tuple[str, str, int], tuple] = {}  # (src, dst, depth) -> (delay, rate, dealt paths)
    for c in range(C):
        t = c % 2
        both, depth = per_channel_trees[c]
        parent = both[t]
        if spec.granularity == "steady":
            ways = ((False, f"tree{t}.ch{c}.up"), (True, f"tree{t}.ch{c}.down"))
            for child, par in parent.items():
                if not spec.builds(child, par):  # the same pair both ways
                    continue
                for down, tag in ways:
                    src, dst = (par, child) if down else (child, par)
                    facts = edge.get((src, dst, depth))
                    if facts is None:
                        facts = edge[(src, dst, depth)] = (
                            base + 2 * depth * spec.hop_s(src, dst) + (2 * depth - 1) * route_lat_s(fabric, src, dst),
                            spec.cta_Bps(src, dst), dealt_paths(fabric, src, dst, C))
                    dag.add(src, dst, wire, (), facts[0], facts[2][c], tag, facts[1])
        else:
            _chunked(dag, spec, parent, per_channel, c, base, f"tree{t}.ch{c}")


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
                                    spec.cta_Bps(v, p))
        for v in reversed(order):  # parents before children
            p = parent[v]
            deps = [down[(loop, p)]] if p in parent else [up[(loop, ch)] for ch in children[p]]
            down[(loop, v)] = dag.add(p, v, piece, deps, spec.hop_s(p, v),
                                      channel_paths(fabric, p, v, c, C), f"{tag}.l{loop}.down", spec.cta_Bps(p, v))


def _leaves_first(parent: dict[str, str], children: dict[str, list[str]]) -> list[str]:
    depth: dict[str, int] = {}

    def d(v: str) -> int:
        if v not in depth:
            depth[v] = 0 if v not in parent else d(parent[v]) + 1
        return depth[v]

    return sorted(parent, key=lambda v: (-d(v), v))


RECORD = AlgorithmRecord(
    "tree", OPS, build, "NCCL Tree: all_reduce up and down a double binary tree, across nodes",
    auto_multi_node_only=True, rail_aware=True, nccl_algo="Tree")
"""Tree's rules: NCCL's collective channels, fewer for small calls; rail-aware trees on multi-node
fabrics; ``auto`` considers it only across nodes joined by the network (inside one NVLink domain
NCCL runs Ring or NVLS: measured, 2x H200, NCCL 2.28)."""
