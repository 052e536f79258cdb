"""Tensor-parallel decode step: per layer, the attention half's kernels on each GPU, an all-reduce,
the MLP half's kernels, an all-reduce (Megatron TP); the embedding (and its all-reduce) before the
first layer and the LM head after the last.

Each kernel is costed by the GPU's kernel model (``hardware.kernels``; the sequence in
``attention.layer``). Attention per GPU and layer at batch B, context T reads the KV cache,
B T 2 h_kv d s bytes, for 4 B h T d FLOPs (~1 FLOP/B with GQA): memory bound, and at small batch
bound by how few CTAs draw on HBM. Plain FlashAttention runs one CTA per (sequence, KV head);
Flash-Decoding splits the KV sequence (FlashAttention-2's heuristic) so more CTAs draw at once.
"""

from __future__ import annotations

from simulator.hardware.kernels import GpuKernels
from simulator.topology.fabric import Fabric
from simulator.workloads.attention.layer import DEFAULT_STACK, LAYER_STACKS, StepCost, step_cost
from simulator.workloads.attention.model import AttentionRun, ModelShape
from simulator.workloads.collectives import build_collective
from simulator.workloads.collectives.tuner import predict_s
from simulator.workloads.compose import transformer_layers


def step_figures(gk: GpuKernels, m: ModelShape, step: StepCost, ar_s: float, n_ar: int,
                 stack: str = DEFAULT_STACK) -> dict:
    """The figures that explain a decode or prefill step (per layer and per step, one GPU)."""
    groups = step.group_s()
    attn = next(k for k in step.attn.kernels if k.group == "attention")
    compute_s = step.compute_s
    comm_s = n_ar * ar_s
    return {
        "attention_per_layer_s": groups["attention"], "gemm_per_layer_s": groups["gemm"],
        "other_per_layer_s": groups["other"], "layer_compute_s": step.layer_s,
        "kernels_per_layer": sum(k.kernels for k in step.per_layer()),
        "kernels_per_step": step.kernels_per_step(),
        "attention_bound": attn.bound, "attention_ctas": attn.ctas, "attention_kernel": attn.detail,
        "attention_intensity_flop_per_B": attn.flops / attn.bytes if attn.bytes else 0.0,
        "sm_occupancy": attn.sm_occupancy, "step_bound": step.main_bound(),
        "bound_s": step.bound_s(), "power_state_s": step.state_s(),
        "launch": "CUDA graph" if gk.launch == "graph" else "eager launches",
        "kernel_sequence": LAYER_STACKS[stack], "layer_kernels": stack,
        "allreduce_s": ar_s, "allreduces_per_step": n_ar, "compute_s": compute_s, "communication_s": comm_s,
        "ridge_flop_per_B": gk.peak_flops(m.dtype) / gk.spec.hbm_Bps,
        "kernels": step.rows(),
    }


def decode_step(fabric: Fabric, gpus: list[str], gk: GpuKernels, m: ModelShape,
                flash_decoding: bool = True, algo: str = "auto", protocol: str = "auto",
                stack: str = DEFAULT_STACK) -> AttentionRun:
    """One generated token for the batch on ``gpus`` (len == m.tp), in kernel sequence ``stack``."""
    if len(gpus) != m.tp:
        raise ValueError(f"decode_step needs tp={m.tp} GPUs, got {len(gpus)}")
    step = step_cost(gk, m, "decode", flash_decoding, stack)
    ar_bytes = m.batch * m.hidden * m.dtype_bytes
    # NCCL's kernel is one more kernel of the step: its fixed cost in the step's launch mode
    ar = build_collective(fabric, gpus, "all_reduce", ar_bytes, algo, protocol,
                          kernel_fixed_s=gk.kernel_s) if m.tp > 1 else None
    ar_s = predict_s(fabric, ar) if ar else 0.0
    dag = transformer_layers(gpus, m.layers, step.attn.time_s, step.mlp.time_s, ar,
                             embed_s=step.embed.time_s, head_s=step.head.time_s)
    n_ar = (2 * m.layers + (1 if m.vocab else 0)) if ar else 0
    figures = step_figures(gk, m, step, ar_s, n_ar, stack)
    occupancy = {split: gk.decode_attention(m.batch, m.heads_per_gpu, m.kv_heads_per_gpu, m.context, m.head_dim,
                                            m.dtype, split).sm_occupancy for split in (False, True)}
    figures.update({
        "sm_occupancy_flash_attention": occupancy[False], "sm_occupancy_flash_decoding": occupancy[True],
        "allreduce_bytes": ar_bytes,
        "allreduce_algo": ar.meta["algo"] if ar else None, "allreduce_protocol": ar.meta["protocol"] if ar else None,
        "token_latency_s": figures["compute_s"] + figures["communication_s"],
        "bottleneck": "communication" if figures["communication_s"] > figures["compute_s"]
        else f"compute ({figures['step_bound']})",
    })
    meta = {"op": "decode_step", "n": len(gpus), "bytes": n_ar * ar_bytes, "busbw_factor": 1.0}
    return AttentionRun(dag.workload(f"decode.tp{m.tp}.b{m.batch}.ctx{m.context}", meta), figures)
