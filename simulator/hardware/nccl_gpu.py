"""NCCL's GPU side as parts: per-channel copy/reduce rates, channel counts, launch and flag
latencies per GPU architecture, and the NCCL library constants (FIFO slots, chunk and slice steps,
channel thresholds).

Loaded from ``parts/gpu_side.yaml``; every number carries a source or an ``assumption:`` label
(a part with an unsourced number does not load). The constants depend on the GPU architecture
(``ampere``, ``hopper``, ``blackwell``), never on a topology.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    nvls_max_heads: int = Field(gt=0)
    """Most NVLS head ranks (NCCL_MAX_NVLS_ARITY): the ranks that reduce and multicast a shard."""
    nvls_warps: dict[str, int] = {}
    """How an NVLS / NVLSTree CTA splits its warps (src/device/all_reduce.h): ``total``, NVLS's
    ``reduce`` warps (``reduce_few_ranks`` at ``few_ranks`` ranks or fewer), and NVLSTree's
    ``tree_reduce`` and ``tree_bcast`` warps of a channel that has a parent between nodes."""
    ring_work: dict[str, int]
    """NCCL Simple primitive -> memory operations per chunk byte (``ring_loop`` strings them)."""
    copy_work: dict[str, int]
    """Non-ring copy op -> memory operations its CTA issues per link byte, continuously."""
    max_channels: int = Field(64, gt=0)
    """Most channels of a communicator (NCCL MAXCHANNELS)."""
    search_channels: int = Field(32, gt=0)
    """Most distinct ring/tree channels NCCL's topology search finds (MAXCHANNELS / 2); each leaves
    a node through one NIC, and NCCL then runs every one twice (up to ``max_channels``)."""
    tree_up_share: dict[str, float] = {}
    """Protocol -> share of a tree CTA's threads that reduce up the tree (the rest broadcast down):
    NCCL's tree kernel splits one CTA between the two (src/device/all_reduce.h ``runTreeSplit``)."""

    def tree_work(self, up: bool) -> int:
        """Memory operations per byte of an inner tree rank's primitive: up recvReduceSend (read the
        FIFO and the input, write the parent), down recvCopySend (read the FIFO, write the output and
        the child)."""
        return self.ring_work["recv_reduce_send" if up else "recv_copy_send"]

    def nvls_copy_warps(self, nranks: int, tree_up: bool = False) -> int:
        """Warps of one NVLS channel's CTA that copy the user buffers into and out of the NVLS
        buffer (scatter + gather; src/device/all_reduce.h, no registered buffers) on a
        communicator of ``nranks``; ``tree_up``: an NVLSTree channel whose rank sends up the tree
        between nodes, which gives warps to reducing up and broadcasting down (``nvls_warps``)."""
        w = self.nvls_warps
        if tree_up:
            reduce, bcast = w["tree_reduce"], w["tree_bcast"]
        else:
            reduce, bcast = (w["reduce_few_ranks"] if nranks <= w["few_ranks"] else w["reduce"]), 0
        rest = w["total"] - reduce - bcast
        return (rest + 1) // 2 + rest // 2

    def slot_B(self) -> int:
        """Bytes of one FIFO slot (Simple): NCCL_BUFFSIZE / NCCL_STEPS."""
        return self.buffsize_B // self.steps

    def slice_B(self, op: str) -> int:
        """Largest slice of ``op`` (bytes): slice steps x slot bytes."""
        return self.slice_steps.get(op, 1) * self.slot_B()

    def ring_loop(self, op: str, n: int) -> "RingLoop | None":
        """What one CTA does per loop of NCCL's ring ``op`` on ``n`` ranks (None: not a ring op).

        The CTA runs its primitives one after the other, one chunk each (src/device/all_reduce.h
        runRing: send, n-2 x recvReduceSend, recvReduceCopySend, n-2 x recvCopySend, recv;
        reduce_scatter.h: send, n-2 x recvReduceSend, recvReduceCopy; all_gather.h: copySend,
        n-2 x recvCopySend, recv). Every primitive but the last puts its chunk on the link to the
        next rank; the last only copies (or reduces) the FIFO into the output."""
        w, mid = self.ring_work, max(0, n - 2)
        if op == "all_reduce":
            return RingLoop(2 * (n - 1), w["send"] + mid * w["recv_reduce_send"] + w["recv_reduce_copy_send"]
                            + mid * w["recv_copy_send"], w["recv"])
        if op == "reduce_scatter":
            return RingLoop(n - 1, w["send"] + mid * w["recv_reduce_send"], w["recv_reduce_copy"])
        if op == "all_gather":
            return RingLoop(n - 1, w["copy_send"] + mid * w["recv_copy_send"], w["recv"])
        return None


@dataclass(frozen=True, slots=True)
class RingLoop:
    """One ring loop of one CTA, in chunks and memory operations per chunk byte."""

    link_chunks: int
    """Chunks the CTA puts on its link (one per link primitive)."""
    link_work: int
    """Memory operations of the link primitives together."""
    local_work: int
    """Memory operations of the last primitive, which leaves the link idle."""

    @property
    def work_per_link_byte(self) -> float:
        """The whole loop's memory operations per byte put on the link."""
        return (self.link_work + self.local_work) / self.link_chunks


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
    nvls_tree_channels: int = Field(0, ge=0)
    """NVLSTree channels: NVLS channels of a communicator that spans nodes (0: no NVLSTree)."""
    launch_s: Seconds = Field(ge=0)
    """Kernel launch: from the stream reaching the kernel to its CTAs running (s); hidden behind the
    previous kernel in back-to-back calls (nccl-tests), exposed when a call is timed alone."""
    flag_s: Seconds = Field(ge=0)
    """One slot handoff: a consumer noticing the producer's flag (poll) and syncing its CTA (s)."""
    copy_launch_s: Seconds = Field(ge=0)
    """Copy-engine (DMA) launch before the first byte moves (s)."""

    def memory_Bps(self, op: str, library: CollectiveLibrary) -> float:
        """Memory operations per second (bytes) of one CTA running ``op``: the measured one-channel
        busbw (a 2-rank ring loop of all_reduce for reduce ops, of all_gather for copy ops) times
        that loop's memory operations per link byte."""
        if op in REDUCE_OPS:
            return self.channel_reduce_Bps * library.ring_loop("all_reduce", 2).work_per_link_byte
        return self.channel_copy_Bps * library.ring_loop("all_gather", 2).work_per_link_byte

    def channel_Bps(self, op: str, library: CollectiveLibrary) -> float:
        """One CTA's average wire rate for ``op`` (bytes on its link per second, unloaded): its
        memory rate over the memory operations per link byte of its program (a ring loop on 2
        ranks, the measured setup; ``copy_work`` for the other copy ops); any other op runs at the
        measured rate of its kind."""
        loop = library.ring_loop(op, 2)
        if loop is not None:
            return self.memory_Bps(op, library) / loop.work_per_link_byte
        if op in library.copy_work:
            return self.memory_Bps(op, library) / library.copy_work[op]
        return self.channel_reduce_Bps if op in REDUCE_OPS else self.channel_copy_Bps

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


__all__ = ["Architecture", "ArchitectureSide", "CollectiveLibrary", "GpuSideTable", "REDUCE_OPS", "RingLoop",
           "load_gpu_side"]
