"""How many KV-cache blocks one instance holds: HBM minus weights and activations, as vLLM sizes it.

vLLM (``vllm/v1/worker/gpu_worker.py``, ``determine_available_memory``; ``gpu_memory_utilization``,
default 0.9) profiles one forward pass of ``max_num_batched_tokens`` dummy tokens, takes the peak
memory it saw (weights + activations) from ``gpu_memory_utilization x HBM``, and gives the rest to
the KV cache in blocks of ``block_size`` tokens (16), every layer's K and V of this GPU's KV heads.
Here the weights are ``attention.memory``'s (each GPU's share of every matrix) and the activations
its assumption (``memory.ACTIVATIONS``) at ``max_num_batched_tokens`` tokens in flight; CUDA graphs'
and NCCL's buffers are left out (assumption: under 2 GB per GPU, vLLM's log of graph capture
memory on Hopper, against 80-186 GB of HBM).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from simulator.errors import InputError
from simulator.workloads.attention.memory import footprint
from simulator.workloads.attention.model import ModelShape

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
"""vLLM's default ``gpu_memory_utilization`` (``vllm/config``, CacheConfig)."""
DEFAULT_BLOCK_TOKENS = 16
"""vLLM's default ``block_size`` on CUDA (CacheConfig)."""


@dataclass(frozen=True, slots=True)
class KvCapacity:
    """The KV cache of one instance, per GPU."""

    blocks: int
    block_tokens: int
    hbm_B: float
    usable_B: float
    """``gpu_memory_utilization`` x HBM."""
    weights_B: float
    activations_B: float
    block_B: int
    """One block: ``block_tokens`` x layers x this GPU's K and V."""

    @property
    def tokens(self) -> int:
        return self.blocks * self.block_tokens

    @property
    def kv_B(self) -> float:
        return float(self.blocks * self.block_B)

    def as_dict(self) -> dict:
        return {"blocks": self.blocks, "block_tokens": self.block_tokens, "tokens": self.tokens,
                "hbm_GB": self.hbm_B / 1e9, "usable_GB": self.usable_B / 1e9, "weights_GB": self.weights_B / 1e9,
                "activations_GB": self.activations_B / 1e9, "kv_cache_GB": self.kv_B / 1e9}


def kv_capacity(m: ModelShape, hbm_bytes: float, max_num_batched_tokens: int,
                gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
                block_tokens: int = DEFAULT_BLOCK_TOKENS, where: str = "") -> KvCapacity:
    """The KV blocks one GPU of an instance serving ``m`` (its tp and ep) holds; an
    :class:`InputError` naming what does not fit when nothing is left for the cache."""
    profile = footprint(dataclasses.replace(m, batch=1, context=max_num_batched_tokens), "prefill")
    usable = gpu_memory_utilization * hbm_bytes
    block = block_tokens * m.layers * m.kv_bytes_per_token_layer()
    free = usable - profile["weights_B"] - profile["activations_B"]
    blocks = int(free // block) if free > 0 else 0
    if blocks < 1:
        raise InputError(
            f"{where + ': ' if where else ''}weights {profile['weights_B'] / 1e9:.1f} GB + activations "
            f"{profile['activations_B'] / 1e9:.1f} GB per GPU leave no room for a KV cache in "
            f"{gpu_memory_utilization:g} x {hbm_bytes / 1e9:.1f} GB of HBM; raise tp (or ep), lower "
            "max_num_batched_tokens or use fp8")
    return KvCapacity(blocks, block_tokens, float(hbm_bytes), usable, profile["weights_B"],
                      profile["activations_B"], block)
