"""Model shape and the run record shared by the attention workloads (what a kernel costs is
``hardware.kernels``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from simulator.engine.transfer import Workload

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1}


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


@dataclass(slots=True)
class AttentionRun:
    """A workload plus the analytic figures that explain it."""

    workload: Workload
    figures: dict = field(default_factory=dict)
