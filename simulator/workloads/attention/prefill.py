"""Prefill with FlashAttention: the whole prompt at once, compute bound, plus the TP all-reduces.

Causal attention per GPU and layer: FLOPs = 4 B h T^2 d / 2; HBM bytes ~ Q, K, V, O once
(FlashAttention keeps the T x T scores on chip). Thread blocks: B h ceil(T / 128).
"""

from __future__ import annotations

import math

from simulator.topology.fabric import Fabric
from simulator.workloads.attention.model import PREFILL_Q_BLOCK, AttentionRun, GpuRoofline, ModelShape, roofline
from simulator.workloads.collectives import build_collective
from simulator.workloads.collectives.tuner import predict_s
from simulator.workloads.compose import transformer_layers


def prefill(fabric: Fabric, gpus: list[str], gpu: GpuRoofline, m: ModelShape,
            algo: str = "auto", protocol: str = "auto") -> AttentionRun:
    """Prefill of ``m.context`` prompt tokens for ``m.batch`` sequences on ``gpus`` (len == tp)."""
    h, d, T, B = m.heads_per_gpu, m.head_dim, m.context, m.batch
    io = B * T * (2 * h * d + m.kv_bytes_per_token_layer() / m.dtype_bytes) * m.dtype_bytes
    attn = roofline(gpu, 2.0 * B * h * T * T * d, io, m.dtype, B * h * math.ceil(T / PREFILL_Q_BLOCK))
    params = m.weight_params_per_gpu_layer()
    gemm = roofline(gpu, 2.0 * B * T * params, params * m.dtype_bytes + 2 * B * T * m.hidden * m.dtype_bytes,
                    m.dtype, gpu.sms)
    ar_bytes = B * T * m.hidden * m.dtype_bytes
    ar = build_collective(fabric, gpus, "all_reduce", ar_bytes, algo, protocol) if len(gpus) > 1 else None
    ar_s = predict_s(fabric, ar) if ar else 0.0
    dag = transformer_layers(gpus, m.layers, attn.time_s + gemm.time_s / 2, gemm.time_s / 2, ar)
    compute_s, comm_s = m.layers * (attn.time_s + gemm.time_s), 2 * m.layers * ar_s
    figures = {"attention_per_layer_s": attn.time_s, "attention_bound": attn.bound,
               "attention_intensity_flop_per_B": attn.intensity, "sm_occupancy": attn.occupancy,
               "gemm_per_layer_s": gemm.time_s, "allreduce_bytes": ar_bytes, "allreduce_s": ar_s,
               "compute_s": compute_s, "communication_s": comm_s, "latency_s": compute_s + comm_s,
               "bottleneck": "communication" if comm_s > compute_s else f"compute ({attn.bound} bound attention)"}
    meta = {"op": "prefill", "n": len(gpus), "bytes": 2 * m.layers * ar_bytes, "busbw_factor": 1.0}
    return AttentionRun(dag.workload(f"prefill.tp{m.tp}.b{B}.ctx{T}", meta), figures)
