"""Knobs of the packet engine: transfer unit, switching mode, arbitration, VCs, credit policy.

Validated once here (an unknown arbiter name or a non-positive size fails before the run starts);
inside the engine the values are read as typed attributes, never by string key.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, Mapping

from simulator.errors import InputError
from simulator.topology.fabric import Node, SwitchScheduling
from simulator.topology.switch_designs import CROSSBAR_MODES, DESIGNS_BY_NAME, QUEUEINGS, CrossbarMode, Queueing


@dataclass(frozen=True)
class SwitchSetup:
    """One switch's scheduling after defaults and overrides are resolved (see ``switch_setup``)."""

    arbiter: str
    matching: bool
    """True: cell-time request-grant-accept matching into output queues; False: per-output."""
    iterations: int
    speedup: float
    queueing: Queueing
    """Input buffers: ``voq`` (virtual output queues) or ``fifo`` (one FIFO per VC)."""
    output_queue_packets: int
    shared_buffer: bool

    @property
    def voq(self) -> bool:
        """The inputs have virtual output queues (``queueing == "voq"``)."""
        return self.queueing == "voq"


@dataclass(frozen=True)
class PacketConfig:
    """How the packet engine cuts, moves and arbitrates traffic (sizes in bytes, times in s)."""

    packet_bytes: int = 4096
    """Payload bytes per packet: the speed/fidelity knob (256 B for link-level fidelity, 1 MiB for
    multi-GiB collectives in seconds). Assumption: 4 KiB default, a typical RDMA MTU."""
    fine_packet_bytes: int | None = None
    """Set when ``packet_bytes`` is a train of fine packets of this size, chosen where every credit
    loop of the run is covered (``runner.packet_unit``): the unit streams through receive buffers
    smaller than itself on purpose, so the engine does not warn about coarse mode. None: the unit
    is the packet."""
    header_bytes: int = 0
    """0: serialize payload at ``Channel.rate_Bps`` (protocol efficiency folded in); >0: serialize
    payload+header at ``Channel.line_rate_Bps`` and count payload+header against credits."""
    switching: Literal["cut_through", "store_and_forward"] = "cut_through"
    arbiter: str = "round_robin"
    """Switch scheduling design (``topology.switch_designs.SWITCH_DESIGNS``, built by
    ``allocators.DESIGNS``) for switches whose topology does not name one."""
    arbiters: Mapping[str, str] = field(default_factory=dict)
    """Per-switch override: switch node name -> arbiter name (wins over the topology)."""
    arbiter_weights: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Switch node name -> {upstream node name -> weight}: weights of ``weighted_rr``, priorities of
    ``fixed_priority`` (higher wins). Inputs not named weigh 1."""
    crossbar: CrossbarMode = "auto"
    """``output``: every output port arbitrates alone the moment it frees, among inputs whose
    crossbar read is free (event-driven, exact zero-load latency). ``matching``: a per-switch
    scheduler matches inputs to outputs every cell time by request -> grant -> accept, packets cross
    into output queues (``scheduler``). ``auto``: matching for allocators that exist only as
    matchers (``switch_designs.MATCHING_ONLY``), output otherwise."""
    iterations: int = 1
    """Request-grant-accept rounds per cell time (matching crossbar)."""
    queueing: Queueing = "voq"
    """Switch input buffers: ``voq``, virtual output queues; ``fifo``, one FIFO per input and VC
    (head-of-line blocking). The topology's ``queueing:`` and the ``--queueing`` flag, same name."""
    speedup: float = 1.0
    """Crossbar speedup S. Output crossbar: an input moves a packet through the crossbar in (output
    serialization / S). Matching crossbar: S matchings per cell time of the switch's fastest port."""
    output_queue_packets: int = 4
    """Matching crossbar: packets one output queue (per VC) holds after the crossbar; the scheduler
    matches an input to an output only while its queue has room (the queue is credited towards the
    crossbar). Assumption: a few packets, enough to keep the link busy at speedup 1 and to absorb
    bursts at speedup > 1; raise it to approach ideal output queueing."""
    shared_buffer: bool = False
    """Matching crossbar: each output queue keeps one packet slot of its own and all queues of the
    switch share a pool of (output_queue_packets - 1) x outputs more (a shared-memory switch),
    instead of owning output_queue_packets each. The own slot keeps VCs deadlock-free."""
    vcs: int = 1
    """Virtual channels per link; a packet uses VC min(hop, vcs-1) (distance classes: with vcs >= the
    longest route, credit dependencies cannot form a cycle)."""
    credit_policy: Literal["static", "shared"] = "static"
    """Receive buffer across VCs: static equal partition, or a shared pool above a per-VC minimum."""
    vc_min_bytes: int = 0
    """Shared policy: bytes reserved per VC (0: one packet's worth)."""
    seed: int = 0
    watchdog_interval_s: float | None = None
    """No-progress time that declares a deadlock while packets are in flight. None: automatic."""
    take_ahead: bool = True
    """Send a packet over the rest of its route without an event per hop where one stream owns
    every remaining channel (``ahead``): the same simulation, several times faster on uncongested
    paths. False: every hop is an event (to check that, or to count events hop by hop)."""
    packet_stats: bool = True
    """Keep every delivered packet's latency and queueing delay (``RunResult.packet_latency_s``,
    ``queue_delay_s``): 24 B per packet. False for runs of tens of millions of packets that only
    need timings and counters (the arrays come back empty)."""
    packet_stats_limit: int = 1 << 20
    """Most packets whose figures are kept at once: beyond it the ledger keeps a systematic sample
    (every 2nd, 4th, ... packet, ``RunResult.packet_sample_every``), so memory stays bounded (24 MB
    at the default) while percentiles stay within about one sample rank."""

    def __post_init__(self) -> None:
        def bad(field_name: str, msg: str) -> InputError:
            return InputError(msg, field=f"packet.{field_name}")

        if self.packet_bytes <= 0:
            raise bad("packet_bytes", f"must be > 0, got {self.packet_bytes}")
        if self.header_bytes < 0:
            raise bad("header_bytes", f"must be >= 0, got {self.header_bytes}")
        if self.switching not in ("cut_through", "store_and_forward"):
            raise bad("switching", f"unknown {self.switching!r}; choose cut_through or store_and_forward")
        for where, name in [("arbiter", self.arbiter)] + [(f"arbiters.{k}", v) for k, v in self.arbiters.items()]:
            if name not in DESIGNS_BY_NAME:
                raise bad(where, f"unknown arbiter {name!r}; known: {', '.join(sorted(DESIGNS_BY_NAME))}")
        if self.speedup <= 0:
            raise bad("speedup", f"must be > 0, got {self.speedup}")
        if self.vcs < 1:
            raise bad("vcs", f"must be >= 1, got {self.vcs}")
        if self.credit_policy not in ("static", "shared"):
            raise bad("credit_policy", f"unknown {self.credit_policy!r}; choose static or shared")
        if self.crossbar not in CROSSBAR_MODES:
            raise bad("crossbar", f"unknown {self.crossbar!r}; choose {', '.join(CROSSBAR_MODES)}")
        if self.queueing not in QUEUEINGS:
            raise bad("queueing", f"unknown {self.queueing!r}; choose {' or '.join(QUEUEINGS)}")
        if self.iterations < 1:
            raise bad("iterations", f"must be >= 1, got {self.iterations}")
        if self.output_queue_packets < 1:
            raise bad("output_queue_packets", f"must be >= 1, got {self.output_queue_packets}")
        if self.packet_stats_limit < 2:
            raise bad("packet_stats_limit", f"must be >= 2, got {self.packet_stats_limit}")
        if self.watchdog_interval_s is not None and self.watchdog_interval_s <= 0:
            raise bad("watchdog_interval_s", f"must be > 0, got {self.watchdog_interval_s}")

    def with_switch(self, defaults: SwitchScheduling | None) -> "PacketConfig":
        """This config with the non-None fields of ``defaults`` as the run's switch defaults
        (``bench`` flags; a topology's own ``scheduling`` still wins for its switches)."""
        if defaults is None:
            return self
        changes = {k: getattr(defaults, k) for k in ("arbiter", "crossbar", "iterations", "speedup", "queueing",
                                                    "output_queue_packets", "shared_buffer")
                   if getattr(defaults, k) is not None}
        return replace(self, **changes)

    def switch_setup(self, node: Node) -> "SwitchSetup":
        """The resolved scheduling of ``node``: ``arbiters`` override, then the topology's
        ``scheduling``, then this config's defaults. Raises ``InputError`` for an allocator that
        cannot run per output when the crossbar is forced to ``output``."""
        topo = node.scheduling or SwitchScheduling()
        arbiter = self.arbiters.get(node.name) or topo.arbiter or self.arbiter
        crossbar = topo.crossbar or self.crossbar
        matching_only = DESIGNS_BY_NAME[arbiter].matching_only
        if crossbar == "auto":
            crossbar = "matching" if matching_only else "output"
        elif crossbar == "output" and matching_only:
            raise InputError(f"switch {node.name}: {arbiter} is a matching allocator; use crossbar "
                             f"'matching' (or 'auto'), or a per-output arbiter", field="packet.crossbar")
        return SwitchSetup(arbiter=arbiter, matching=crossbar == "matching",
                           iterations=topo.iterations or self.iterations,
                           speedup=topo.speedup or self.speedup, queueing=topo.queueing or self.queueing,
                           output_queue_packets=topo.output_queue_packets or self.output_queue_packets,
                           shared_buffer=self.shared_buffer if topo.shared_buffer is None else topo.shared_buffer)

    @property
    def wire_bytes(self) -> int:
        """Bytes a full packet occupies on the wire and in buffers."""
        return self.packet_bytes + self.header_bytes
