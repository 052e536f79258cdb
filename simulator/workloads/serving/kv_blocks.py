"""A paged KV-cache block allocator: PagedAttention's idea (Kwon et al., SOSP 2023) as vLLM keeps it
(``vllm/v1/core/block_pool.py``: a free queue of fixed-size blocks; ``kv_cache_manager.py:
KVCacheManager.allocate_slots`` / ``free``).

The cache is ``capacity_blocks`` blocks of ``block_tokens`` tokens each. A request that has ``n``
tokens in the cache holds ceil(n / block_tokens) blocks: the scheduler asks for them when a prefill
chunk is scheduled and, as decode grows the sequence, one more each time it crosses a block
boundary; it gives all of them back when the request finishes or is preempted. An allocation that
does not fit changes nothing and says so (vLLM's ``allocate_slots`` returning None), so the
scheduler can preempt and retry.

Block ids are real (a free list and each request's list), so :meth:`KVBlockAllocator.check` can
prove the invariants: the blocks in use never exceed the capacity, every block is either free or
owned by exactly one request, and the free and owned blocks together are the whole cache.
"""

from __future__ import annotations

from simulator.errors import InputError, SimulationError

DEFAULT_BLOCK_TOKENS = 16
"""vLLM's default ``--block-size`` on CUDA (``vllm/config/cache.py``: ``CacheConfig.block_size``
defaults to 16 tokens per block)."""


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, dtype_bytes: float) -> float:
    """Bytes one token's keys and values take in one GPU's cache: 2 (K and V) x layers x kv_heads x
    head_dim x dtype_bytes, the per-layer page size of vLLM's ``AttentionSpec.page_size_bytes``
    (2 x block_size x num_kv_heads x head_size x dtype size) per token. ``kv_heads`` is the heads
    this GPU holds (the model's KV heads over the tensor-parallel degree, at least 1)."""
    for name, value in (("layers", layers), ("kv_heads", kv_heads), ("head_dim", head_dim)):
        if value < 1:
            raise InputError(f"{name} {value} must be >= 1", field=name)
    if not dtype_bytes > 0:
        raise InputError(f"dtype_bytes {dtype_bytes} must be > 0", field="dtype_bytes")
    return 2 * layers * kv_heads * head_dim * dtype_bytes


def capacity_blocks(budget_bytes: float, bytes_per_token: float, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> int:
    """How many whole blocks a byte budget holds (the HBM left after weights and activations, as
    vLLM's ``determine_available_memory`` measures it): floor(budget / (bytes_per_token x
    block_tokens))."""
    if not budget_bytes >= 0:
        raise InputError(f"budget_bytes {budget_bytes} must be >= 0", field="budget_bytes")
    if not bytes_per_token > 0:
        raise InputError(f"bytes_per_token {bytes_per_token} must be > 0", field="bytes_per_token")
    return int(budget_bytes // (bytes_per_token * block_tokens))


class KVBlockAllocator:
    """Fixed-size KV blocks handed to requests by id. Keys are any hashable request key."""

    __slots__ = ("capacity_blocks", "block_tokens", "_free", "_owned")

    def __init__(self, capacity_blocks: int, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> None:
        if capacity_blocks < 1:
            raise InputError(f"the KV cache holds {capacity_blocks} blocks; it needs at least 1 "
                             "(a bigger byte budget, or smaller blocks)", field="capacity_blocks")
        if block_tokens < 1:
            raise InputError(f"block_tokens {block_tokens} must be >= 1", field="block_tokens")
        self.capacity_blocks = capacity_blocks
        """Blocks in the cache."""
        self.block_tokens = block_tokens
        """Tokens per block."""
        self._free: list[int] = list(range(capacity_blocks - 1, -1, -1))
        """Free block ids; allocation takes from the end (lowest ids first)."""
        self._owned: dict[object, list[int]] = {}
        """Request key -> the ids of the blocks it holds, in allocation order."""

    @classmethod
    def from_budget(cls, budget_bytes: float, bytes_per_token: float,
                    block_tokens: int = DEFAULT_BLOCK_TOKENS) -> "KVBlockAllocator":
        """An allocator with as many blocks as ``budget_bytes`` holds (:func:`capacity_blocks`)."""
        return cls(capacity_blocks(budget_bytes, bytes_per_token, block_tokens), block_tokens)

    def blocks_for(self, tokens: int) -> int:
        """Blocks that ``tokens`` tokens occupy: ceil(tokens / block_tokens)."""
        return -(-tokens // self.block_tokens)

    @property
    def free_blocks(self) -> int:
        """Blocks no request holds."""
        return len(self._free)

    @property
    def used_blocks(self) -> int:
        """Blocks held by requests."""
        return self.capacity_blocks - len(self._free)

    def held(self, key: object) -> int:
        """Blocks ``key`` holds (0 for a request that holds none)."""
        blocks = self._owned.get(key)
        return len(blocks) if blocks else 0

    def grow(self, key: object, tokens: int) -> bool:
        """Make ``key`` hold the blocks of ``tokens`` tokens (never fewer than it holds). True when
        done; False, with nothing changed, when the free blocks are too few."""
        blocks = self._owned.get(key)
        have = len(blocks) if blocks else 0
        need = -(-tokens // self.block_tokens) - have
        if need <= 0:
            return True
        free = self._free
        if need > len(free):
            return False
        taken = free[-need:]
        del free[-need:]
        if blocks is None:
            self._owned[key] = taken
        else:
            blocks.extend(taken)
        return True

    def free(self, key: object) -> int:
        """Give back every block ``key`` holds; how many that was."""
        blocks = self._owned.pop(key, None)
        if not blocks:
            return 0
        self._free.extend(blocks)
        return len(blocks)

    def check(self) -> None:
        """Raise :class:`~simulator.errors.SimulationError` unless the blocks in use are at most the
        capacity, every block id is in range and is free or held by exactly one request, and free
        plus held is the whole cache."""
        seen = [None] * self.capacity_blocks
        for block in self._free:
            self._claim(seen, block, "the free list")
        for key, blocks in self._owned.items():
            for block in blocks:
                self._claim(seen, block, f"request {key!r}")
        used = sum(len(b) for b in self._owned.values())
        if used > self.capacity_blocks:
            raise SimulationError(f"KV blocks in use {used} exceed the capacity {self.capacity_blocks}")
        if used + len(self._free) != self.capacity_blocks or any(s is None for s in seen):
            raise SimulationError(f"KV blocks lost: {used} held + {len(self._free)} free != "
                                  f"{self.capacity_blocks}")

    def _claim(self, seen: list, block: int, owner: str) -> None:
        if not 0 <= block < self.capacity_blocks:
            raise SimulationError(f"KV block id {block} held by {owner} is outside 0..{self.capacity_blocks - 1}")
        if seen[block] is not None:
            raise SimulationError(f"KV block {block} is held by both {seen[block]} and {owner}")
        seen[block] = owner


__all__ = ["DEFAULT_BLOCK_TOKENS", "KVBlockAllocator", "capacity_blocks", "kv_bytes_per_token"]
