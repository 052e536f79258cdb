"""The GPU side of a collective: channels as CTAs, protocol slots as credits, launch and step latency.

NCCL runs a collective as one CTA per channel. Each CTA copies (all_gather, broadcast, p2p) or
reduces (all_reduce, reduce_scatter) at a finite memory rate, so a collective moves at most
``channels x per-CTA rate`` whatever the links offer; every algorithm's per-channel transfers carry
that rate as ``Transfer.rate_Bps`` and the engines honour it. A ring CTA runs NCCL's primitives one
after the other; the last of each loop (the recv copy or reduce into the output) puts nothing on the
link, so its time is added to the channel's transfers and the links idle meanwhile
(``CollectiveLibrary.ring_loop``).

Between two ranks a channel's data goes through a FIFO of ``NCCL_BUFFSIZE`` bytes split into
``NCCL_STEPS`` slots: the sender may fill free slots only (it waits on the receiver's *head*
pointer), the receiver consumes a slot once the sender's *tail* flag says it is full, then frees it.
This is a credit loop one level above the link's: a slot is a credit of ``NCCL_BUFFSIZE /
NCCL_STEPS`` bytes, returned after a round trip of two flag handoffs, two route latencies and the
receiver's processing of the slot. A channel can move at most ``buffer / round trip`` (bytes in
flight over the loop time, as for link credits), which binds only where the loop is long (networks)
or the buffer small (LL).

Latency: kernel launch (``launch_s``) plus NCCL's in-kernel base latency once per call; per pipeline
step NCCL's hardware latency of the protocol plus one flag handoff (``flag_s``) plus the route.

The CTA (channel) count per call follows NCCL's rule (``src/enqueue.cc``), read off each
algorithm's ``CtaRule``: start from the default (24 on Hopper, 16 NVLS channels, 32 for p2p); ring
and tree drop CTAs while the message is below ``CTAs x threads x threshold`` bytes, so small
messages use few CTAs; NVLS keeps all its CTAs at every size.

Fabrics built by hand (no GPU architecture on their nodes) have no GPU side: no rate limit, no
launch or flag latency, as the closed-form tests expect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from simulator.hardware.nccl_gpu import ArchitectureSide, CollectiveLibrary, load_gpu_side
from simulator.topology.fabric import Fabric
from simulator.workloads.collectives.ops import P2P_OPS, WHOLE_ARRAY_OPS


@dataclass(frozen=True, slots=True)
class CtaRule:
    """How many CTAs (NCCL channels, one CTA each) an algorithm runs a call on: the architecture
    default it starts from and how it scales with the message (NCCL ``src/enqueue.cc``). An
    algorithm's registry record carries it (``registry.AlgorithmRecord.ctas``)."""

    pool: Literal["coll_channels", "p2p_channels", "nvls_channels", "nvls_tree_channels"] = "coll_channels"
    """The architecture's default for large messages (an ``ArchitectureSide`` field):
    ``coll_channels`` its collective channels (``p2p_channels`` for the point-to-point ops,
    ``ops.P2P_OPS``), ``p2p_channels`` its point-to-point channels for every op, ``nvls_channels``
    its NVLS channels, ``nvls_tree_channels`` its NVLS channels across nodes (either as
    ``coll_channels`` on an architecture without NVLS)."""
    by_size: bool = True
    """Drop CTAs while the call's bytes are below CTAs x threads x threshold (``ctas_for_size``);
    False: every CTA at every size (NVLS)."""
    ll_per_rank: bool = False
    """The LL protocol's threshold counts per rank (x ranks: NCCL's Ring LL)."""


@dataclass(frozen=True, slots=True)
class SlotTimeline:
    """One channel's FIFO towards one peer over time: slots filled and not yet freed."""

    times_s: np.ndarray
    in_use: np.ndarray
    """Slots the sender has filled and not yet had back (0..``steps``) from each time on."""
    steps: int
    slot_bytes: int


@dataclass(frozen=True, slots=True)
class GpuSide:
    """The GPU-side constants of the GPUs of one collective (one architecture)."""

    arch: ArchitectureSide | None
    """None: GPUs without an architecture (hand-made fabrics): no GPU-side limits."""
    library: CollectiveLibrary
    name: str = ""
    """The architecture's name ("" without one): what caches key on."""

    @classmethod
    def of(cls, fabric: Fabric, gpus: tuple[str, ...]) -> "GpuSide":
        """The GPU side of ``gpus``; with mixed architectures the slowest CTA sets the pace."""
        table = load_gpu_side()
        archs = {fabric.nodes[g].architecture for g in gpus}
        if "" in archs or not archs:
            return cls(None, table.library)
        name = min(sorted(archs), key=lambda a: table.architecture(a).channel_copy_Bps)
        return cls(table.architecture(name), table.library, name)

    # -- CTAs (NCCL channels) -------------------------------------------------------------------
    def default_ctas(self, op: str, rule: CtaRule) -> int | None:
        """NCCL's channel (CTA) count for large messages of ``op`` under an algorithm's ``rule``
        (None: no GPU side)."""
        if self.arch is None:
            return None
        if rule.pool == "nvls_channels" and self.arch.nvls_channels:
            return self.arch.nvls_channels
        if rule.pool == "nvls_tree_channels" and self.arch.nvls_tree_channels:
            return self.arch.nvls_tree_channels
        if rule.pool == "p2p_channels" or op in P2P_OPS:
            return self.arch.p2p_channels
        return self.arch.coll_channels

    def ctas_for_size(self, ctas: int, op: str, rule: CtaRule, protocol: str, nbytes: int, n: int) -> int:
        """CTAs NCCL keeps of ``ctas`` for a call of ``nbytes`` (nccl-tests size S), following
        ``src/enqueue.cc`` (the channel tuning after the algorithm choice): an algorithm whose rule
        does not scale by size (NVLS) keeps every CTA at every size ("NVLS should not need more than
        16 channels to get peak BW": ``nc = comm->nvlsChannels``, no threshold); the others drop one
        CTA while the call's bytes are below CTAs x threads x threshold (``CtaRule.ll_per_rank``,
        Ring LL: threshold x ranks). A call's bytes are NCCL's ``nBytes``: the whole array S for
        all_gather and reduce_scatter, whose count is per rank (``src/include/info.h``,
        ``ncclInfoSetDerived``: ``nBytes *= nRanks``), as for all_reduce and broadcast; the p2p ops
        (alltoall, gather, scatter) count one rank's share."""
        lib = self.library
        threads = lib.max_threads.get(protocol)
        threshold = lib.thread_threshold_B.get(protocol)
        if self.arch is None or threads is None or threshold is None or not rule.by_size:
            return ctas
        if rule.ll_per_rank and protocol == "LL":
            threshold *= n
        per_call = nbytes / n if op in WHOLE_ARRAY_OPS and op in P2P_OPS else nbytes
        nc = ctas
        while nc > 1 and per_call < nc * threads * threshold:
            nc -= 1
        return nc

    # -- rates -------------------------------------------------------------------------------
    def channel_Bps(self, op: str) -> float:
        """Wire bytes/s one CTA drives for ``op`` on average, unloaded (0: no limit)."""
        return 0.0 if self.arch is None else self.arch.channel_Bps(op, self.library)

    def ring_link_Bps(self, op: str, n: int) -> float:
        """Wire bytes/s one CTA drives while it runs the link primitives of ring ``op`` on ``n``
        ranks: its memory rate over their memory operations per chunk byte (0: no limit)."""
        loop = self.library.ring_loop(op, n)
        if self.arch is None or loop is None:
            return self.channel_Bps(op)
        return self.arch.memory_Bps(op, self.library) * loop.link_chunks / loop.link_work

    def ring_local_s_per_B(self, op: str, n: int) -> float:
        """Seconds per chunk byte of the primitive that ends each loop of ring ``op`` on ``n``
        ranks and puts nothing on the link (the final recv copy or reduce): the link primitives
        of the next loop wait for it, since a CTA runs its primitives one after the other."""
        loop = self.library.ring_loop(op, n)
        if self.arch is None or loop is None:
            return 0.0
        return loop.local_work / self.arch.memory_Bps(op, self.library)

    def tree_Bps(self, protocol: str, up: bool) -> float:
        """Wire bytes/s one tree CTA drives up (reduce) or down (broadcast) the tree: its memory rate
        (all_reduce's) times the threads NCCL gives that half (``tree_up_share``, ``runTreeSplit``)
        over the memory operations of an inner rank's primitive (``CollectiveLibrary.tree_work``)
        (0: no limit, or a protocol without a split)."""
        share = self.library.tree_up_share.get(protocol)
        if self.arch is None or share is None:
            return 0.0
        return (self.arch.memory_Bps("all_reduce", self.library) * (share if up else 1.0 - share)
                / self.library.tree_work(up))

    def slot_loop_Bps(self, op: str, hop_s: float, route_s: float) -> float:
        """Most wire bytes/s one channel's FIFO credit loop lets through between two ranks:
        the whole buffer in flight over one loop (0: no limit). The loop: data and tail flag to the
        receiver (route + handoff), the receiver consuming a slot at the CTA rate, head flag back
        (route + handoff)."""
        rate = self.channel_Bps(op)
        if not rate:
            return 0.0
        loop_s = 2.0 * (route_s + hop_s) + self.library.slot_B() / rate
        return self.library.buffsize_B / loop_s

    def rate_Bps(self, op: str, hop_s: float, route_s: float, ring_n: int = 0) -> float:
        """The rate limit of one channel's transfer: min(CTA rate, slot loop) (0: no limit). With
        ``ring_n``, the CTA rate is that of the link primitives of a ring on ``ring_n`` ranks
        (its local primitive is charged as time, ``ring_local_s_per_B``)."""
        cta = self.ring_link_Bps(op, ring_n) if ring_n else self.channel_Bps(op)
        if not cta:
            return 0.0
        return min(cta, self.slot_loop_Bps(op, hop_s, route_s))

    def slot_timeline(self, nbytes: float, send_Bps: float, handoff_s: float, route_s: float) -> SlotTimeline:
        """The FIFO credit loop of one channel streaming ``nbytes`` to one peer, slot by slot.

        Slot use i (slot i mod steps) may start filling once the previous fill ended and use
        i - steps has been freed (the head pointer, seen by the sender one route + handoff after the
        receiver freed it); the receiver consumes it after the tail flag arrives (route + handoff)
        and its previous slot is done, at the CTA rate. ``send_Bps``: the rate the sender fills at
        (its share of the links, at most the CTA rate)."""
        lib = self.library
        slot = lib.slot_B()
        consume_Bps = self.channel_Bps("all_reduce") or send_Bps
        n = max(1, int(-(-nbytes // slot)))
        fill_end = np.zeros(n)
        freed_seen = np.zeros(n)
        events: list[tuple[float, int]] = []
        consume_end = 0.0
        t = 0.0
        for i in range(n):
            size = min(slot, nbytes - i * slot)
            start = max(t, freed_seen[i - lib.steps] if i >= lib.steps else 0.0)
            t = fill_end[i] = start + size / send_Bps
            consume_end = max(fill_end[i] + route_s + handoff_s, consume_end) + size / consume_Bps
            freed_seen[i] = consume_end + route_s + handoff_s
            events += [(start, 1), (freed_seen[i], -1)]
        events.sort()
        times = np.array([0.0] + [e[0] for e in events])
        in_use = np.concatenate(([0], np.cumsum([e[1] for e in events])))
        return SlotTimeline(times, in_use, lib.steps, slot)

    # -- latency -----------------------------------------------------------------------------
    @property
    def launch_s(self) -> float:
        """Kernel launch before NCCL's in-kernel base latency (s)."""
        return 0.0 if self.arch is None else self.arch.launch_s

    @property
    def flag_s(self) -> float:
        """One slot handoff per pipeline step (s)."""
        return 0.0 if self.arch is None else self.arch.flag_s

    @property
    def copy_launch_s(self) -> float:
        """Copy-engine launch (s)."""
        return 0.0 if self.arch is None else self.arch.copy_launch_s
