"""Hierarchical all_reduce for multi-node racks (NCCL-style 2D): nodes are ``Node.group``s.

1. reduce-scatter inside each node over NVLink (ring of the node's m GPUs, S in, S/m out);
2. all-reduce of each S/m shard across nodes over the NICs (ring of the k GPUs with the same
   local index, one per node);
3. all-gather inside each node (S/m in, S out).
Phases follow each other per GPU (a GPU starts phase 2 when its phase-1 transfers are done).
"""

from __future__ import annotations

from simulator.errors import InputError
from simulator.workloads.collectives.base import CollectiveSpec, DagBuilder
from simulator.workloads.collectives.rails import nodes_of
from simulator.workloads.collectives.registry import AlgorithmRecord
from simulator.workloads.collectives.ring import ring_phase

OPS = frozenset({"all_reduce"})


def applicable(fabric, gpus) -> str | None:
    nodes = nodes_of(fabric, gpus)
    if len(nodes) < 2:
        return "all GPUs are in one node (Node.group)"
    if len({len(n) for n in nodes}) != 1:
        return "nodes hold different numbers of the chosen GPUs"
    return None


def build(spec: CollectiveSpec, dag: DagBuilder) -> None:
    reason = applicable(spec.fabric, spec.gpus)
    if reason:
        raise InputError(f"hierarchical all_reduce impossible: {reason}", field="algo")
    nodes = nodes_of(spec.fabric, spec.gpus)
    m, k, S = len(nodes[0]), len(nodes), spec.nbytes
    done: dict[str, list[int]] = {}
    for i, node in enumerate(nodes):
        done.update(ring_phase(dag, spec, node, m - 1, S / m, tag=f"hier.rs.n{i}",
                               base_s=spec.base_s("ring"), program="reduce_scatter"))
    if spec.sample is not None:  # an estimate: a skipped node's phase 1 ends when the sampled node's does
        sampled = next(node for node in nodes if spec.fabric.nodes[node[0]].group == spec.sample)
        for node in nodes:
            for j, g in enumerate(node):
                done[g] = done[sampled[j]]
    after2: dict[str, list[int]] = {}
    for j in range(m):
        cross = tuple(node[j] for node in nodes)
        after2.update(ring_phase(dag, spec, cross, 2 * (k - 1), S / m / k, joins(dag, done, cross, "rs"),
                                 tag=f"hier.ar.l{j}", program="all_reduce"))
    for i, node in enumerate(nodes):
        ring_phase(dag, spec, node, m - 1, S / m, joins(dag, after2, node, "ar"), tag=f"hier.ag.n{i}",
                   program="all_gather")


def joins(dag: DagBuilder, done: dict[str, list[int]], gpus: tuple[str, ...], phase: str) -> dict[str, list[int]]:
    """One zero-byte, zero-delay transfer per GPU that ends with the GPU's part of the previous
    phase: the next phase's transfers wait on two of them instead of on every transfer of both
    ends (the same start times, without a fan-in of channels x steps deps per transfer)."""
    return {g: [dag.add(g, g, 0, done.get(g, []), tag=f"hier.{phase}.done")] for g in gpus}


RECORD = AlgorithmRecord(
    "hierarchical", OPS, build, "2D all_reduce: reduce-scatter in each node, all-reduce across, all-gather",
    applicable=applicable, auto_ops=frozenset())
"""Hierarchical's rules: NCCL's collective channels, fewer for small calls, not rounded to the rails
(its cross-node rings join one GPU of each node); its steps take ring's latencies
(``spec.base_s("ring")``, ``ring_phase``). ``auto`` never considers it: NCCL has no such algorithm
(its tuner, src/graph/tuning.cc ``ncclTopoTuneModel``, chooses among ncclAlgoStr's Tree, Ring,
CollNetDirect, CollNetChain, NVLS, NVLSTree and PAT), so ``auto`` follows NCCL's choice among those
modelled (ring, tree; NVLS inside one NVLink domain); ``--algo hierarchical`` runs it."""
