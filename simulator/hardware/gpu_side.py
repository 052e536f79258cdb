"""The GPU side of a collective: per-channel copy/reduce rates, channel counts, launch and flag
latencies per GPU architecture, and the NCCL library constants (FIFO slots, chunk and slice steps,
channel thresholds).

Loaded from ``parts/gpu_side.yaml``; every number carries a source or an ``assumption:`` label
(a part with an unsourced number does not load). The constants depend on the GPU architecture
(``ampere``, ``hopper``, ``blackwell``), never on a topology.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from simulator.hardware.part import BytesPerSecond, Part, Seconds
from simulator.hardware.yamlfile import YamlFile
from simulator.errors import InputError

Architecture = Literal["ampere", "hopper", "blackwell"]
PARTS_FILE = Path(__file__).with_name("parts") / "gpu_side.yaml"


class CollectiveLibrary(Part):
    """NCCL's library constants: the same on every GPU."""

    buffsize_B: int = Field(gt=0)
    """FIFO bytes per channel and peer (NCCL_BUFFSIZE, Simple protocol)."""
    steps: int = Field(gt=0)
    """Slots per FIFO (NCCL_STEPS): how far a sender may run ahead of its receiver."""
    chunk_steps: dict[str, int]
    """Op -> slots one chunk takes (a ring step moves one chunk per channel per loop)."""
    slice_steps: dict[str, int]
    """Op -> slots one slice takes; the receiver is signalled (flag) once per slice."""
    max_threads: dict[str, int]
    """Protocol -> threads per CTA."""
    thread_threshold_B: dict[str, int]
    """Protocol -> bytes per thread below which NCCL drops a channel (Ring LL: x nranks)."""
    nvls_chunk_B: int = Field(gt=0)
    """NVLS chunk (NCCL_NVLS_CHUNKSIZE)."""
    copy_work: dict[str, int]
    """Copy op -> memory operations its CTA issues per link byte (all_gather is the measured one)."""

    def slot_B(self) -> int:
        """Bytes of one FIFO slot (Simple): NCCL_BUFFSIZE / NCCL_STEPS."""
        return self.buffsize_B // self.steps

    def slice_B(self, op: str) -> int:
        """Largest slice of ``op`` (bytes): slice steps x slot bytes."""
        return self.slice_steps.get(op, 1) * self.slot_B()


class ArchitectureSide(Part):
    """What one GPU architecture's CTAs and launch path can do."""

    channel_reduce_Bps: BytesPerSecond = Field(gt=0)
    """One CTA reducing and forwarding (all_reduce, reduce_scatter): wire bytes/s it drives per direction."""
    channel_copy_Bps: BytesPerSecond = Field(gt=0)
    """One CTA copying and forwarding (all_gather, broadcast, alltoall, send/recv)."""
    coll_channels: int = Field(gt=0)
    """Default collective channels (CTAs) for large messages."""
    p2p_channels: int = Field(gt=0)
    """Default channels for point-to-point (alltoall, send/recv)."""
    nvls_channels: int = Field(ge=0)
    """NVLS channels (0: no NVLS on this architecture)."""
    launch_s: Seconds = Field(ge=0)
    """Kernel launch: from the stream reaching the kernel to its CTAs running (s); hidden behind the
    previous kernel in back-to-back calls (nccl-tests), exposed when a call is timed alone."""
    flag_s: Seconds = Field(ge=0)
    """One slot handoff: a consumer noticing the producer's flag (poll) and syncing its CTA (s)."""
    copy_launch_s: Seconds = Field(ge=0)
    """Copy-engine (DMA) launch before the first byte moves (s)."""

    def channel_Bps(self, op: str, copy_work: dict[str, int] | None = None) -> float:
        """Per-CTA wire rate for ``op``: reduce ops reduce; copy ops copy at the measured all_gather
        rate scaled by how much less memory work per link byte their primitives do
        (``CollectiveLibrary.copy_work``)."""
        if op in REDUCE_OPS:
            return self.channel_reduce_Bps
        work = copy_work or {}
        return self.channel_copy_Bps * work.get("all_gather", 1) / work.get(op, work.get("all_gather", 1))


REDUCE_OPS = frozenset({"all_reduce", "reduce_scatter", "reduce"})
"""Ops whose CTAs reduce (load two operands, add, store) rather than copy."""


class GpuSideTable(Part):
    library: CollectiveLibrary
    architectures: dict[str, ArchitectureSide]

    def architecture(self, name: str) -> ArchitectureSide:
        try:
            return self.architectures[name]
        except KeyError:
            raise InputError(f"no GPU-side constants for architecture {name!r}; known: "
                             f"{', '.join(sorted(self.architectures))}", file=str(PARTS_FILE)) from None


@lru_cache(maxsize=None)
def load_gpu_side(path: str | None = None) -> GpuSideTable:
    """The GPU-side table from ``path`` (default: the built-in parts file). Cached; immutable."""
    file = Path(path) if path else PARTS_FILE
    doc = YamlFile(file)
    try:
        return GpuSideTable.model_validate(doc.data)
    except ValidationError as err:
        first = err.errors()[0]
        raise InputError(first["msg"], file=str(file), line=doc.line_of(first["loc"]),
                         field=".".join(str(p) for p in first["loc"])) from None


__all__ = ["Architecture", "ArchitectureSide", "CollectiveLibrary", "GpuSideTable", "REDUCE_OPS",
           "load_gpu_side"]
