"""The MLP half of a mixture-of-experts layer on one GPU, each kernel costed by the kernel model.

Per MoE layer and GPU (vLLM's ``FusedMoE`` and SGLang's DeepEP path, fused kernels):

- the router: a ``tokens x experts`` GEMM over ``hidden`` (replicated on every GPU of an attention
  group), then a top-k softmax kernel;
- the shared experts (DeepSeek's ``n_shared_experts``): a dense gated MLP ``shared x
  moe_ffn_hidden / tp`` wide on every token of the group;
- the routed experts as one grouped GEMM per projection (gate+up, then down), over the experts of
  this GPU that at least one token picked, with SiLU-and-multiply between them, and a permute
  (gather of each picked token's row) before and an unpermute (weighted scatter-add) after.

Which experts are active: with ``n`` token-expert picks spread uniformly over ``experts`` experts
(each token picks ``experts_per_token`` distinct ones), an expert is picked by at least one of ``T``
tokens with probability ``1 - (1 - k / E)^T``; so at decode a GPU reads the weights of the experts
the batch woke up, not all of them (the reason small-batch MoE decode is cheaper than its weights).

Where the experts are:
- ``ep == 1``: every GPU holds a ``1 / tp`` slice of every expert (tensor-parallel experts), and
  processes every pick of the group's ``T`` tokens; an all-reduce follows, as for a dense MLP;
- ``ep > 1``: the GPU holds ``experts / ep`` whole experts and processes the picks routed to them:
  ``T_ep x k / ep`` on average over the ``ep`` GPUs' tokens ``T_ep``, times ``imbalance`` on the busiest
  GPU (max / mean load, >= 1; 1 is perfectly balanced routing). Dispatch and combine all-to-alls
  move the picks (``dispatch_bytes``); the caller costs them on the fabric.

A grouped GEMM is costed as one GEMM whose columns are the active experts' side by side: its
tiles, FLOPs and weight bytes are exactly the experts', its activation bytes (each row read once,
not once per expert) a lower bound (assumption: activations are under 1% of the weights read at
decode and under 10% at prefill chunk sizes).
"""

from __future__ import annotations

import math

from simulator.hardware.kernels import GpuKernels, KernelCost
from simulator.workloads.attention.layer import elementwise, gated_mlp
from simulator.workloads.attention.model import ModelShape


def active_experts(experts: int, per_token: int, tokens: int) -> float:
    """Expected experts picked by at least one of ``tokens`` tokens (uniform routing)."""
    if tokens <= 0 or experts <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - per_token / experts) ** tokens)


def routed_rows(m: ModelShape, tokens: int, ep_tokens: int, imbalance: float = 1.0) -> float:
    """Token-expert picks one GPU computes: all ``tokens x k`` of its group at ``ep == 1``, else its
    share ``ep_tokens x k / ep`` times ``imbalance``."""
    if m.ep == 1:
        return float(tokens * m.experts_per_token)
    return ep_tokens * m.experts_per_token / m.ep * imbalance


def dispatch_bytes(m: ModelShape, tokens: int) -> int:
    """Bytes one GPU sends in a dispatch all-to-all (and receives back in the combine): each of its
    ``tokens`` (its share of the group's, ``tokens / tp``) goes to ``k`` experts as one hidden row."""
    return int(math.ceil(tokens / m.tp) * m.experts_per_token * m.hidden * m.dtype_bytes)


def moe_mlp(gk: GpuKernels, m: ModelShape, tokens: int, ep_tokens: int, imbalance: float = 1.0
            ) -> list[KernelCost]:
    """The MLP half's kernels of one MoE layer on the busiest GPU: ``tokens`` rows in this GPU's
    attention group, ``ep_tokens`` rows over all ``ep`` GPUs (module docstring)."""
    s = m.dtype_bytes
    out = [gk.gemm("router", tokens, m.experts, m.hidden, m.dtype),
           elementwise(gk, "topk_softmax", 2.0 * tokens * m.experts * 4, "activation")]
    if m.shared_experts:
        out += gated_mlp(gk, m, tokens, max(1, m.shared_experts * m.moe_ffn_hidden // m.tp), "shared_")
    local = m.experts if m.ep == 1 else math.ceil(m.experts / m.ep)
    width = max(1, m.moe_ffn_hidden // m.tp) if m.ep == 1 else m.moe_ffn_hidden
    picks = routed_rows(m, tokens, ep_tokens, imbalance)
    seen = tokens if m.ep == 1 else ep_tokens
    active = min(local, max(1.0, active_experts(m.experts, m.experts_per_token, seen) * local / m.experts),
                 max(1.0, picks))
    groups = max(1, round(active))
    rows = max(1, math.ceil(picks / groups))
    out += [elementwise(gk, "moe_permute", 2.0 * picks * m.hidden * s, "copy"),
            gk.gemm("experts_gate_up", rows, groups * 2 * width, m.hidden, m.dtype),
            elementwise(gk, "experts_silu_and_mul", 3.0 * picks * width * s, "activation"),
            gk.gemm("experts_down", rows, groups * m.hidden, width, m.dtype),
            elementwise(gk, "moe_unpermute", 3.0 * picks * m.hidden * s, "elementwise")]
    return out
