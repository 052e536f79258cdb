"""Ring attention / context parallelism: P GPUs each hold T/P tokens; KV blocks rotate round the
ring while each GPU computes attention of its queries against the block it holds.

Per layer, P steps; step s computes local Q x KV block (FLOPs 4 B h (T/P)^2 d, causal halves on
average are ignored: assumption, full blocks) and sends the block to the next GPU concurrently.
Step s+1 needs both its compute done and the next block received: communication is hidden when
block bytes / link rate < block compute time.
"""

from __future__ import annotations

from simulator.topology.fabric import Fabric
from simulator.workloads.attention.model import PREFILL_Q_BLOCK, AttentionRun, GpuRoofline, ModelShape, roofline
from simulator.workloads.collectives.base import DagBuilder, channel_paths, route_lat_s
from simulator.topology.routing import equal_cost_routes, route_rate_Bps


def ring_attention(fabric: Fabric, gpus: list[str], gpu: GpuRoofline, m: ModelShape,
                   layers: int | None = None) -> AttentionRun:
    """Ring attention over ``gpus`` (context parallel degree P = len(gpus)), ``layers`` layers."""
    P, layers = len(gpus), layers or m.layers
    Tb = m.context // P
    h, d = m.heads, m.head_dim
    block_bytes = m.batch * Tb * m.kv_bytes_per_token_layer(per_gpu=False)
    step = roofline(gpu, 4.0 * m.batch * h * Tb * Tb * d, 2 * block_bytes, m.dtype,
                    m.batch * h * max(1, Tb // PREFILL_Q_BLOCK))
    dag = DagBuilder()
    compute = {g: [] for g in gpus}
    recv = {g: [] for g in gpus}
    for layer in range(layers):
        for s in range(P):
            new_compute, new_recv = {}, {}
            for i, g in enumerate(gpus):
                nxt = gpus[(i + 1) % P]
                deps = compute[g] + recv[g]
                new_compute[g] = [dag.add(g, g, 0, deps, step.time_s, tag=f"L{layer}.s{s}.compute")]
                if s < P - 1:
                    new_recv[nxt] = [dag.add(g, nxt, block_bytes, deps, 0.0, channel_paths(fabric, g, nxt, 0, 1),
                                             f"L{layer}.s{s}.kv")]
            compute, recv = new_compute, {g: new_recv.get(g, []) for g in gpus}
    link_Bps = min(sum(route_rate_Bps(fabric, r) for r in equal_cost_routes(fabric, g, gpus[(i + 1) % P]))
                   for i, g in enumerate(gpus))
    comm_s = block_bytes / link_Bps + route_lat_s(fabric, gpus[0], gpus[1 % P])
    figures = {"block_tokens": Tb, "block_bytes": block_bytes, "step_compute_s": step.time_s,
               "step_comm_s": comm_s, "overlapped": comm_s <= step.time_s,
               "exposed_comm_per_step_s": max(0.0, comm_s - step.time_s),
               "ideal_time_s": layers * (P * step.time_s + (P - 1) * max(0.0, comm_s - step.time_s))}
    meta = {"op": "ring_attention", "n": P, "bytes": layers * (P - 1) * P * block_bytes, "busbw_factor": 1.0}
    return AttentionRun(dag.workload(f"ring_attention.cp{P}.ctx{m.context}", meta), figures)
