"""What one serving iteration costs: the kernel model's kernels for the batch the scheduler formed,
and the iteration's tensor- and expert-parallel collectives, costed on the fabric by the caller.

An iteration of a :class:`~simulator.workloads.serving.scheduler.BatchShape` on one instance
(``tp`` GPUs of one attention group; at ``ep > 1`` one of ``ep / tp`` such groups whose MoE layers
share the ``ep`` GPUs), on its busiest GPU, kernels back to back (a CUDA graph's launches, vLLM
V1's piecewise graphs; ``launch`` of the kernel model):

- every layer: the ``fused`` sequence (``attention.layer.fused_layer``) on the batch's token rows,
  decode tokens and prefill chunks together, with two attention kernels: decode attention over the
  decode sequences (one split-KV kernel for all of them, reading each one's own KV: the batch's
  summed context, at the mean context per sequence) and prefill attention of the chunks (causal,
  each chunk's queries against its cached prefix and itself); latent attention (MLA) adds its
  up-projections (absorbed at decode, expanded at prefill: ``layer.mla_decode_attention``,
  ``layer.mla_prefill_attention``);
- an MoE layer's MLP half is ``attention.moe.moe_mlp``;
- collectives per layer: at ``tp > 1`` an all-reduce of the tokens' hidden rows after attention
  and after a dense (or ``ep == 1`` MoE) MLP; an MoE layer at ``ep > 1`` adds a dispatch and a
  combine all-to-all over the ``ep`` GPUs (times ``imbalance``: the busiest receiver sets an
  all-to-all's time) and, at ``tp > 1``, an all-gather of the combined rows; one all-reduce after
  the embedding;
- the embedding once, the LM head on the last token of every scheduled sequence.

Nothing overlaps (each collective waits for the kernel before it, the next kernel for it: the
dependency chain of a TP layer), so the iteration is the sum; the DAG of the same kernels and
transfers on an engine gives that sum back (``tests/test_serving_iteration.py``). The ``ep / tp``
attention groups of an expert-parallel instance are taken to schedule equal batches (assumption:
the symmetric case; the slowest group would set the pace of the all-to-alls otherwise).
"""

from __future__ import annotations

import bisect
import functools
import math
from dataclasses import dataclass, field
from typing import Protocol, Sequence

import numpy as np

from simulator.hardware.kernels import POWER_STATES, GpuKernels, KernelCost
from simulator.workloads.attention.layer import (PhaseCost, fused_layer, mla_decode_attention, mla_prefill_attention,
                                                 step_ends)
from simulator.workloads.attention.model import ModelShape
from simulator.workloads.attention.moe import dispatch_bytes, moe_mlp
from simulator.workloads.serving.scheduler import BatchShape

class CollectiveCost(Protocol):
    """A collective on the instance's GPUs at a message size (B, nccl-tests convention)."""

    def time_s(self, nbytes: int) -> float: ...

    def energy_J(self, nbytes: int) -> float:
        """Transport energy of the bytes it moves (links, switches; static power apart)."""
        ...

    def busy_at(self, nbytes: int) -> np.ndarray | None:
        """Seconds each channel of the fabric is busy with it (None when not known)."""
        ...


def _interpolate(sizes: tuple[int, ...], values: tuple, nbytes: int):  # noqa: ANN202 - a float or an array
    """``values`` (floats, or arrays of one per channel) at ``nbytes``, linear between ``sizes``."""
    if nbytes <= sizes[0] or len(sizes) == 1:
        return values[0]
    i = min(bisect.bisect_left(sizes, nbytes), len(sizes) - 1)
    lo, hi = sizes[i - 1], sizes[i]
    return values[i - 1] + (values[i] - values[i - 1]) * (nbytes - lo) / (hi - lo)


@dataclass(frozen=True, eq=False)
class SizeCurve:
    """A collective's time and transport energy, simulated at ``sizes`` (ascending) and interpolated
    linearly in bytes between them (a collective's time is affine in its size while the algorithm and
    protocol stay: alpha + bytes / bandwidth; its energy is per byte); at or below the smallest size,
    the smallest's; beyond the largest, extended along the last segment (a curve of one size is that
    size's figures)."""

    sizes: tuple[int, ...]
    times_s: tuple[float, ...]
    energies_J: tuple[float, ...] = ()
    busy_s: tuple[np.ndarray, ...] = ()
    """Per size, seconds each channel was busy (the engine's ``channel_busy_s``)."""

    def __post_init__(self) -> None:
        if not self.sizes or len(self.sizes) != len(self.times_s) or list(self.sizes) != sorted(set(self.sizes)):
            raise ValueError("a SizeCurve needs ascending distinct sizes, one time each")
        if self.energies_J and len(self.energies_J) != len(self.sizes):
            raise ValueError("a SizeCurve's energies need one per size")

    def time_s(self, nbytes: int) -> float:
        return _interpolate(self.sizes, self.times_s, nbytes)

    def energy_J(self, nbytes: int) -> float:
        return _interpolate(self.sizes, self.energies_J, nbytes) if self.energies_J else 0.0

    def busy_at(self, nbytes: int) -> np.ndarray | None:
        return _interpolate(self.sizes, self.busy_s, nbytes) if self.busy_s else None


@dataclass(frozen=True, eq=False)
class BySize:
    """``small`` below ``threshold_B`` bytes, ``large`` from there on (a policy that changes algorithm
    at a size, as vLLM's custom all-reduce hands large messages to NCCL)."""

    small: CollectiveCost
    large: CollectiveCost
    threshold_B: int

    def time_s(self, nbytes: int) -> float:
        return (self.small if nbytes < self.threshold_B else self.large).time_s(nbytes)

    def energy_J(self, nbytes: int) -> float:
        return (self.small if nbytes < self.threshold_B else self.large).energy_J(nbytes)

    def busy_at(self, nbytes: int) -> np.ndarray | None:
        return (self.small if nbytes < self.threshold_B else self.large).busy_at(nbytes)


def doubling_sizes(smallest: int, largest: int) -> tuple[int, ...]:
    """Powers of two from the one at or below ``smallest`` to the one at or above ``largest``."""
    lo = 1 << max(0, math.floor(math.log2(max(1, smallest))))
    out = [lo]
    while out[-1] < largest:
        out.append(out[-1] * 2)
    return tuple(out)


@dataclass(frozen=True)
class Collectives:
    """The instance's collectives, each a time of bytes (None where the instance has none)."""

    all_reduce: CollectiveCost | None = None
    """Over the ``tp`` GPUs of the attention group."""
    all_gather: CollectiveCost | None = None
    """Over the same ``tp`` GPUs (the rows an expert-parallel combine spread)."""
    alltoall: CollectiveCost | None = None
    """Over the ``ep`` GPUs of an expert-parallel MoE layer."""


@dataclass(frozen=True, slots=True)
class IterationCost:
    """One iteration on the instance's busiest GPU."""

    compute_s: float
    """Every kernel, back to back."""
    communication_s: float
    """Every collective of the iteration (none overlaps a kernel)."""
    state_s: dict = field(default_factory=dict)
    """Kernel time by board power state (``hardware.kernels.POWER_STATES``)."""
    collectives: int = 0
    transport_J: float = 0.0
    """Transport energy of the iteration's collectives, the whole group's (static power apart)."""
    messages: tuple = ()
    """(collective, message bytes, times) of each collective of the iteration."""

    @property
    def time_s(self) -> float:
        return self.compute_s + self.communication_s


@dataclass(frozen=True, eq=False)
class IterationModel:
    """The cost of a batch on one instance (module docstring), cached by shape: equal shapes are
    asked again and again over a long trace. Hashed by identity."""

    gk: GpuKernels
    model: ModelShape
    """The served model with the instance's ``tp`` and ``ep`` (``batch`` and ``context`` unused)."""
    collectives: Collectives
    context_bucket_tokens: int
    """The scheduler's bucket of decode contexts (a bucket's sequences count at its middle)."""
    imbalance: float = 1.0
    """Expert load on the busiest GPU over the mean (>= 1), at ``ep > 1``."""
    overhead_s: float = 0.0
    """Host time per iteration not hidden behind the GPU's (scheduler, input preparation, sampler)."""

    def __post_init__(self) -> None:
        m = self.model
        if m.tp > 1 and self.collectives.all_reduce is None:
            raise ValueError(f"tp {m.tp} needs an all-reduce time")
        if m.is_moe and m.ep > 1 and self.collectives.alltoall is None:
            raise ValueError(f"ep {m.ep} needs an all-to-all time")
        if not self.imbalance >= 1:
            raise ValueError(f"imbalance {self.imbalance} is below 1 (max / mean load)")

    @property
    def groups(self) -> int:
        """Attention groups whose tokens share an expert-parallel MoE layer."""
        m = self.model
        return m.ep // m.tp if m.is_moe and m.ep > 1 else 1

    def attention(self, shape: BatchShape) -> tuple[KernelCost, ...]:
        """The batch's attention kernels on one GPU: decode, then the prefill chunks'."""
        m, gk = self.model, self.gk
        h, hkv, d = m.heads_per_gpu, m.kv_heads_per_gpu, m.head_dim
        out = []
        if shape.decode_seqs:
            half = self.context_bucket_tokens / 2
            kv = sum(count * max(1.0, bucket - half + 0.5) for bucket, count in shape.decode_contexts)
            mean = max(1, round(kv / shape.decode_seqs))
            if m.is_mla:
                out += mla_decode_attention(gk, m, shape.decode_seqs, mean)
            else:
                out.append(gk.decode_attention(shape.decode_seqs, h, hkv, mean, d, m.dtype, True))
        if shape.prefill_seqs:
            q = math.ceil(shape.prefill_tokens / shape.prefill_seqs)
            prior = shape.prefill_context_tokens // shape.prefill_seqs
            if m.is_mla:
                out += mla_prefill_attention(gk, m, shape.prefill_seqs, q, q + prior)
            else:
                out.append(gk.prefill_attention(shape.prefill_seqs, h, hkv, q, q + prior, d, m.dtype, causal=True))
        return tuple(out)

    def kernels(self, shape: BatchShape) -> list[tuple[KernelCost, int]]:
        """Every kernel of the iteration with how many times it runs (per layer x layers)."""
        m = self.model
        attention = self.attention(shape)
        out = self._row_kernels(shape.tokens)
        at = next(i for i, (k, _) in enumerate(out) if k.name == "o_proj")  # attention runs before o_proj
        out[at:at] = [(k, m.layers) for k in attention]
        _, head = step_ends(self.gk, m, shape.tokens, shape.decode_seqs + shape.prefill_seqs)
        return out + [(k, 1) for k in head.kernels]

    def _row_kernels(self, tokens: int) -> list[tuple[KernelCost, int]]:
        """The kernels whose cost depends on the token rows only: every layer's but attention, and
        the embedding."""
        m, gk = self.model, self.gk
        attn, dense_mlp = fused_layer(gk, m, tokens, ())
        dense = m.layers - m.moe_layers
        out = [(k, m.layers) for k in attn.kernels]
        out += [(k, dense) for k in dense_mlp.kernels] if dense else []
        if m.moe_layers:
            moe = PhaseCost().add(dense_mlp.kernels[0], *moe_mlp(gk, m, tokens, tokens * self.groups, self.imbalance))
            out += [(k, m.moe_layers) for k in moe.kernels]
        embed, _ = step_ends(gk, m, tokens, 0)
        return out + [(k, 1) for k in embed.kernels]

    def communication(self, shape: BatchShape) -> list[tuple[CollectiveCost, int, int]]:
        """(collective, message bytes, times per iteration) of the iteration's collectives (module
        docstring)."""
        m, c = self.model, self.collectives
        rows = shape.tokens * m.hidden * m.dtype_bytes
        out: list[tuple[CollectiveCost, int, int]] = []
        if m.tp > 1:
            reduced_mlps = m.layers if m.ep == 1 else m.layers - m.moe_layers
            out.append((c.all_reduce, rows, m.layers + reduced_mlps + (1 if m.vocab else 0)))  # type: ignore[arg-type]
        if m.moe_layers and m.ep > 1:
            out.append((c.alltoall, int(math.ceil(dispatch_bytes(m, shape.tokens) * self.imbalance)),  # type: ignore[arg-type]
                        2 * m.moe_layers))
            if m.tp > 1:
                out.append((c.all_gather, rows, m.moe_layers))  # type: ignore[arg-type]
        return out

    @functools.lru_cache(maxsize=1 << 16)
    def cost(self, shape: BatchShape) -> IterationCost:
        """The iteration's cost (cached by shape; treat it as read-only): the sum over
        :meth:`kernels` and :meth:`communication`, assembled from parts cached by what each
        depends on (the token rows, the sequences' count, the attention kernels' arguments)."""
        rows = self._rows_part(shape.tokens)
        head = self._head_part(shape.decode_seqs + shape.prefill_seqs)
        states = dict(rows[1])
        compute = rows[0] + head[0] + self.overhead_s
        for state, s in head[1]:
            states[state] += s
        layers = self.model.layers
        for k in self.attention(shape):
            compute += layers * k.time_s
            states[k.power_state] += layers * k.time_s
        return IterationCost(compute, rows[2], states, rows[3], rows[4], rows[5])

    @functools.lru_cache(maxsize=1 << 14)
    def _rows_part(self, tokens: int) -> tuple:
        """(compute, states, communication, collectives, transport J, messages) of everything that depends on
        the batch's token rows only: every layer's kernels but attention, the embedding, the collectives."""
        shape = BatchShape(0, (), 0, tokens, 0)
        kernels = self._row_kernels(tokens)
        states = dict.fromkeys(POWER_STATES, 0.0)
        for k, n in kernels:
            states[k.power_state] += k.time_s * n
        comm = self.communication(shape)
        return (sum(k.time_s * n for k, n in kernels), tuple(states.items()),
                sum(c.time_s(b) * n for c, b, n in comm), sum(n for _, _, n in comm),
                sum(c.energy_J(b) * n for c, b, n in comm), tuple(comm))

    @functools.lru_cache(maxsize=1 << 12)
    def _head_part(self, sequences: int) -> tuple:
        """(compute, states) of the LM head on the last token of ``sequences`` sequences."""
        _, head = step_ends(self.gk, self.model, 1, sequences)
        states = dict.fromkeys(POWER_STATES, 0.0)
        for k in head.kernels:
            states[k.power_state] += k.time_s
        return head.time_s, tuple((k, v) for k, v in states.items() if v)

    def iteration_s(self, shape: BatchShape) -> float:
        """The scheduler's cost function: the iteration's time (s)."""
        return self.cost(shape).time_s


def single_shape(prompt_tokens: int = 0, decode_seqs: int = 0, decode_context: int = 0,
                 bucket_tokens: int = 256) -> BatchShape:
    """The shape of a lone prefill of ``prompt_tokens`` (no cache hit) or of ``decode_seqs``
    decodes at context ``decode_context``: what closed-form checks compare with."""
    contexts: Sequence[tuple[int, int]] = ()
    if decode_seqs:
        contexts = ((-(-decode_context // bucket_tokens) * bucket_tokens, decode_seqs),)
    return BatchShape(decode_seqs, tuple(contexts), 1 if prompt_tokens else 0, prompt_tokens, 0)
