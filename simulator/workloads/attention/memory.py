"""What one GPU must hold in HBM to serve a model: weights, KV cache, activations.

The scenario check (``scenario.check_on_fabrics``) compares the total with the GPU's ``hbm_bytes``
before anything runs: a decode step of Llama-3-70B at tp 1, batch 64, 8k context needs
141.1 GB of weights + 171.8 GB of KV cache, which no 186 GB GB200 holds, so it is an error rather
than a time.

Per GPU, with tensor parallelism ``tp`` (and context parallelism ``cp`` for ring attention):

- weights: every layer's QKV, output and gated-MLP matrices (an MoE layer's: its share of the
  routed experts, ``ModelShape.expert_params_per_gpu_layer``, its slice of the shared ones and the
  router), plus the embedding and the LM head
  (vocab x hidden each, split over tp), in the model's dtype. KV-head weights are replicated when
  tp exceeds kv_heads (each GPU keeps whole KV heads, as the attention model does). Norm weights
  (2 x hidden per layer) are left out: under 0.01 % of any listed model.
- KV cache: batch x tokens held x layers x (K and V of this GPU's KV heads); at cp > 1 a GPU holds
  context / cp tokens, plus two KV blocks of one layer in flight (the block it computes on and the
  one arriving).
- activations (assumption, stated in ``ACTIVATIONS``): the live tensors at the widest point of one
  layer for every token in flight, plus the fp32 logits of the batch.
"""

from __future__ import annotations

import math

from simulator.workloads.attention.model import ModelShape

LOGIT_BYTES = 4
"""Bytes per logit: the sampler works on float32 logits (assumption: vLLM's sampler upcasts the LM
head output to float32 before softmax)."""
ACTIVATIONS = ("assumption: activations = tokens in flight (batch at decode, batch x context / cp at "
               "prefill and ring attention) x the widest point of a layer (the residual stream and the "
               "normed input, 2 x hidden, plus the larger of QKV + attention output, (heads + 2 kv_heads "
               "+ heads) x head_dim / tp, and gate+up + SiLU product, 3 x ffn_hidden / tp) x dtype bytes, "
               "plus batch x vocab fp32 logits; no allocator slack, CUDA graphs or NCCL buffers")
"""The activation assumption, as reports quote it."""
PHASES = ("decode", "prefill", "ring_attention")


def weight_params_per_gpu(m: ModelShape) -> dict[str, float]:
    """Parameters one GPU holds: all layers' matrices and the embedding + LM head."""
    attn = m.attention_params_per_gpu_layer()
    mlp = 3 * m.hidden * m.ffn_hidden / m.tp
    dense = m.layers - m.moe_layers
    return {"layers": m.layers * attn + dense * mlp + m.moe_layers * m.expert_params_per_gpu_layer(),
            "embedding_and_head": 2 * m.vocab * m.hidden / m.tp}


def footprint(m: ModelShape, phase: str = "decode", cp: int = 1, hbm_bytes: float | None = None) -> dict:
    """HBM bytes one GPU needs for ``phase`` (``decode``, ``prefill`` or ``ring_attention`` over ``cp``
    GPUs): ``weights_B`` (of which ``embedding_and_head_B``), ``kv_cache_B``, ``activations_B``,
    ``total_B``; with ``hbm_bytes`` also ``hbm_B`` and ``fits``."""
    if phase not in PHASES:
        raise ValueError(f"phase {phase!r}: choose {', '.join(PHASES)}")
    s = m.dtype_bytes
    params = weight_params_per_gpu(m)
    weights = (params["layers"] + params["embedding_and_head"]) * s
    held = math.ceil(m.context / cp)
    kv_token = m.kv_bytes_per_token_layer()
    kv = m.batch * held * m.layers * kv_token
    if phase == "ring_attention":
        kv += 2 * m.batch * held * kv_token
    tokens = m.batch if phase == "decode" else m.batch * held
    h, hkv, d = m.heads_per_gpu, m.kv_heads_per_gpu, m.head_dim
    attention_width = (h + 2 * hkv + h) * d
    mlp_width = 3 * m.ffn_hidden / m.tp
    activations = tokens * (2 * m.hidden + max(attention_width, mlp_width)) * s + m.batch * m.vocab * LOGIT_BYTES
    out = {"phase": phase, "weights_B": weights, "embedding_and_head_B": params["embedding_and_head"] * s,
           "kv_cache_B": float(kv), "activations_B": float(activations),
           "total_B": weights + kv + activations}
    if hbm_bytes is not None:
        out.update({"hbm_B": float(hbm_bytes), "fits": out["total_B"] <= hbm_bytes})
    return out


def _gb(nbytes: float) -> str:
    """Decimal GB to one decimal, small amounts to two significant digits (0.046)."""
    gb = nbytes / 1e9
    return f"{gb:.1f}" if gb >= 0.1 or gb == 0 else f"{gb:.2g}"


def describe(f: dict) -> str:
    """``312.9 GB per GPU (weights 141.1, KV cache 171.8, activations 0.046)`` (decimal GB)."""
    return (f"{_gb(f['total_B'])} GB per GPU (weights {_gb(f['weights_B'])}, "
            f"KV cache {_gb(f['kv_cache_B'])}, activations {_gb(f['activations_B'])})")
