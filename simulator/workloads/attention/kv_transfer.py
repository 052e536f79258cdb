"""PagedAttention KV-cache transfer from a prefill GPU to a decode GPU (disaggregated serving).

vLLM stores the cache in blocks of 16 tokens per layer; each block of each layer is one copy of
16 x 2 x kv_heads x head_dim x dtype bytes. Layer l's blocks may leave once layer l's prefill is
done (``layer_compute_s`` apart), so transfer overlaps the rest of the prefill.
"""

from __future__ import annotations

import math

from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes, route_latency_s, route_rate_Bps
from simulator.workloads.attention.model import AttentionRun, ModelShape
from simulator.workloads.collectives.base import DagBuilder

PAGE_TOKENS = 16
"""vLLM PagedAttention default block size (tokens) (datasheet)."""


def kv_transfer(fabric: Fabric, src: str, dst: str, m: ModelShape, block_tokens: int = PAGE_TOKENS,
                layer_compute_s: float = 0.0) -> AttentionRun:
    """Move the KV cache of ``m.batch`` x ``m.context`` tokens (all layers, whole model) src -> dst."""
    blocks = m.batch * math.ceil(m.context / block_tokens)
    block_bytes = block_tokens * m.kv_bytes_per_token_layer(per_gpu=False)
    dag = DagBuilder()
    prev_layer: list[int] = []
    for layer in range(m.layers):
        gate = dag.add(src, src, 0, prev_layer, layer_compute_s, tag=f"L{layer}.prefill")
        for b in range(blocks):
            dag.add(src, dst, block_bytes, [gate], 0.0, None, f"L{layer}.block{b}")
        prev_layer = [gate]
    routes = equal_cost_routes(fabric, src, dst)
    path_Bps = sum(route_rate_Bps(fabric, r) for r in routes)
    total = m.layers * blocks * block_bytes
    kinds = sorted({fabric.channels[c].fabric for r in routes for c in r})
    figures = {"blocks_per_layer": blocks, "block_bytes": block_bytes, "total_bytes": total,
               "link_kinds": kinds, "path_rate_Bps": path_Bps,
               "ideal_time_s": total / path_Bps + max(route_latency_s(fabric, r) for r in routes)}
    meta = {"op": "kv_transfer", "n": 2, "bytes": total, "busbw_factor": 1.0}
    return AttentionRun(dag.workload(f"kv.{src}->{dst}.ctx{m.context}", meta), figures)
