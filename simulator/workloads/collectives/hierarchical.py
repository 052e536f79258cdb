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
    after2: dict[str, list[int]] = {}
    for j in range(m):
        cross = tuple(node[j] for node in nodes)
        after2.update(ring_phase(dag, spec, cross, 2 * (k - 1), S / m / k, done, tag=f"hier.ar.l{j}",
                                 program="all_reduce"))
    for i, node in enumerate(nodes):
        ring_phase(dag, spec, node, m - 1, S / m, after2, tag=f"hier.ag.n{i}", program="all_gather")
