"""Ring algorithm (NCCL Ring): every rank sends to its successor, on several channels at once.

all_reduce = reduce-scatter then all-gather around the ring: 2(n-1) steps of S/n each;
reduce_scatter and all_gather: n-1 steps of S/n (S = whole array); broadcast: a pipelined chain
from the root (n-1 hops, each link carries S) along each channel's ring; reduce: the same chain
ending at the root, every rank adding its buffer on the way (NCCL runs reduce only as Ring).
Channel c uses its share of the equal-cost routes (base.channel_paths), so together the channels
cover every parallel link and switch plane; on multi-node fabrics each channel's ring leaves every
node through a different GPU and NIC (rails.ring_orders).
"""

from __future__ import annotations

from simulator.workloads.collectives.base import (CollectiveSpec, DagBuilder, channel_paths, dealt_paths,
                                                  link_kind, n_chunks, route_lat_s)
from simulator.workloads.collectives.rails import nodes_of, one_gpu_per_node, ring_orders
from simulator.workloads.collectives.gpu_side import CtaRule
from simulator.workloads.collectives.registry import AlgorithmRecord

OPS = frozenset({"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce"})
ONE_PASS = frozenset({"reduce_scatter", "all_gather"})
"""The ring ops of n - 1 steps (NCCL's nsteps; all_reduce takes 2(n - 1), broadcast and reduce n)."""
Done = dict[str, list[int]]
"""GPU -> ids of the transfers after which that GPU's part of a phase is complete."""


def ring_phase(dag: DagBuilder, spec: CollectiveSpec, ring: tuple[str, ...], steps: int,
               step_bytes: float, after: Done | None = None, tag: str = "ring",
               base_s: float = 0.0, orders: list[tuple[str, ...]] | None = None,
               program: str | None = None) -> Done:
    """``steps`` ring steps, each moving ``step_bytes`` of data (all channels together) from every
    rank of ``ring`` to its successor; starts once ``after`` of both ends are done. ``orders``:
    the ring of each channel (permutations of ``ring``; default ``ring`` for every channel).
    ``program``: the ring op whose CTA loop this phase runs (default ``spec.op``): its link
    primitives set the channel's rate, and its last primitive, which leaves the link idle, adds
    its time once per chunk (in steady state, ``step_bytes / channels`` in all)."""
    after = after or {}
    m, C = len(ring), spec.channels
    program = program or spec.op
    orders = orders or [ring] * C
    done: Done = {g: [] for g in ring}
    if m < 2 or steps == 0:
        for g in ring:
            done[g] = list(after.get(g, []))
        return done
    per_channel = step_bytes / C
    if spec.granularity == "chunked":
        _chunked(dag, spec, orders, steps, per_channel, after, tag, base_s, done, program)
        return done
    local = spec.ring_local_s(program, m, per_channel)
    per_order: dict[tuple[str, ...], tuple[float, list]] = {}  # channels repeat the same few orders
    wire = spec.wire(steps * per_channel)
    for c in range(C):
        ring = orders[c]
        known = per_order.get(ring)
        if known is None:  # the order's step delay and its built edges: (index, src, dst, deps, rate, paths)
            built = spec.built_edges(ring)
            hop, lat = edge_latency(spec, *ring_edges(spec, ring, built))
            known = per_order[ring] = (
                base_s + steps * hop + (steps - 1) * lat + local,
                [(i, src, dst, after.get(src, []) + after.get(dst, []), spec.cta_Bps(src, dst, ring=(program, m)),
                  dealt_paths(spec.fabric, src, dst, C)) for i, src, dst in built])
        delay, edges = known
        for i, src, dst, deps, rate, dealt in edges:
            tid = dag.add(src, dst, wire, deps, delay, dealt[c], f"{tag}.ch{c}.r{i}", rate)
            done[src].append(tid)
            done[dst].append(tid)
    return done


def ring_edges(spec: CollectiveSpec, ring: tuple[str, ...],
               built: list[tuple[int, str, str]]) -> tuple[list[tuple[str, str]], list[int] | None]:
    """The edges of ``ring`` and their weights in its mean step latency (None: all 1), from its
    ``built`` edges (``CollectiveSpec.built_edges``). For a tuner estimate (``spec.sample``) these
    are the edges inside the sampled node, standing for the same edges inside each of the ring's
    nodes (every node of a rail-aware ring has the same inner edges), and those between nodes."""
    kept = [(a, b) for _, a, b in built]
    if spec.sample is None:
        return kept, None
    nodes = spec.fabric.nodes
    k = len(nodes_of(spec.fabric, ring))
    return kept, [k if nodes[a].group == nodes[b].group else 1 for a, b in kept]


def edge_latency(spec: CollectiveSpec, edges: list[tuple[str, str]],
                 weights: list[int] | None = None) -> tuple[float, float]:
    """Protocol hop latency and route latency (s) of one step of a pipeline over ``edges``: their
    mean (weighted by ``weights``), since in steady state a piece of data crosses the edges in turn
    (a ring that leaves a node over the network once per m steps pays the network latency once per
    m steps)."""
    if not edges:
        return 0.0, 0.0
    hops = [ring_hop_s(spec, a, b) for a, b in edges]
    lats = [route_lat_s(spec.fabric, a, b) for a, b in edges]
    if min(hops) == max(hops) and min(lats) == max(lats):
        return hops[0], lats[0]
    if weights is None:
        return sum(hops) / len(hops), sum(lats) / len(lats)
    total = sum(weights)
    return (sum(w * h for w, h in zip(weights, hops)) / total,
            sum(w * x for w, x in zip(weights, lats)) / total)


def ring_hop_s(spec: CollectiveSpec, src: str, dst: str) -> float:
    """Protocol hop latency of one ring step (``CollectiveSpec.hop_s``, the Ring row), the Tree row's
    for a network step when every node holds one GPU (``one_per_node``)."""
    exposed = one_per_node(spec) and link_kind(spec.fabric, src, dst) == "network"
    return spec.hop_s(src, dst, "tree" if exposed else "ring")


def one_per_node(spec: CollectiveSpec) -> bool:
    """Every node holds one GPU of the call and there are several nodes (``rails.one_gpu_per_node``):
    NCCL then times a ring's network steps at the Tree row's network latency ("With ppn=1 latencies
    are fully exposed, use the Tree network latency", src/graph/tuning.cc ``ncclTopoTuneModel``): no
    NVLink steps between them hide the network's."""
    return one_gpu_per_node(spec.fabric, spec.gpus)


def _chunked(dag, spec, orders, steps, per_channel, after, tag, base_s, done, program) -> None:
    """Every step of every chunk a transfer. A rank's CTA closes each loop with a primitive that
    leaves its link idle (the last step's transfer into it carries that time) and starts the
    next loop's first step only after it."""
    m, C = len(orders[0]), spec.channels
    loops = n_chunks(per_channel, spec.chunk_bytes)
    piece = spec.wire(per_channel / loops)
    local = spec.ring_local_s(program, m, per_channel / loops)
    for c in range(C):
        ring = orders[c]
        edge = [(channel_paths(spec.fabric, s, ring[(i + 1) % m], c, C),
                 ring_hop_s(spec, s, ring[(i + 1) % m]), spec.cta_Bps(s, ring[(i + 1) % m], ring=(program, m)))
                for i, s in enumerate(ring)]
        ids: dict[tuple[int, int, int], int] = {}
        for loop in range(loops):
            for s in range(steps):
                for i, src in enumerate(ring):
                    dst = ring[(i + 1) % m]
                    if s == 0:
                        deps = after.get(src, []) + after.get(dst, [])
                        if loop and local:
                            deps.append(ids[(loop - 1, steps - 1, (i - 1) % m)])
                    else:
                        deps = [ids[(loop, s - 1, (i - 1) % m)]]
                    if loop >= spec.window:
                        deps.append(ids[(loop - spec.window, s, i)])
                    paths, hop, rate = edge[i]
                    delay = hop + (base_s if s == 0 and loop == 0 else 0.0) + (local if s == steps - 1 else 0.0)
                    ids[(loop, s, i)] = dag.add(src, dst, piece, deps, delay, paths, f"{tag}.ch{c}.l{loop}.s{s}.r{i}",
                                                rate)
        for loop in range(loops):
            for i, src in enumerate(ring):
                tid = ids[(loop, steps - 1, i)]
                done[src].append(tid)
                done[ring[(i + 1) % m]].append(tid)


def chain_phase(dag: DagBuilder, spec: CollectiveSpec, chains: list[tuple[str, ...]], data_bytes: float,
                tag: str = "chain", base_s: float = 0.0) -> None:
    """Pipelined broadcast along each channel's chain (``chains[c]``, root first): every link of a
    chain carries its channel's share of ``data_bytes``."""
    C = spec.channels
    per_channel = data_bytes / C
    delays: dict[tuple[str, ...], float] = {}  # channels repeat the same few chains
    for c in range(C):
        chain = chains[c]
        hops = len(chain) - 1
        if spec.granularity == "steady":
            delay = delays.get(chain)
            if delay is None:
                hop, lat = edge_latency(spec, list(zip(chain, chain[1:])))
                delay = delays[chain] = base_s + hops * hop + (hops - 1) * lat
            for i in range(hops):
                src, dst = chain[i], chain[i + 1]
                if not spec.builds(src, dst):
                    continue
                dag.add(src, dst, spec.wire(per_channel), (), delay,
                        channel_paths(spec.fabric, src, dst, c, C), f"{tag}.ch{c}.h{i}", spec.cta_Bps(src, dst))
            continue
        loops = n_chunks(per_channel, spec.chunk_bytes)
        ids: dict[tuple[int, int], int] = {}
        for loop in range(loops):
            for i in range(hops):
                src, dst = chain[i], chain[i + 1]
                deps = [ids[(loop, i - 1)]] if i else []
                if loop >= spec.window:
                    deps.append(ids[(loop - spec.window, i)])
                ids[(loop, i)] = dag.add(src, dst, spec.wire(per_channel / loops), deps,
                                         ring_hop_s(spec, src, dst) + (base_s if i == 0 and loop == 0 else 0.0),
                                         channel_paths(spec.fabric, src, dst, c, C), f"{tag}.ch{c}.l{loop}.h{i}",
                                         spec.cta_Bps(src, dst))


def rooted(orders: list[tuple[str, ...]], root: str, last: bool = False) -> list[tuple[str, ...]]:
    """Each channel's ring cut open at ``root``: the root first (broadcast: data leaves it down the
    ring) or, with ``last``, the root's successor first and the root last (reduce: data arrives at
    it). NCCL's broadcast and reduce run on the ring channels' own orders (src/device/broadcast.h,
    reduce.h: ``ring->userRanks`` from the root), so on multi-node fabrics each channel leaves and
    enters a node through its own GPU and NIC, as the ring collectives do."""
    out: dict[tuple[str, ...], tuple[str, ...]] = {}
    for ring in orders:
        if ring not in out:
            i = ring.index(root) + (1 if last else 0)
            out[ring] = ring[i:] + ring[:i]
    return [out[ring] for ring in orders]


def build(spec: CollectiveSpec, dag: DagBuilder) -> None:
    """Emit the ring schedule of ``spec.op`` into ``dag``."""
    n, S, base = spec.n, spec.nbytes, spec.base_s()
    orders = ring_orders(spec.fabric, spec.gpus, spec.channels)
    if spec.op == "all_reduce":
        ring_phase(dag, spec, spec.gpus, 2 * (n - 1), S / n, base_s=base, orders=orders)
    elif spec.op in ("reduce_scatter", "all_gather"):
        ring_phase(dag, spec, spec.gpus, n - 1, S / n, base_s=base, orders=orders)
    elif spec.op == "broadcast":
        chain_phase(dag, spec, rooted(orders, spec.gpus[spec.root]), S, base_s=base)
    elif spec.op == "reduce":  # each channel's ring from the root's successor round to the root
        chain_phase(dag, spec, rooted(orders, spec.gpus[spec.root], last=True), S, tag="reduce", base_s=base)
    else:
        raise ValueError(f"ring does not implement {spec.op}")


RECORD = AlgorithmRecord(
    "ring", OPS, build, "NCCL Ring: each rank sends to its successor, every channel around its own ring",
    ctas=CtaRule(ll_per_rank=True), rail_aware=True, nccl_algo="Ring",
    nccl_rating=lambda n, op: n / (2 * (n - 1)) if op == "all_reduce" else n / (n - 1) if op in ONE_PASS else 1.0)
"""Ring's rules: NCCL's collective channels, fewer for small calls (LL's threshold per rank);
rail-aware rings on multi-node fabrics; ``auto`` considers it everywhere."""
