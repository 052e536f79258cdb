"""PagedAttention KV-cache transfer from a prefill GPU to a decode GPU (disaggregated serving).

vLLM stores the cache in blocks of 16 tokens per layer; each block of each layer is one copy of
16 x 2 x kv_heads x head_dim x dtype bytes. Layer l's blocks may leave once layer l's prefill is
done (``layer_compute_s`` apart), so transfer overlaps the rest of the prefill.
"""

from __future__ import annotations

import math

import networkx as nx

from simulator.engine.transfer import Workload
from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes, route_latency_s
from simulator.workloads.attention.model import AttentionRun, ModelShape
from simulator.workloads.collectives.base import DagBuilder

def max_flow_Bps(fabric: Fabric, routes, src: str, dst: str) -> float:
    """Largest rate src -> dst over the channels of ``routes`` (min cut; shared channels count once)."""
    graph = nx.DiGraph()
    for cid in {c for route in routes for c in route}:
        ch = fabric.channels[cid]
        cap = graph.get_edge_data(ch.src, ch.dst, {"capacity": 0.0})["capacity"]
        graph.add_edge(ch.src, ch.dst, capacity=cap + ch.rate_Bps)
    return float(nx.maximum_flow_value(graph, src, dst))


PAGE_TOKENS = 16
"""vLLM PagedAttention default block size (tokens) (datasheet)."""


def kv_transfer(fabric: Fabric, src: str, dst: str, m: ModelShape, block_tokens: int = PAGE_TOKENS,
                layer_compute_s: float = 0.0, per_block: bool = False) -> AttentionRun:
    """Move the KV cache of ``m.batch`` x ``m.context`` tokens (all layers, whole model) src -> dst.

    The blocks of one layer have the same source, destination, routes and release time, so by
    default they travel as one transfer of ``blocks x block_bytes`` (the engines cut it into packets
    or spread it over routes exactly as they would the separate blocks, without tens of thousands
    of DAG nodes); ``per_block=True`` emits one transfer per block.
    """
    blocks = m.batch * math.ceil(m.context / block_tokens)
    block_bytes = block_tokens * m.kv_bytes_per_token_layer(per_gpu=False)
    dag = DagBuilder()
    prev_layer: list[int] = []
    for layer in range(m.layers):
        gate = dag.add(src, src, 0, prev_layer, layer_compute_s, tag=f"L{layer}.prefill")
        if per_block:
            for b in range(blocks):
                dag.add(src, dst, block_bytes, [gate], 0.0, None, f"L{layer}.block{b}")
        else:
            dag.add(src, dst, blocks * block_bytes, [gate], 0.0, None, f"L{layer}.blocks0-{blocks - 1}")
        prev_layer = [gate]
    routes = equal_cost_routes(fabric, src, dst)
    path_Bps = max_flow_Bps(fabric, routes, src, dst)
    total = m.layers * blocks * block_bytes
    kinds = sorted({fabric.channels[c].fabric for r in routes for c in r})
    figures = {"blocks_per_layer": blocks, "block_bytes": block_bytes, "total_bytes": total,
               "link_kinds": kinds, "path_rate_Bps": path_Bps,
               "ideal_time_s": total / path_Bps + max(route_latency_s(fabric, r) for r in routes)}
    meta = {"op": "kv_transfer", "n": 2, "bytes": total, "busbw_factor": 1.0}
    return AttentionRun(dag.workload(f"kv.{src}->{dst}.ctx{m.context}", meta), figures)


def pool_kv_transfer(src_gpus: tuple[str, ...], dst_gpus: tuple[str, ...], nbytes: int) -> Workload:
    """One request's KV cache from a prefill instance to a decode instance, all at once: each decode
    GPU pulls its shard (``nbytes / len(dst_gpus)``: its KV heads of every layer) from prefill GPU
    ``i mod len(src_gpus)``, the shards moving together (one transfer per shard: the blocks of a
    shard share their source, destination and routes)."""
    dag = DagBuilder()
    share = max(1, nbytes // len(dst_gpus))
    for i, dst in enumerate(dst_gpus):
        src = src_gpus[i % len(src_gpus)]
        if src != dst:
            dag.add(src, dst, share, (), 0.0, None, f"kv.shard{i}")
    meta = {"op": "kv_transfer", "n": len(set(src_gpus) | set(dst_gpus)), "bytes": share * len(dst_gpus),
            "busbw_factor": 1.0}
    return dag.workload(f"kv.{src_gpus[0]}->{dst_gpus[0]}.{nbytes}B", meta)
