"""The packet engine's transfer unit for one run: the size the user gave, else the rule below.

One rule for ``bench``, ``run``, ``compare``, ``validate`` and sweep files, whatever the run is (a
collective, a copy, an attention step, a Chakra trace, several jobs at once), applied per run, not
per fabric.

1. **The fine packet** (``engine.packet.sizing.fine_packet_bytes`` over the run's routes): the
   largest power of two that models every credit loop the run crosses packet by packet at full
   rate. A channel the run never crosses cannot stall it (a GB200 rack's Grace C2C link, whose
   buffer covers its loop only at 256 B, no longer sets the unit of a collective that stays on
   NVLink), and a receiver where every route ends frees its space on arrival (an NVLS reduction
   into the switch: 16 KiB on GB200 NVL72, where a route through the switch needs 8 KiB).
2. **Trains of fine packets**, when the run is uncongested: no switch output is fed from two of
   its inputs (no arbitration among inputs), the fine packet covers every loop of the run (its
   buffers are larger than their credit loops, so no credit stall can arise in the fine run
   either), and every transfer still makes at least ``TRAIN_MIN_UNITS`` units: the unit grows to
   the largest power of two that leaves every transfer that many units (at most
   ``TRAIN_MAX_BYTES``). Such a unit is larger than the receive buffer and streams through it
   (``OutputPort.release``, coarse mode); on a loop the buffer covers this is line rate, what the
   fine packets reach, and cut-through switches forward its first bytes as they arrive, as they do
   a train's first packet. A CTA hands over the same bursts of fine packets as in the fine run
   (``network.pace_bytes``, rounded up to whole trains). What the unit changes is granularity:
   flows sharing an injector and the reverse direction's responses take turns per unit instead of
   per packet, so a transfer's finish may move by a few units, a few 1/``TRAIN_MIN_UNITS`` of its
   time. Only on switches with virtual output queues and per-output arbitration: a FIFO input's
   head-of-line blocking and a matching crossbar's cell-time matchings are per packet, and a unit
   would change them. Where a switch output does arbitrate, units change who goes first (an HGX
   H100 alltoall at 64 MiB: +29% in 32 KiB units), so those runs keep fine packets, and so does
   an observed run (a credit timeline or a packet trace records packets).

Every row says the unit it ran with (``packet_bytes``) and the fine packet (``fine_packet_bytes``);
``reports.run_notice.unit_note`` puts both in words for a table's title.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterable, Sequence

from simulator.engine.packet import PacketConfig
from simulator.engine.packet.sizing import (distinct_routes, fine_packet_bytes, is_coarse, is_fine, route_use,
                                            transit_s)
from simulator.engine.transfer import Workload
from simulator.errors import InputError
from simulator.topology.fabric import Fabric, SwitchScheduling

MIN_PACKET_BYTES = 64
"""Smallest transfer unit a user may give (``--packet-bytes``; scenario and sweep files: ``ge=64``)."""
TRAIN_MIN_UNITS = 512
"""Fewest units a transfer is cut into when units grow past the fine packet. Assumption: a unit
moves a transfer's finish by a few units of its time, so 512 keeps the error a few tenths of a
percent; measured against fine packets at 64 MiB-1 GiB: +0.0 to +0.51% (rings on GB200 NVL72 and
HGX H100 the most; NVLS and copies 0-0.23%), where 256 gave up to +1.0% (docs/model.md 7.1)."""
TRAIN_MAX_BYTES = 1 << 20
"""Largest unit (B): 1 MiB, the coarse unit the engine was first sized for."""


@dataclass(frozen=True, slots=True)
class RunUnit:
    """The unit of one run and how it was chosen."""

    bytes: int
    """The unit the packet engine moves (B)."""
    fine_bytes: int
    """The fine packet of the run's routes (B)."""

    @property
    def trains(self) -> bool:
        """The unit is a train of fine packets (larger than the fine packet)."""
        return self.bytes > self.fine_bytes


def _per_output_voq(fabric: Fabric, config: PacketConfig, forwarding: Iterable[str]) -> bool:
    """Every forwarding node of the run arbitrates per output over virtual output queues."""
    for name in forwarding:
        setup = config.switch_setup(fabric.nodes[name])
        if setup.matching or not setup.voq:
            return False
    return True


def _uncongested(fabric: Fabric, workloads: Sequence[Workload]) -> bool:
    """No switch arbitrates among inputs: no channel out of a forwarding node is fed from two
    channels into it by the run's routes."""
    feeders: dict[int, int] = {}
    """Channel out of a forwarding node -> the one channel into it that feeds it."""
    for routes in distinct_routes(fabric, workloads):
        for route in routes:
            for into, out in zip(route, route[1:]):
                if feeders.setdefault(out, into) != into:
                    return False
    return True


def run_unit(fabric: Fabric, workloads: Sequence[Workload], config: PacketConfig = PacketConfig(),
             trains: bool = True) -> RunUnit:
    """The unit of a run of ``workloads`` (rule in the module docstring); ``config`` says how its
    switches schedule and its packets are framed; ``trains=False``: the fine packet whatever the
    run (an observed run: a credit timeline or a packet trace records packets, not trains)."""
    use = route_use(fabric, workloads)
    if not use:  # nothing moves (pure delays): any unit is exact, take the fabric's
        fine = fine_packet_bytes(fabric, config.header_bytes, config.vcs)
        return RunUnit(fine, fine)
    fine = fine_packet_bytes(fabric, config.header_bytes, config.vcs, use=use)
    channels = [fabric.channels[cid] for cid in sorted(use)]
    covered = all(is_fine(ch, fine, config.header_bytes, config.vcs, fabric.reverse_latency_s(ch),
                          transit_s(fabric, ch, fine, config.header_bytes, use)) for ch in channels)
    forwarding = {ch.dst for ch in channels if use[ch.id]}
    if (not trains or not covered or config.switching != "cut_through" or not _per_output_voq(fabric, config, forwarding)
            or not _uncongested(fabric, workloads)):
        return RunUnit(fine, fine)
    smallest = min(t.bytes for w in workloads for t in w.transfers if t.bytes and t.src != t.dst)

    def streams_or_fine(size: int) -> bool:  # a size between the two would throttle itself
        return all(is_coarse(ch, size, config.header_bytes, config.vcs)
                   or is_fine(ch, size, config.header_bytes, config.vcs, fabric.reverse_latency_s(ch),
                              transit_s(fabric, ch, size, config.header_bytes, use)) for ch in channels)

    return RunUnit(train_bytes(fine, smallest, streams_or_fine), fine)


def train_bytes(fine: int, smallest: int, allowed: Callable[[int], bool]) -> int:
    """The train of ``fine``-byte packets when the smallest transfer is ``smallest`` bytes: the
    largest power-of-two multiple of ``fine`` that leaves it ``TRAIN_MIN_UNITS`` units, at most
    ``TRAIN_MAX_BYTES``, among the sizes ``allowed`` (``fine`` itself when none larger is).

    A run allows a size that streams through every buffer it crosses (coarse: line rate where the
    buffer covers its loop) or that is fine there; a unit that fits a buffer but not twice over its
    loop would wait for its own credits each time (a 256 KiB unit in a 256 KiB buffer: +2.7% on
    the chain of ``benchmarks/engine_throughput.py``)."""
    unit, size = fine, fine * 2
    while size <= TRAIN_MAX_BYTES and size * TRAIN_MIN_UNITS <= smallest:
        if allowed(size):
            unit = size
        size *= 2
    return unit


def choose(fabric: Fabric, workloads: Sequence[Workload], *, seed: int = 0, packet_bytes: int | None = None,
           switch: SwitchScheduling | None = None, observed: bool = False) -> tuple[PacketConfig, RunUnit | None]:
    """The packet engine's settings for a run of ``workloads`` (several when they run together),
    with the run's switch scheduling defaults ``switch``, and the unit chosen (None: the user
    gave ``packet_bytes``). An ``observed`` run (credit timeline, packet trace) moves fine packets."""
    config = PacketConfig(seed=seed).with_switch(switch)
    if packet_bytes is not None:
        if isinstance(packet_bytes, bool) or packet_bytes < MIN_PACKET_BYTES:
            raise InputError(f"must be at least {MIN_PACKET_BYTES} bytes (as in scenario and sweep files), got "
                             f"{packet_bytes}; omit it for the run's own unit", field="packet_bytes")
        return replace(config, packet_bytes=packet_bytes), None
    unit = run_unit(fabric, workloads, config, trains=not observed)
    fine = unit.fine_bytes if unit.trains else None
    return replace(config, packet_bytes=unit.bytes, fine_packet_bytes=fine), unit


def packet_config(fabric: Fabric, workloads: Sequence[Workload], *, seed: int = 0,
                  packet_bytes: int | None = None, switch: SwitchScheduling | None = None,
                  observed: bool = False) -> PacketConfig:
    """``choose``'s settings alone."""
    return choose(fabric, workloads, seed=seed, packet_bytes=packet_bytes, switch=switch, observed=observed)[0]
