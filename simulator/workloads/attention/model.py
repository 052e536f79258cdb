"""Model shape, GPU roofline and the kernel-time model shared by the attention workloads."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from simulator.engine.transfer import Workload

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1}
FLASH_DECODING_MIN_SPLIT_TOKENS = 256
"""Smallest KV slice one Flash-Decoding split works on (assumption: keeps split overhead small)."""
PREFILL_Q_BLOCK = 128
"""Query rows per FlashAttention thread block in prefill (FlashAttention-2 default tile)."""


@dataclass(frozen=True, slots=True)
class GpuRoofline:
    """What the roofline needs of a GPU (the hardware layer's GpuSpec has these fields)."""

    name: str
    hbm_Bps: float
    """HBM bandwidth (B/s)."""
    bf16_flops: float
    """Dense BF16 tensor throughput (FLOP/s)."""
    fp8_flops: float | None
    sms: int

    @classmethod
    def of(cls, spec, name: str = "") -> "GpuRoofline":
        """From a hardware-layer GpuSpec (or anything with the same attributes)."""
        return cls(name or getattr(spec, "name", "gpu"), spec.hbm_Bps, spec.bf16_flops,
                   getattr(spec, "fp8_flops", None), spec.sms)

    def flops(self, dtype: str) -> float:
        return (self.fp8_flops or self.bf16_flops) if dtype == "fp8" else self.bf16_flops


@dataclass(frozen=True, slots=True)
class ModelShape:
    """A decoder-only transformer served with tensor parallelism ``tp``."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    batch: int
    context: int
    """Tokens already in the KV cache (decode) or prompt length (prefill)."""
    tp: int = 1
    dtype: str = "bf16"
    ffn_hidden: int = 0
    """MLP inner width (gated MLP: 3 matrices); 0 only where a model has no MLP (scenario files
    must give it: a missing one is an error, never a silently dropped MLP)."""
    vocab: int = 0
    """Vocabulary size: the embedding and the LM head (vocab x hidden, split over tp); 0 leaves both out."""

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def heads_per_gpu(self) -> int:
        return max(1, self.heads // self.tp)

    @property
    def kv_heads_per_gpu(self) -> int:
        return max(1, self.kv_heads // self.tp)

    def kv_bytes_per_token_layer(self, per_gpu: bool = True) -> int:
        """K and V of one token in one layer (B)."""
        kv = self.kv_heads_per_gpu if per_gpu else self.kv_heads
        return 2 * kv * self.head_dim * self.dtype_bytes

    def weight_params_per_gpu_layer(self) -> float:
        """Weights one GPU holds per layer: QKV and output projections, gated MLP."""
        attn = self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim + self.heads * self.head_dim * self.hidden
        mlp = 3 * self.hidden * self.ffn_hidden
        return (attn + mlp) / self.tp


@dataclass(frozen=True, slots=True)
class KernelTime:
    """Roofline time of one kernel on one GPU."""

    flops: float
    bytes: float
    occupancy: float
    """Fraction of SMs with work (0..1]."""
    time_s: float
    bound: str
    """``memory`` or ``compute``."""

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else math.inf


def roofline(gpu: GpuRoofline, flops: float, nbytes: float, dtype: str, ctas: float) -> KernelTime:
    """max(FLOPs / peak, bytes / HBM BW), both scaled by SM occupancy = min(1, CTAs / SMs):
    an idle SM neither computes nor issues loads (assumption: each SM can draw 1/SMs of HBM BW)."""
    occ = min(1.0, ctas / gpu.sms)
    t_c = flops / (gpu.flops(dtype) * occ)
    t_m = nbytes / (gpu.hbm_Bps * occ)
    return KernelTime(flops, nbytes, occ, max(t_c, t_m), "compute" if t_c > t_m else "memory")


@dataclass(slots=True)
class AttentionRun:
    """A workload plus the analytic figures that explain it."""

    workload: Workload
    figures: dict = field(default_factory=dict)
