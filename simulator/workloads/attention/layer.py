"""The kernels of one tensor-parallel transformer layer on one GPU, each costed by the kernel model.

Two kernel sequences (``LAYER_STACKS``; the choice is stated in every report):

``fused`` (a serving engine's, vLLM's Llama layer): per layer
- attention half: fused residual-add + RMSNorm; QKV projection (GEMM); rotary embedding; KV-cache
  write; attention (FlashAttention-2: decode split-KV + combine, or prefill forward); output
  projection (GEMM); then the all-reduce;
- MLP half: fused residual-add + RMSNorm; gate+up projection (one GEMM, 2 x ffn / tp wide);
  SiLU-and-multiply; down projection (GEMM); then the all-reduce.

``pytorch`` (a reference PyTorch layer, as ``fabricsim calibrate``'s layer bench writes it and as
Hugging Face's Llama does): RMSNorm; QKV GEMM; rotary embedding as PyTorch evaluates ``z cos +
rotate_half(z) sin`` (mul, neg, cat, mul, add for Q and again for K); the KV-cache write
(``index_copy_`` for K and for V) at decode, a transpose copy of the output at prefill; attention; O
GEMM; residual add; RMSNorm; gate+up GEMM; SiLU; multiply; down GEMM; residual add.

Once per step: the embedding gather (vocabulary split over tp, so an all-reduce follows it, as in
Megatron's and vLLM's VocabParallelEmbedding), and the final RMSNorm + LM head (vocab / tp columns).
Tokens per step: ``batch`` at decode, ``batch x context`` at prefill.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from simulator.hardware.kernels import BOUNDS, POWER_STATES, GpuKernels, KernelCost
from simulator.workloads.attention.model import ModelShape

LAYER_STACKS = {
    "fused": "vLLM-style fused layer: add+RMSNorm, QKV GEMM, rotary, KV-cache write, attention, O GEMM | "
             "add+RMSNorm, gate+up GEMM, SiLU*mul, down GEMM; embedding and LM head per step",
    "pytorch": "reference PyTorch layer: RMSNorm, QKV GEMM, rotary (5 elementwise kernels each for Q and K), "
               "KV-cache index_copy x2, attention, O GEMM, add | RMSNorm, gate+up GEMM, SiLU, mul, down GEMM, "
               "add; embedding and LM head per step"}
"""Kernel sequence -> its one-line statement, carried in every decode/prefill report."""
DEFAULT_STACK = "pytorch"
"""The default kernel sequence: the one fabricsim's layers are checked against (``fabricsim
calibrate``'s layer bench on one H200, ``validate``); ``fused`` models a serving engine's kernels,
which no measurement here checks."""
GROUPS = ("attention", "gemm", "other")


@dataclass(slots=True)
class PhaseCost:
    """Kernels of one phase (attention half, MLP half, embedding, head) on one GPU."""

    kernels: list[KernelCost] = field(default_factory=list)

    @property
    def time_s(self) -> float:
        return sum(k.time_s for k in self.kernels)

    def add(self, *kernels: KernelCost) -> "PhaseCost":
        self.kernels.extend(kernels)
        return self


@dataclass(slots=True)
class StepCost:
    """One forward step's kernels on one GPU: per-layer phases and the once-per-step ends."""

    layers: int
    attn: PhaseCost
    mlp: PhaseCost
    embed: PhaseCost
    head: PhaseCost
    launch: str

    def per_layer(self) -> list[KernelCost]:
        return self.attn.kernels + self.mlp.kernels

    @property
    def layer_s(self) -> float:
        return self.attn.time_s + self.mlp.time_s

    @property
    def compute_s(self) -> float:
        """Every kernel of the step on one GPU, back to back (s)."""
        return self.layers * self.layer_s + self.embed.time_s + self.head.time_s

    def _all(self):
        for k in self.per_layer():
            yield k, self.layers
        for k in self.embed.kernels + self.head.kernels:
            yield k, 1

    def kernels_per_step(self) -> int:
        return sum(k.kernels * n for k, n in self._all())

    def group_s(self) -> dict[str, float]:
        """Per-layer time of attention, GEMM and other kernels (s)."""
        out = dict.fromkeys(GROUPS, 0.0)
        for k in self.per_layer():
            out[k.group] += k.time_s
        return out

    def bound_s(self) -> dict[str, float]:
        """Step time by what bounds each kernel (fixed cost, CTA concurrency, HBM, tensor cores,
        power cap), every kernel of the step (s)."""
        out = dict.fromkeys(BOUNDS, 0.0)
        for k, n in self._all():
            out[k.bound] += n * k.time_s
        return out

    def state_s(self) -> dict[str, float]:
        """Step time by board power state (s): what the GPU's energy is computed from."""
        out = dict.fromkeys(POWER_STATES, 0.0)
        for k, n in self._all():
            out[k.power_state] += n * k.time_s
        return out

    def main_bound(self) -> str:
        by = self.bound_s()
        return max(by, key=by.get)  # type: ignore[arg-type]

    def rows(self) -> list[dict]:
        """One row per kernel of a layer (then embedding and head): for ``--json`` and reports."""
        out = []
        for phase, kernels, per in (("layer", self.per_layer(), self.layers),
                                    ("embedding", self.embed.kernels, 1), ("head", self.head.kernels, 1)):
            for k in kernels:
                out.append({"phase": phase, "kernel": k.name, "count": per, "time_us": k.time_s * 1e6,
                            "kernels": k.kernels, "bound": k.bound, "ctas": k.ctas,
                            "sm_occupancy": k.sm_occupancy, "bytes": k.bytes, "flops": k.flops,
                            "achieved_GBps": k.achieved_Bps / 1e9, "detail": k.detail})
        return out


COLD_L2 = True
"""Every small kernel of a layer finds L2 cold (assumption from the H200's switch bench and layer
profiles: a layer's GEMMs stream its weights, tens to hundreds of MB per GPU against a 40-126 MB L2,
and an RMSNorm after a 117 MB weight stream takes 12.9 us against 7.3 us replayed alone; the
layer's norms and elementwise kernels ran at those in-layer times)."""


def _ew(gk: GpuKernels, name: str, nbytes: float, kind: str = "elementwise", rows: int | None = None,
        row: int = 0) -> KernelCost:
    """An elementwise or row kernel of a layer (``COLD_L2``)."""
    return gk.elementwise(name, nbytes, kind, rows=rows, row=row, cold=COLD_L2)


def _norm(gk: GpuKernels, name: str, tokens: int, hidden: int, s: int, fused_add: bool = True) -> KernelCost:
    """RMSNorm over ``tokens`` rows of ``hidden``, one CTA per row: reads x (and with ``fused_add`` the
    residual, writing both) and writes the normalized row."""
    touches = 4.0 if fused_add else 2.0
    return _ew(gk, name, touches * tokens * hidden * s, "norm", rows=tokens, row=hidden)


def _rotary_pytorch(gk: GpuKernels, name: str, n_bytes: float) -> list[KernelCost]:
    """``z * cos + cat(-z2, z1) * sin`` as PyTorch runs it on a tensor of ``n_bytes``: mul, neg (of
    one half), cat, mul, add (bytes read + written each)."""
    return [_ew(gk, f"{name}_mul_cos", 2 * n_bytes, "elementwise"),
            _ew(gk, f"{name}_neg", n_bytes, "elementwise"),
            _ew(gk, f"{name}_cat", 2 * n_bytes, "copy"),
            _ew(gk, f"{name}_mul_sin", 2 * n_bytes, "elementwise"),
            _ew(gk, f"{name}_add", 3 * n_bytes, "elementwise")]


def _attention(gk: GpuKernels, m: ModelShape, phase: str, flash_decoding: bool) -> KernelCost:
    h, hkv, d = m.heads_per_gpu, m.kv_heads_per_gpu, m.head_dim
    if phase == "decode":
        return gk.decode_attention(m.batch, h, hkv, m.context, d, m.dtype, flash_decoding)
    return gk.prefill_attention(m.batch, h, hkv, m.context, m.context, d, m.dtype, causal=True)


@functools.lru_cache(maxsize=65536)
def step_cost(gk: GpuKernels, m: ModelShape, phase: str, flash_decoding: bool = True,
              stack: str = DEFAULT_STACK) -> StepCost:
    """Cached (a serving run asks the same steps again and again; treat the result as read-only).
    The kernels of one decode step (``phase='decode'``: one new token per sequence against
    ``m.context`` cached ones) or one prefill (``'prefill'``: ``m.context`` prompt tokens, causal),
    in the kernel sequence ``stack`` (``LAYER_STACKS``)."""
    if stack not in LAYER_STACKS:
        raise ValueError(f"unknown layer kernel sequence {stack!r}; choose {', '.join(LAYER_STACKS)}")
    s, tp, d = m.dtype_bytes, m.tp, m.head_dim
    h, hkv = m.heads_per_gpu, m.kv_heads_per_gpu
    tokens = m.batch if phase == "decode" else m.batch * m.context
    qkv_n = (h + 2 * hkv) * d
    ffn = max(1, m.ffn_hidden // tp) if m.ffn_hidden else 0
    attn, mlp = PhaseCost(), PhaseCost()
    if stack == "fused":
        attn, mlp = fused_layer(gk, m, tokens, (_attention(gk, m, phase, flash_decoding),))
    else:
        attn.add(_norm(gk, "rmsnorm", tokens, m.hidden, s, fused_add=False),
                 gk.gemm("qkv_proj", tokens, qkv_n, m.hidden, m.dtype),
                 *_rotary_pytorch(gk, "rotary_q", float(tokens * h * d * s)),
                 *_rotary_pytorch(gk, "rotary_k", float(tokens * hkv * d * s)))
        if phase == "decode":
            attn.add(*(_ew(gk, f"{x}_cache_index_copy", 2.0 * tokens * hkv * d * s, "copy") for x in "kv"))
        attn.add(_attention(gk, m, phase, flash_decoding))
        if phase != "decode":
            attn.add(_ew(gk, "attn_out_transpose", 2.0 * tokens * h * d * s, "copy"))
        attn.add(gk.gemm("o_proj", tokens, m.hidden, h * d, m.dtype),
                 _ew(gk, "residual_add", 3.0 * tokens * m.hidden * s, "elementwise"))
        mlp.add(_norm(gk, "rmsnorm", tokens, m.hidden, s, fused_add=False))
        if ffn:
            mlp.add(gk.gemm("gate_up_proj", tokens, 2 * ffn, m.hidden, m.dtype),
                    _ew(gk, "silu", 2.0 * tokens * ffn * s, "activation"),
                    _ew(gk, "mul", 3.0 * tokens * ffn * s, "elementwise"),
                    gk.gemm("down_proj", tokens, m.hidden, ffn, m.dtype))
        mlp.add(_ew(gk, "residual_add", 3.0 * tokens * m.hidden * s, "elementwise"))
    embed, head = step_ends(gk, m, tokens, m.batch, fused=stack == "fused")
    return StepCost(m.layers, attn, mlp, embed, head, gk.launch)


def step_ends(gk: GpuKernels, m: ModelShape, tokens: int, sequences: int, fused: bool = True
              ) -> tuple[PhaseCost, PhaseCost]:
    """The once-per-step kernels: the embedding gather of ``tokens`` rows, and the final RMSNorm +
    LM head on the last token of each of ``sequences`` (the logits of its next token); none without
    a vocabulary (and no head for 0 sequences)."""
    embed, head = PhaseCost(), PhaseCost()
    if m.vocab:
        s = m.dtype_bytes
        embed.add(_ew(gk, "embedding", 2.0 * tokens * m.hidden * s, "copy"))
        if sequences:
            head.add(_norm(gk, "final_rmsnorm", sequences, m.hidden, s, fused_add=fused),
                     gk.gemm("lm_head", sequences, max(1, m.vocab // m.tp), m.hidden, m.dtype))
    return embed, head


def fused_layer(gk: GpuKernels, m: ModelShape, tokens: int, attention: tuple[KernelCost, ...]
                ) -> tuple[PhaseCost, PhaseCost]:
    """One layer in the ``fused`` sequence for ``tokens`` rows (decode tokens and prefill chunks
    together, as a serving engine batches them), with the ``attention`` kernels given (one per
    kind of sequence the batch holds); the MLP half is the dense gated MLP (``ffn_hidden / tp``
    wide). An MoE layer's MLP half is ``attention.moe.moe_mlp``."""
    s, d = m.dtype_bytes, m.head_dim
    h, hkv = m.heads_per_gpu, m.kv_heads_per_gpu
    if m.is_mla:
        attn = PhaseCost().add(_norm(gk, "add+rmsnorm", tokens, m.hidden, s), *mla_projections(gk, m, tokens),
                               *attention, gk.gemm("o_proj", tokens, m.hidden, h * m.v_head_dim, m.dtype))
    else:
        attn = PhaseCost().add(_norm(gk, "add+rmsnorm", tokens, m.hidden, s),
                               gk.gemm("qkv_proj", tokens, (h + 2 * hkv) * d, m.hidden, m.dtype),
                               _ew(gk, "rotary", 2.0 * tokens * (h + hkv) * d * s, "elementwise"),
                               _ew(gk, "kv_cache_write", 2.0 * tokens * 2 * hkv * d * s, "copy"),
                               *attention,
                               gk.gemm("o_proj", tokens, m.hidden, h * d, m.dtype))
    mlp = PhaseCost().add(_norm(gk, "add+rmsnorm", tokens, m.hidden, s))
    ffn = max(1, m.ffn_hidden // m.tp) if m.ffn_hidden else 0
    if ffn:
        mlp.add(*gated_mlp(gk, m, tokens, ffn))
    return attn, mlp


def mla_projections(gk: GpuKernels, m: ModelShape, tokens: int) -> list[KernelCost]:
    """Multi-head latent attention's projections before attention (vLLM's DeepseekV2MLAAttention,
    fused kernels): the query down-projection and its RMSNorm, the query up-projection to this GPU's
    heads (or one full query projection), the latent down-projection with the rotary key and the
    latent's RMSNorm, rotary on the queries' and the key's rotary parts, the latent written to the
    cache. The latent's up-projections are the attention's (``mla_attention``)."""
    s, h = m.dtype_bytes, m.heads_per_gpu
    qk = m.head_dim + m.qk_rope_head_dim
    out = []
    if m.q_lora_rank:
        out += [gk.gemm("q_a_proj", tokens, m.q_lora_rank, m.hidden, m.dtype),
                _norm(gk, "q_a_layernorm", tokens, m.q_lora_rank, s, fused_add=False),
                gk.gemm("q_b_proj", tokens, h * qk, m.q_lora_rank, m.dtype)]
    else:
        out.append(gk.gemm("q_proj", tokens, h * qk, m.hidden, m.dtype))
    return out + [gk.gemm("kv_a_proj_with_mqa", tokens, m.latent_dim, m.hidden, m.dtype),
                  _norm(gk, "kv_a_layernorm", tokens, m.kv_lora_rank, s, fused_add=False),
                  _ew(gk, "rotary", 2.0 * tokens * (h + 1) * m.qk_rope_head_dim * s, "elementwise"),
                  _ew(gk, "kv_cache_write", 2.0 * tokens * m.latent_dim * s, "copy")]


def mla_decode_attention(gk: GpuKernels, m: ModelShape, sequences: int, context: int) -> list[KernelCost]:
    """MLA decode with the latent's up-projections absorbed (FlashMLA, vLLM's MLA backends): each
    query head's non-rotary part is projected into the latent (a batched GEMM over the heads'
    W_UK), every head attends to the cached latent (read once: ``shared_kv``), and the result is
    projected to each head's value (W_UV)."""
    h = m.heads_per_gpu
    return [gk.gemm("mla_q_absorb", sequences, h * m.kv_lora_rank, m.head_dim, m.dtype, group="attention"),
            gk.decode_attention(sequences, h, 1, context, m.latent_dim, m.dtype, True, shared_kv=True),
            gk.gemm("mla_v_up", sequences, h * m.v_head_dim, m.kv_lora_rank, m.dtype, group="attention")]


def mla_prefill_attention(gk: GpuKernels, m: ModelShape, sequences: int, q_tokens: int, kv_tokens: int
                          ) -> list[KernelCost]:
    """MLA prefill without absorption (vLLM's MLA prefill path): the latent of every key the chunks
    see is projected up to each head's key and value (``kv_b_proj`` over ``sequences x kv_tokens``
    rows), then causal FlashAttention with heads of qk_nope + qk_rope dimensions (the value's 128
    counted as 192: 20% more FLOPs in its second product, assumption)."""
    h = m.heads_per_gpu
    return [gk.gemm("kv_b_proj", sequences * kv_tokens, h * (m.head_dim + m.v_head_dim), m.kv_lora_rank, m.dtype,
                    group="attention"),
            gk.prefill_attention(sequences, h, h, q_tokens, kv_tokens, m.head_dim + m.qk_rope_head_dim, m.dtype,
                                 causal=True)]


def gated_mlp(gk: GpuKernels, m: ModelShape, tokens: int, width: int, prefix: str = "") -> list[KernelCost]:
    """A gated MLP ``width`` wide on ``tokens`` rows, fused: gate+up GEMM, SiLU-and-multiply, down GEMM."""
    s = m.dtype_bytes
    return [gk.gemm(f"{prefix}gate_up_proj", tokens, 2 * width, m.hidden, m.dtype),
            _ew(gk, f"{prefix}silu_and_mul", 3.0 * tokens * width * s, "activation"),
            gk.gemm(f"{prefix}down_proj", tokens, m.hidden, width, m.dtype)]


def elementwise(gk: GpuKernels, name: str, nbytes: float, kind: str = "elementwise") -> KernelCost:
    """An elementwise kernel of a layer, L2 cold (``COLD_L2``)."""
    return _ew(gk, name, nbytes, kind)
