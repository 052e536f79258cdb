"""Prefill with FlashAttention-2: the whole prompt at once, plus the TP all-reduces.

Each kernel is costed by the GPU's kernel model (``hardware.kernels``; the sequence in
``attention.layer``). Causal attention per GPU and layer: FLOPs = 4 B h T^2 d / 2 (the kernel skips
masked blocks); HBM bytes ~ Q, K, V, O once (FlashAttention keeps the T x T scores on chip);
CTAs: B h ceil(T / 128). The GEMMs run B T tokens through the weights: tensor-core bound, in waves
of 128 x 128 tiles, at the clock the board power cap allows.
"""

from __future__ import annotations

from simulator.hardware.kernels import GpuKernels
from simulator.topology.fabric import Fabric
from simulator.workloads.attention.decode import step_figures
from simulator.workloads.attention.layer import DEFAULT_STACK, step_cost
from simulator.workloads.attention.model import AttentionRun, ModelShape
from simulator.workloads.collectives import build_collective
from simulator.workloads.collectives.tuner import predict_s
from simulator.workloads.compose import transformer_layers


def prefill(fabric: Fabric, gpus: list[str], gk: GpuKernels, m: ModelShape,
            algo: str = "auto", protocol: str = "auto", stack: str = DEFAULT_STACK) -> AttentionRun:
    """Prefill of ``m.context`` prompt tokens for ``m.batch`` sequences on ``gpus`` (len == tp), in
    kernel sequence ``stack``."""
    step = step_cost(gk, m, "prefill", True, stack)
    ar_bytes = m.batch * m.context * m.hidden * m.dtype_bytes
    ar = build_collective(fabric, gpus, "all_reduce", ar_bytes, algo, protocol,
                          kernel_fixed_s=gk.kernel_s) if len(gpus) > 1 else None
    ar_s = predict_s(fabric, ar) if ar else 0.0
    dag = transformer_layers(gpus, m.layers, step.attn.time_s, step.mlp.time_s, ar,
                             embed_s=step.embed.time_s, head_s=step.head.time_s)
    n_ar = (2 * m.layers + (1 if m.vocab else 0)) if ar else 0
    figures = step_figures(gk, m, step, ar_s, n_ar, stack)
    figures.update({"allreduce_bytes": ar_bytes, "latency_s": figures["compute_s"] + figures["communication_s"],
                    "time_to_first_token_s": figures["compute_s"] + figures["communication_s"],
                    "bottleneck": "communication" if figures["communication_s"] > figures["compute_s"]
                    else f"compute ({figures['step_bound']})"})
    meta = {"op": "prefill", "n": len(gpus), "bytes": n_ar * ar_bytes, "busbw_factor": 1.0}
    return AttentionRun(dag.workload(f"prefill.tp{m.tp}.b{m.batch}.ctx{m.context}", meta), figures)
