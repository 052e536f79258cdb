"""Direct (one-shot) algorithm: every rank sends straight to every peer in one step.

all_reduce one-shot: each rank sends its whole buffer S to each of the n-1 peers and reduces
locally (latency-optimal, (n-1)S out per rank); all_gather / reduce_scatter / alltoall: S/n to
each peer; broadcast: the root sends S to each peer; gather: each peer sends its S/n to the root;
scatter: the root sends S/n to each peer (S = whole array, as nccl-tests' gather/scatter_perf do
with ncclSend/ncclRecv); sendrecv: rank i sends S to rank i+1 (as nccl-tests' sendrecv_perf).
One step, so both granularities are the same workload. Across nodes a transfer leaves by the
sender's NIC and arrives by the receiver's (NCCL's p2p connections, ``topology.nics``): one NIC
per GPU on HGX and GB200 trays, where the shortest routes would spread it over every NIC its PCIe
switch or Grace holds.

With PXN (``CollectiveSpec.pxn``; NCCL src/graph/paths.cc, on by default in NCCL, off here unless
asked) a transfer to another node's GPU on another rail goes over NVLink to the GPU of the sender's
host whose NIC is on that rail (``rails.pxn_relay``), and out of that NIC, the two legs pipelined
(concurrent, the second waiting one step longer), both at the sender's CTA rate; a rail-optimized
network then carries it on one leaf instead of a spine.
"""

from __future__ import annotations

from simulator.workloads.collectives.base import CollectiveSpec, DagBuilder, p2p_routes, route_lat_s
from simulator.workloads.collectives.gpu_side import CtaRule
from simulator.workloads.collectives.ops import P2P_OPS
from simulator.workloads.collectives.rails import job_set, pxn_relay, rail_nodes
from simulator.workloads.collectives.registry import AlgorithmRecord

OPS = frozenset({"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "gather", "scatter",
                 "sendrecv"})


def pairs(spec: CollectiveSpec) -> list[tuple[str, str, float]]:
    """(src, dst, data bytes) of every transfer of ``spec.op``."""
    g, n, S = spec.gpus, spec.n, spec.nbytes
    if spec.op == "sendrecv":
        return [(g[i], g[(i + 1) % n], S) for i in range(n)] if n > 2 else [(g[0], g[1], S), (g[1], g[0], S)]
    if spec.op == "broadcast":
        return [(g[spec.root], d, S) for d in g if d != g[spec.root]]
    if spec.op == "gather":
        return [(s, g[spec.root], S / n) for s in g if s != g[spec.root]]
    if spec.op == "scatter":
        return [(g[spec.root], d, S / n) for d in g if d != g[spec.root]]
    size = S if spec.op == "all_reduce" else S / n
    return [(s, d, size) for s in g for d in g if s != d]


def build(spec: CollectiveSpec, dag: DagBuilder) -> None:
    """One transfer per (src, dst) pair; a rank's channels are dealt evenly over its peers."""
    base = spec.base_s()
    todo = pairs(spec)
    peers: dict[str, int] = {}
    for src, _, _ in todo:
        peers[src] = peers.get(src, 0) + 1
    multi_node = spec.pxn and rail_nodes(spec.fabric, spec.gpus) is not None
    job = job_set(spec.fabric, spec.gpus)
    for src, dst, size in todo:
        ctas = max(1.0, spec.channels / peers[src])
        relay = pxn_relay(spec.fabric, spec.gpus, src, dst) if multi_node else None
        if relay is not None:  # PXN: over NVLink into the relay's buffer, out of the relay's NIC, pipelined
            rate = spec.cta_Bps(src, relay, ctas)
            first = base + spec.hop_s(src, relay)
            if spec.builds(src, relay):
                dag.add(src, relay, spec.wire(size), (), first, None, f"direct.{spec.op}.pxn", rate)
            dag.add(relay, dst, spec.wire(size), (), first + route_lat_s(spec.fabric, src, relay)
                    + spec.hop_s(relay, dst), p2p_routes(spec.fabric, relay, dst, job), f"direct.{spec.op}", rate)
            continue
        if not spec.builds(src, dst):
            continue
        dag.add(src, dst, spec.wire(size), (), base + spec.hop_s(src, dst), p2p_routes(spec.fabric, src, dst, job),
                f"direct.{spec.op}", spec.cta_Bps(src, dst, ctas))


RECORD = AlgorithmRecord(
    "direct", OPS, build, "one-shot: every rank sends straight to every peer in one step",
    ctas=CtaRule(pool="p2p_channels"), auto_ops=P2P_OPS)
"""Direct's rules: NCCL's point-to-point channels for every op; ``auto`` considers it for the ops
NCCL runs point to point (``ops.P2P_OPS``) only: for the other collectives NCCL's tuner picks among
ring, tree and NVLS (one-shot kernels stay available as ``algo=direct``)."""
