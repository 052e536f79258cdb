"""Model shape and the run record shared by the attention workloads (what a kernel costs is
``hardware.kernels``)."""

from __future__ import annotations

import math
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
    experts: int = 0
    """Routed experts of each MoE layer (0: every layer's MLP is dense, ``ffn_hidden`` wide)."""
    experts_per_token: int = 0
    """Routed experts each token goes to (top-k)."""
    moe_ffn_hidden: int = 0
    """Inner width of one expert's gated MLP (config.json moe_intermediate_size; Mixtral's experts
    are ``ffn_hidden`` wide)."""
    shared_experts: int = 0
    """Experts every token goes to besides its routed ones (DeepSeek's n_shared_experts), each
    ``moe_ffn_hidden`` wide."""
    dense_layers: int = 0
    """Leading layers whose MLP is dense (``ffn_hidden`` wide; DeepSeek-V3's first_k_dense_replace)."""
    ep: int = 1
    """Expert-parallel degree: the routed experts are split over ``ep`` GPUs, whole experts each (1:
    every GPU holds a 1/tp slice of every expert, tensor-parallel like a dense MLP)."""
    kv_lora_rank: int = 0
    """Multi-head latent attention (DeepSeek-V2/V3, config.json kv_lora_rank): each token caches one
    latent of ``kv_lora_rank + qk_rope_head_dim`` elements per layer, shared by every head (and kept
    whole on every tensor-parallel GPU, as vLLM's MLA backends keep it); 0: GQA with ``kv_heads``."""
    q_lora_rank: int = 0
    """MLA's query compression (q_lora_rank; 0: a full query projection)."""
    qk_rope_head_dim: int = 0
    """MLA: the rotary part of each query and key head (qk_rope_head_dim); ``head_dim`` is the rest
    (qk_nope_head_dim)."""
    v_head_dim: int = 0
    """MLA: the dimension of a value head (v_head_dim)."""

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def heads_per_gpu(self) -> int:
        return max(1, self.heads // self.tp)

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def kv_heads_per_gpu(self) -> int:
        """KV heads one GPU caches (MLA: the one latent)."""
        return 1 if self.is_mla else max(1, self.kv_heads // self.tp)

    @property
    def latent_dim(self) -> int:
        """MLA: the elements one token caches per layer (kv_lora_rank + qk_rope_head_dim)."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    def kv_bytes_per_token_layer(self, per_gpu: bool = True) -> int:
        """K and V of one token in one layer (B); MLA: the latent (the same on every GPU)."""
        if self.is_mla:
            return self.latent_dim * self.dtype_bytes
        kv = self.kv_heads_per_gpu if per_gpu else self.kv_heads
        return 2 * kv * self.head_dim * self.dtype_bytes

    def attention_params_per_gpu_layer(self) -> float:
        """Attention weights one GPU holds per layer. GQA: QKV and output projections (KV heads
        replicated when tp exceeds them). MLA (vLLM's DeepseekV2MLAAttention): the query down- and
        up-projections (or one full projection), the latent down-projection with the rotary key
        (replicated), the latent up-projection to every head's key and value and the output
        projection (split over tp)."""
        h = self.heads_per_gpu
        if not self.is_mla:
            return self.hidden * (h + 2 * self.kv_heads_per_gpu) * self.head_dim + h * self.head_dim * self.hidden
        qk = self.head_dim + self.qk_rope_head_dim
        q = (self.hidden * self.q_lora_rank + self.q_lora_rank * h * qk) if self.q_lora_rank else self.hidden * h * qk
        kv_a = self.hidden * self.latent_dim
        kv_b = self.kv_lora_rank * h * (self.head_dim + self.v_head_dim)
        return q + kv_a + kv_b + h * self.v_head_dim * self.hidden

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts."""
        return self.layers - self.dense_layers if self.is_moe else 0

    def expert_params_per_gpu_layer(self) -> float:
        """Weights of one MoE layer's experts one GPU holds: its routed experts (all of them /
        tp at ep 1, experts / ep whole ones otherwise), its slice of the shared experts (split
        over tp) and the router (hidden x experts, replicated)."""
        one = 3 * self.hidden * self.moe_ffn_hidden
        routed = self.experts * one / self.tp if self.ep == 1 else math.ceil(self.experts / self.ep) * one
        return routed + self.shared_experts * one / self.tp + self.hidden * self.experts

    def weight_params_per_gpu_layer(self) -> float:
        """Weights one GPU holds per layer: QKV and output projections, gated MLP (a dense layer's)."""
        attn = self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim + self.heads * self.head_dim * self.hidden
        mlp = 3 * self.hidden * self.ffn_hidden
        return (attn + mlp) / self.tp


@dataclass(slots=True)
class AttentionRun:
    """A workload plus the analytic figures that explain it."""

    workload: Workload
    figures: dict = field(default_factory=dict)
