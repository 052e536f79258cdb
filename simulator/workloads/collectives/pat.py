"""PAT (Parallel Aggregated Trees): NCCL's all_gather and reduce_scatter at one GPU per node.

NCCL 2.23+ (src/include/collectives.h ``PatAGAlgorithm`` / ``PatRSAlgorithm``, src/device/all_gather.h
and reduce_scatter.h ``RunWorkColl<..., NCCL_ALGO_PAT, NCCL_PROTO_SIMPLE>``; enabled where
``ncclPatEnable`` allows it: every node holds one rank, Simple only, src/graph/tuning.cc): each
rank's block reaches the others along binomial trees over rank distances 2^d (a step's
``sendDim``/``recvDim`` d: peers rank -/+ 2^d), so a call takes ceil(log2 n) network steps where the
ring takes n - 1, each step aggregating the blocks it forwards.

Here, the data movement of that schedule: dimension d (all_gather from d = 0 up, reduce_scatter
from the top down) sends min(2^d, n - 2^d) blocks of S / n from every rank to the rank 2^d below
it (all_gather; above it for reduce_scatter), after the rank has what the previous dimension
brought it. Every rank sends n - 1 blocks in all, as the ring does, but over log2 n steps. A
step's transfer is driven by all the call's channels (each channel runs every step on its slice)
and leaves by the rank's NIC (``base.p2p_routes``: with one GPU per server, both NICs of its PCIe
switch). Both granularities build these steps; chunks within a step are not pipelined.

Latency: NCCL's PAT model (src/graph/tuning.cc ``ncclTopoTuneModel``): 8 us base, interLat / 3.5 per
dimension (interLat the NET Tree row at one GPU per node: 14 / 3.5 = 4 us) and 2.8 us per rank
("still a linear part"), rows ``pat`` of ``parts/protocols.yaml``, plus each step's route and
flag handoff. NCCL's tuner rates PAT at 0.75 of its channels' bus bandwidth, where Ring takes
n / (n - 1) of it (``nccl_rating``), so NCCL runs PAT for small and mid sizes and Ring for large
ones: the tuner ranks the two so (``tuner.choose``).
"""

from __future__ import annotations

import math

from simulator.workloads.collectives.base import CollectiveSpec, DagBuilder, p2p_routes
from simulator.workloads.collectives.rails import job_set, one_gpu_per_node
from simulator.workloads.collectives.registry import AlgorithmRecord

OPS = frozenset({"all_gather", "reduce_scatter"})


def dimensions(n: int) -> list[tuple[int, int]]:
    """(distance 2^d, blocks sent) of each dimension d of an all_gather on ``n`` ranks, d = 0 up:
    min(2^d, n - 2^d) blocks, n - 1 in all."""
    return [(1 << d, min(1 << d, n - (1 << d))) for d in range(math.ceil(math.log2(n)))]


def applicable(fabric, gpus) -> str | None:
    """None where PAT runs (NCCL: nNodes == nRanks), else why."""
    if not one_gpu_per_node(fabric, gpus):
        return "PAT runs with one GPU per node (NCCL: nNodes == nRanks); use ring"
    return None


def build(spec: CollectiveSpec, dag: DagBuilder) -> None:
    n, g = spec.n, spec.gpus
    block = spec.nbytes / n
    gather = spec.op == "all_gather"
    steps = dimensions(n) if gather else dimensions(n)[::-1]
    job = job_set(spec.fabric, g)
    start = spec.base_s() + n * spec.table.per_rank_s(spec.table_row or spec.algo, spec.protocol.name)
    into: dict[str, int] = {}  # GPU -> the previous step's transfer into it
    for k, (distance, blocks) in enumerate(steps):
        arrived: dict[str, int] = {}
        for i, src in enumerate(g):
            dst = g[(i - distance) % n] if gather else g[(i + distance) % n]
            deps = (into[src],) if src in into else ()
            delay = (start if k == 0 else 0.0) + spec.hop_s(src, dst)
            arrived[dst] = dag.add(src, dst, spec.wire(blocks * block), deps, delay,
                                   p2p_routes(spec.fabric, src, dst, job), f"pat.{spec.op}.d{distance}",
                                   spec.cta_Bps(src, dst, spec.channels))
        into = arrived


RECORD = AlgorithmRecord(
    "pat", OPS, build, "NCCL PAT: binomial trees over rank distances 2^d, at one GPU per node",
    applicable=applicable, nccl_algo="PAT", nccl_rating=lambda n, op: 0.75, nccl_since=(2, 23))
"""PAT's rules: NCCL's collective channels; ``auto`` considers it wherever it runs (one GPU per
node), ranked against Ring by NCCL's bandwidth rating; Simple only (``ncclPatEnable``)."""
