"""Tensor-parallel decode step: per layer, attention (KV-cache reads) and projections/MLP on each
GPU, then an all-reduce after attention and one after the MLP (Megatron TP).

Attention per GPU and layer at batch B, context T: FLOPs = 4 B h T d (QK^T and PV, h heads here),
bytes = B T 2 h_kv d s (the KV cache): ~1 FLOP/B with GQA, far below any GPU's ridge, so memory
bound. Plain FlashAttention runs one thread block per (batch, head): B h CTAs, a handful of SMs
at batch 1; Flash-Decoding also splits the KV sequence so every SM works.
"""

from __future__ import annotations

import math

from simulator.topology.fabric import Fabric
from simulator.workloads.attention.model import (FLASH_DECODING_MIN_SPLIT_TOKENS, AttentionRun,
                                                 GpuRoofline, KernelTime, ModelShape, roofline)
from simulator.workloads.collectives import build_collective
from simulator.workloads.collectives.tuner import predict_s
from simulator.workloads.compose import transformer_layers


def decode_attention(gpu: GpuRoofline, m: ModelShape, flash_decoding: bool) -> KernelTime:
    """One layer's decode attention on one GPU."""
    h, d = m.heads_per_gpu, m.head_dim
    flops = 4.0 * m.batch * h * m.context * d
    nbytes = m.batch * m.context * m.kv_bytes_per_token_layer() + 2 * m.batch * h * d * m.dtype_bytes
    ctas = m.batch * h
    if flash_decoding:
        splits = max(1, min(math.ceil(gpu.sms / ctas), m.context // FLASH_DECODING_MIN_SPLIT_TOKENS))
        ctas *= splits
    return roofline(gpu, flops, nbytes, m.dtype, ctas)


def decode_gemms(gpu: GpuRoofline, m: ModelShape) -> KernelTime:
    """One layer's projections and MLP on one GPU: weights read once, 2 FLOPs per weight per token."""
    params = m.weight_params_per_gpu_layer()
    return roofline(gpu, 2.0 * m.batch * params, params * m.dtype_bytes, m.dtype, ctas=gpu.sms)


def decode_step(fabric: Fabric, gpus: list[str], gpu: GpuRoofline, m: ModelShape,
                flash_decoding: bool = True, algo: str = "auto", protocol: str = "auto") -> AttentionRun:
    """One generated token for the batch on ``gpus`` (len == m.tp)."""
    if len(gpus) != m.tp:
        raise ValueError(f"decode_step needs tp={m.tp} GPUs, got {len(gpus)}")
    attn = decode_attention(gpu, m, flash_decoding)
    gemm = decode_gemms(gpu, m)
    ar_bytes = m.batch * m.hidden * m.dtype_bytes
    ar = build_collective(fabric, gpus, "all_reduce", ar_bytes, algo, protocol) if m.tp > 1 else None
    ar_s = predict_s(fabric, ar) if ar else 0.0
    dag = transformer_layers(gpus, m.layers, attn.time_s + gemm.time_s / 2, gemm.time_s / 2, ar)
    compute_s = m.layers * (attn.time_s + gemm.time_s)
    comm_s = m.layers * 2 * ar_s
    figures = {
        "attention_per_layer_s": attn.time_s, "attention_bound": attn.bound,
        "attention_intensity_flop_per_B": attn.intensity, "ridge_flop_per_B": gpu.flops(m.dtype) / gpu.hbm_Bps,
        "sm_occupancy": attn.occupancy,
        "sm_occupancy_flash_attention": decode_attention(gpu, m, False).occupancy,
        "sm_occupancy_flash_decoding": decode_attention(gpu, m, True).occupancy,
        "gemm_per_layer_s": gemm.time_s, "allreduce_bytes": ar_bytes,
        "allreduce_algo": ar.meta["algo"] if ar else None, "allreduce_protocol": ar.meta["protocol"] if ar else None,
        "allreduce_s": ar_s, "compute_s": compute_s, "communication_s": comm_s,
        "token_latency_s": compute_s + comm_s,
        "bottleneck": "communication" if comm_s > compute_s else f"compute ({'HBM bandwidth' if attn.bound == 'memory' else 'FLOPs'})",
    }
    meta = {"op": "decode_step", "n": len(gpus), "bytes": 2 * m.layers * ar_bytes, "busbw_factor": 1.0}
    return AttentionRun(dag.workload(f"decode.tp{m.tp}.b{m.batch}.ctx{m.context}", meta), figures)
