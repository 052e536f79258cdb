"""Chain workloads: append one DAG after given transfers of another (layers, phases, steps)."""

from __future__ import annotations

from simulator.engine.transfer import Workload
from simulator.workloads.collectives.base import DagBuilder


def append(dag: DagBuilder, workload: Workload, after: list[int] | tuple[int, ...] = (),
           tag: str = "") -> list[int]:
    """Copy ``workload``'s transfers into ``dag``; its roots wait for ``after``. Returns the ids of
    its sinks (transfers nothing else in it depends on), to chain the next piece on."""
    offset = len(dag.transfers)
    has_child = set()
    for t in workload.transfers:
        deps = [d + offset for d in t.deps] if t.deps else list(after)
        has_child.update(t.deps)
        dag.add(t.src, t.dst, t.bytes, deps, t.delay_s, t.paths, f"{tag}{t.tag}")
    return [t.id + offset for t in workload.transfers if t.id not in has_child]


def transformer_layers(gpus: list[str] | tuple[str, ...], layers: int, attn_s: float, mlp_s: float,
                       allreduce: Workload | None, embed_s: float = 0.0, head_s: float = 0.0) -> DagBuilder:
    """Tensor-parallel layers: on every GPU the attention block (``attn_s``), an all-reduce, the
    MLP block (``mlp_s``), an all-reduce; each phase waits for the previous one on all GPUs
    (Megatron-style TP: two all-reduces per layer). With ``embed_s`` the embedding runs first and is
    all-reduced (a vocabulary-parallel embedding); with ``head_s`` the LM head runs last."""
    dag = DagBuilder()
    after: list[int] = []
    if embed_s:
        after = [dag.add(g, g, 0, after, embed_s, tag="embed.compute") for g in gpus]
        if allreduce:
            after = append(dag, allreduce, after, tag="embed.ar.")
    for layer in range(layers):
        for half, t_s in (("attn", attn_s), ("mlp", mlp_s)):
            after = [dag.add(g, g, 0, after, t_s, tag=f"L{layer}.{half}.compute") for g in gpus]
            if allreduce:
                after = append(dag, allreduce, after, tag=f"L{layer}.{half}.ar.")
    if head_s:
        after = [dag.add(g, g, 0, after, head_s, tag="head.compute") for g in gpus]
    return dag
