"""Ring attention / context parallelism: P GPUs each hold T/P tokens of every sequence; KV blocks
rotate round the ring while each GPU computes the attention of its queries against the block it holds.

Per layer, P steps. At step s, GPU i holds the KV of GPU j = (i - s) mod P and sends it on to GPU
i + 1 while it computes (the next step needs both its compute done and the next block received).
The causal mask decides what a step costs:

- ``placement: contiguous`` (plain ring attention): GPU i holds tokens [i T/P, (i + 1) T/P). Block j
  earlier than i is computed in full, the diagonal block (s = 0) half, a later block not at all:
  GPU i works on i + 1 of the P steps and idles on the others, so GPU P - 1 does 2P - 1 half blocks
  per layer while GPU 0 does one. Load imbalance: the layer takes as long as the busiest GPU.
- ``placement: zigzag`` (striped/zig-zag ring attention, as in Megatron-LM context parallelism): the
  sequence is cut in 2P chunks and GPU i holds chunks i and 2P - 1 - i. Every step then costs every
  GPU the same: two (chunk x chunk) tiles = half of a (T/P x T/P) block, at s = 0 two half diagonal
  tiles and one full one.

Summed over GPUs and steps either placement computes P^2 / 2 blocks, half of the unmasked P^2:
the causal mask halves the work; placement decides whether it also halves the time.

A step's compute is one delay from :func:`step_compute_s`: the kernel model's FlashAttention-2
forward kernel on each (query chunk, key chunk) tile the mask leaves (the diagonal one causal, the
others full), and from the second step on the merge of the step's partial output into the running
one (online softmax rescale, an elementwise kernel over O and its log-sum-exp in fp32).
Communication is the KV block as a transfer, overlapped with compute when block bytes / link rate
< step compute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes, route_rate_Bps
from simulator.hardware.kernels import GpuKernels
from simulator.workloads.attention.model import AttentionRun, ModelShape
from simulator.workloads.collectives.base import DagBuilder, channel_paths, route_lat_s

Placement = Literal["contiguous", "zigzag"]
PLACEMENTS: tuple[str, ...] = ("contiguous", "zigzag")

SIMPLIFICATIONS = (
    "attention only: the layers' projections, MLP and norms are not simulated (decode/prefill items cost them)",
    "a step's tiles are FlashAttention-2 forward kernels, one per (query chunk, key chunk) tile, costed by the "
    "kernel model (CTAs over SMs, the diagonal tile causal), and the partial-output merge as an elementwise kernel",
    "each GPU sends its block to the next over the fabric's equal-cost routes; no NCCL channel model",
)
"""What every ring-attention report says it leaves out (the placement's own line is added)."""
PLACEMENT_NOTE = {
    "contiguous": "contiguous placement: the causal mask leaves GPU i idle on P - 1 - i of P steps "
                  "(load imbalance: the last GPU does 2P - 1 half blocks per layer, the first one)",
    "zigzag": "zigzag placement: GPU i holds chunks i and 2P - 1 - i of 2P, so every GPU does half a "
              "block on every step (balanced)",
}


@dataclass(frozen=True, slots=True)
class StepWork:
    """What one GPU computes at one step, per sequence and query head."""

    pairs: float
    """(query, key) pairs the causal mask leaves (diagonal tiles count half)."""
    q_tokens: int
    """Query tokens with any unmasked key (the kernel's query rows)."""
    kv_tokens: int
    """Key tokens read (K and V of each)."""
    tiles: tuple[bool, ...] = ()
    """One entry per (query chunk, key chunk) tile computed: True for the diagonal (causal) one."""
    chunk_tokens: int = 0


def chunks(placement: str, P: int, gpu: int) -> list[int]:
    """Chunk indices (in sequence order) GPU ``gpu`` holds: P chunks of T/P (contiguous) or 2P of T/2P (zigzag)."""
    if placement == "contiguous":
        return [gpu]
    if placement == "zigzag":
        return [gpu, 2 * P - 1 - gpu]
    raise ValueError(f"placement {placement!r}: choose {', '.join(PLACEMENTS)}")


def step_work(placement: str, P: int, gpu: int, step: int, chunk_tokens: int) -> StepWork:
    """GPU ``gpu``'s queries against the KV it holds at ``step`` (that of GPU (gpu - step) mod P) under
    the causal mask: a key chunk before the query chunk is a full tile, the same chunk half of one,
    a later one nothing."""
    q_chunks = chunks(placement, P, gpu)
    kv_chunks = chunks(placement, P, (gpu - step) % P)
    pairs, q_used, kv_used, tiles = 0.0, set(), set(), []
    for qa in q_chunks:
        for kb in kv_chunks:
            if kb <= qa:
                pairs += chunk_tokens * chunk_tokens * (1.0 if kb < qa else 0.5)
                q_used.add(qa)
                kv_used.add(kb)
                tiles.append(kb == qa)
    return StepWork(pairs, len(q_used) * chunk_tokens, len(kv_used) * chunk_tokens, tuple(tiles), chunk_tokens)


MERGE_BYTES_PER_ELEMENT = 4 * 4
"""Bytes the online-softmax merge moves per output element: the running and the step's fp32 output
read, the running one written, and the step's rescale (assumption: ring-flash-attn's
``_update_out_and_lse`` keeps out and lse in fp32 and updates them in place; lse adds 1/d more)."""


def step_compute_s(gk: GpuKernels, m: ModelShape, work: StepWork, merge: bool = False) -> float:
    """One step's attention on one GPU (s): a FlashAttention-2 forward kernel per tile the mask
    leaves (``work.tiles``: chunk x chunk, the diagonal one causal), and with ``merge`` (every step
    after the first) the merge of its partial output into the running one; 0 when the mask leaves
    nothing (the GPU idles)."""
    if not work.tiles:
        return 0.0
    h, hkv, d, c = m.heads_per_gpu, m.kv_heads_per_gpu, m.head_dim, work.chunk_tokens
    t = sum(gk.prefill_attention(m.batch, h, hkv, c, c, d, m.dtype, causal=diagonal).time_s
            for diagonal in work.tiles)
    if merge:
        t += gk.elementwise("ring_merge", m.batch * work.q_tokens * h * d * MERGE_BYTES_PER_ELEMENT,
                            "elementwise").time_s
    return t


def _timeline_s(compute: list[list[float]], comm_s: float, layers: int) -> float:
    """Finish time of the ring DAG with every transfer taking ``comm_s`` (no link shared): step s on
    GPU i starts when its step s - 1 is done and the block it needs has arrived."""
    P = len(compute)
    done, arrived = [0.0] * P, [0.0] * P
    for _ in range(layers):
        for s in range(P):
            start = [max(done[i], arrived[i]) for i in range(P)]
            done = [start[i] + compute[i][s] for i in range(P)]
            arrived = [start[(i - 1) % P] + comm_s if s < P - 1 else 0.0 for i in range(P)]
    return max(done)


def ring_attention(fabric: Fabric, gpus: list[str], gk: GpuKernels, m: ModelShape,
                   layers: int | None = None, placement: Placement = "contiguous") -> AttentionRun:
    """Causal ring attention over ``gpus`` (context parallel degree P = len(gpus)), ``layers`` layers
    (default all of the model's), tokens placed ``contiguous`` or ``zigzag``."""
    P, layers = len(gpus), layers or m.layers
    per_gpu_chunks = len(chunks(placement, P, 0))
    chunk_tokens = m.context // (P * per_gpu_chunks)
    Tb = chunk_tokens * per_gpu_chunks
    block_bytes = m.batch * Tb * m.kv_bytes_per_token_layer()
    works = [[step_work(placement, P, i, s, chunk_tokens) for s in range(P)] for i in range(P)]
    compute = [[step_compute_s(gk, m, w, merge=s > 0) for s, w in enumerate(row)] for row in works]
    dag = DagBuilder()
    done = {g: [] for g in gpus}
    recv = {g: [] for g in gpus}
    for layer in range(layers):
        for s in range(P):
            new_done, new_recv = {}, {}
            for i, g in enumerate(gpus):
                nxt = gpus[(i + 1) % P]
                deps = done[g] + recv[g]
                new_done[g] = [dag.add(g, g, 0, deps, compute[i][s], tag=f"L{layer}.s{s}.compute")]
                if s < P - 1:
                    new_recv[nxt] = [dag.add(g, nxt, block_bytes, deps, 0.0, channel_paths(fabric, g, nxt, 0, 1),
                                             f"L{layer}.s{s}.kv")]
            done, recv = new_done, {g: new_recv.get(g, []) for g in gpus}
    link_Bps = min(sum(route_rate_Bps(fabric, r) for r in equal_cost_routes(fabric, g, gpus[(i + 1) % P]))
                   for i, g in enumerate(gpus))
    comm_s = block_bytes / link_Bps + route_lat_s(fabric, gpus[0], gpus[1 % P])
    full = step_compute_s(gk, m, StepWork(float(Tb * Tb), Tb, Tb, (False,), Tb))
    per_gpu_layer = [sum(row) for row in compute]
    busiest = max(per_gpu_layer)
    mean = sum(per_gpu_layer) / P
    pairs = sum(w.pairs for row in works for w in row)
    ideal = _timeline_s(compute, comm_s, layers)
    compute_only = _timeline_s(compute, 0.0, layers)
    figures = {
        "placement": placement, "block_tokens": Tb, "chunk_tokens": chunk_tokens, "block_bytes": block_bytes,
        "full_block_compute_s": full,
        # the busiest GPU's compute per layer spread over the P steps (layers x P x this = its total)
        "step_compute_s": busiest / P,
        "gpu_compute_per_layer_s": per_gpu_layer, "busiest_gpu_compute_per_layer_s": busiest,
        "load_imbalance": busiest / mean if mean else 1.0,
        "idle_steps_per_layer": [sum(1 for c in row if c == 0.0) for row in compute],
        "causal_work_fraction": pairs / (P * P * Tb * Tb),
        "compute_s": compute_only,
        "step_comm_s": comm_s, "overlapped": ideal <= compute_only * (1 + 1e-9),
        "exposed_comm_s": ideal - compute_only,
        "exposed_comm_per_step_s": (ideal - compute_only) / (layers * (P - 1)),
        "ideal_time_s": ideal,
        "simplifications": [PLACEMENT_NOTE[placement], *SIMPLIFICATIONS],
    }
    meta = {"op": "ring_attention", "n": P, "bytes": layers * (P - 1) * P * block_bytes, "busbw_factor": 1.0}
    return AttentionRun(dag.workload(f"ring_attention.{placement}.cp{P}.ctx{m.context}", meta), figures)
