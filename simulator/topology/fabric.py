"""The built topology: the one contract between the topology layer and the engines and workloads.

A :class:`Fabric` is typed records plus their networkx ``MultiDiGraph``. Nodes are devices (GPUs,
switch chips, NICs, PCIe switches, hosts); every physical link is two :class:`Channel` records, one
per direction, each an edge ``(src, dst, key=channel.id)`` with attribute ``ch``. Capacities are
always per direction; a bidirectional figure is the sum of a link's two channels.

Engines read only these records (never the YAML model); the topology builder is the only producer.
Tests may build small fabrics directly with :meth:`Fabric.from_parts`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Iterable, Literal, Mapping

import numpy as np

from simulator.topology.switch_designs import DESIGN_NAMES, CrossbarMode, DesignName, Queueing

if TYPE_CHECKING:  # networkx is imported when the graph is first used
    import networkx as nx

FabricKind = Literal["nvlink", "pcie", "network", "c2c"]
"""Which interconnect a channel belongs to: NVLink (incl. NVSwitch ports), PCIe, the scale-out
network, or NVLink-C2C (Grace CPU to GPU inside a superchip)."""

NodeKind = Literal["gpu", "switch", "nic", "pcie_switch", "host"]
"""``switch`` covers NVSwitch chips and InfiniBand/Ethernet switches; ``host`` is a CPU/root complex."""


AllocatorName = DesignName
"""Switch scheduling designs a topology may name: ``switch_designs.SWITCH_DESIGNS``, to which the
packet engine attaches its classes (``allocators.DESIGNS``; it fails on import if they disagree)."""
ALLOCATOR_NAMES: tuple[str, ...] = DESIGN_NAMES


DEVICE_POWER_KEY = {"switch": "switch_chip", "nic": "nic", "pcie_switch": "pcie_switch",
                    "host": "host_serdes", "gpu": "gpu_serdes"}
"""Node kind -> static-power component kind of the device's interconnect logic."""


@dataclass(frozen=True, slots=True)
class SwitchScheduling:
    """How one switch moves packets from inputs to outputs; ``None`` fields take the run's default
    (``PacketConfig``). Written in a topology file under a switch device's ``scheduling:``."""

    arbiter: AllocatorName | None = None
    crossbar: CrossbarMode | None = None
    iterations: int | None = None
    """Request-grant-accept rounds per cell time (matching crossbar)."""
    speedup: float | None = None
    """Crossbar speedup S: the matching runs S times per cell time of the fastest port."""
    queueing: Queueing | None = None
    """Input buffers: virtual output queues, or one FIFO per VC (head-of-line blocking)."""
    output_queue_packets: int | None = None
    """Matching crossbar: packets each output queue (per VC) holds after the crossbar."""
    shared_buffer: bool | None = None
    """Matching crossbar: output queues share one pool (a shared-memory switch)."""


@dataclass(frozen=True, slots=True)
class Node:
    """One device in the graph."""

    name: str
    kind: NodeKind
    part: str
    """Catalog name of the part (e.g. ``gb200``, ``nvswitch4``, ``cx7``)."""
    group: str = ""
    """Enclosure it sits in (server, tray, rack unit): used for reports and hierarchical collectives."""
    rank: int = -1
    """For GPUs: 0..N-1 in the order of ``Fabric.gpus``; -1 for other nodes."""
    latency_s: float = 0.0
    """Port-to-port forwarding latency of a switch (s); 0 for endpoints."""
    reduction: bool = False
    """True for switches that can reduce in the switch (NVLS/SHARP multimem)."""
    static_power_W: float = 0.0
    """Power this device's interconnect logic draws whether or not traffic flows (switch chips, NIC)."""
    architecture: str = ""
    """For GPUs: ``ampere``, ``hopper`` or ``blackwell`` (selects the GPU-side collective constants);
    "" for other nodes and for hand-made GPUs, which then have no GPU-side limits."""
    scheduling: SwitchScheduling | None = None
    """Switches: the topology's choice of crossbar scheduling (None: the run's defaults)."""


@dataclass(frozen=True, slots=True)
class CreditSpec:
    """Link-level flow control of one channel: the receiver's buffer and how credits come back."""

    buffer_bytes: int
    """Receive buffer the sender may fill before it must wait for credits (bytes, per channel)."""
    credit_bytes: int
    """Bytes one credit stands for (flit size, or PCIe's 16 B data credit)."""
    return_delay_s: float
    """Receiver processing time before a credit is sent back (s), on top of reverse propagation."""
    batch: int = 1
    """Credits returned together in one update (PCIe UpdateFC / NVLink credit batching)."""


@dataclass(frozen=True, slots=True)
class Channel:
    """One direction of one physical link."""

    id: int
    """Index in ``Fabric.channels``; also the MultiDiGraph edge key."""
    link: int
    """Physical link index; the two directions of a link share it."""
    src: str
    dst: str
    fabric: FabricKind
    generation: str
    """Link generation name from the catalog, e.g. ``nvlink5``, ``pcie5``, ``ib_ndr``."""
    lanes: int
    """Differential pairs carrying this direction."""
    line_rate_Bps: float
    """Signalling rate of this direction after line encoding/FEC (bytes/s, one direction)."""
    rate_Bps: float
    """Payload rate of this direction after packet-header/CRC protocol efficiency (bytes/s, one direction)."""
    latency_s: float
    """One-way latency: SerDes + cable propagation + retimers + optics DSP (s)."""
    credit: CreditSpec
    energy_pJ_per_bit: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """Dynamic energy per payload bit moved, by component kind (``gpu_serdes``, ``switch_serdes``,
    ``retimer``, ``optics``, ``active_copper``, ``nic``...: the same kinds as
    ``Fabric.static_power_W``, see ``topology.builder.COMPONENT_KINDS``)."""
    cable: str = ""
    """Cable kind name (``copper_passive``, ``copper_active``, ``optical``) or "" for board traces."""
    retimers: int = 0
    reverse_overhead: float = 0.0
    """Bytes the other direction of this link carries per payload byte sent here (responses,
    acknowledgements, credits); the flow engine charges them to the reverse channel."""
    ber: float = 0.0
    """Bit error rate the link's CRC sees (after FEC); ``rate_Bps`` already counts the replays it
    costs (``hardware.retry``). 0 for a healthy link."""


@dataclass(slots=True)
class Fabric:
    """A built topology: graph, devices in order, channels by id, static power by component kind."""

    name: str
    nodes: dict[str, Node]
    channels: list[Channel]
    gpus: list[str]
    """GPU node names in rank order."""
    static_power_W: dict[str, float] = field(default_factory=dict)
    """Always-on interconnect power by component kind (W); ``sum`` is the total."""
    warnings: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    """The faults applied to this fabric, one line each (``topology.faults``); empty when healthy."""
    changes: list = field(default_factory=list)
    """Faults that strike during a run (``at:``), as ``topology.faults.FabricChange`` in time order:
    the flow engine switches to each one's surviving fabric at its time."""
    gpu_specs: dict = field(default_factory=dict, repr=False, compare=False)
    """GPU part name -> its ``hardware.devices.GpuSpec`` from this fabric's catalog (built-in parts
    plus the topology's own parts files): what the kernel model of its GPUs reads."""
    kernel_files: tuple[str, ...] = ()
    """Parts or calibration files whose ``kernels:`` sections override the built-in kernel constants
    (a topology's ``parts:`` list, then ``--parts``), in order."""
    route_cache: dict = field(default_factory=dict, repr=False, compare=False)
    """(src, dst) -> routes; filled lazily by ``topology.routing``."""
    _graph: nx.MultiDiGraph | None = field(default=None, init=False, repr=False, compare=False)
    """The graph, built on first use of :attr:`graph` (most runs never need it)."""

    @classmethod
    def from_parts(cls, name: str, nodes: Iterable[Node], channels: Iterable[Channel],
                   static_power_W: Mapping[str, float] | None = None) -> "Fabric":
        """Assemble a fabric from records (used by the builder and by tests' hand-made fabrics)."""
        node_map = {n.name: n for n in nodes}
        chans = sorted(channels, key=attrgetter("id"))
        if list(map(attrgetter("id"), chans)) != list(range(len(chans))):
            raise ValueError("channel ids must be 0..N-1")
        if not set(map(attrgetter("src"), chans)).union(map(attrgetter("dst"), chans)) <= node_map.keys():
            ch = next(c for c in chans if c.src not in node_map or c.dst not in node_map)
            raise ValueError(f"channel {ch.id} joins unknown node {ch.src!r} or {ch.dst!r}")
        gpus = sorted((n for n in node_map.values() if n.kind == "gpu"), key=lambda n: n.rank)
        return cls(name=name, nodes=node_map, channels=chans,
                   gpus=[g.name for g in gpus], static_power_W=dict(static_power_W or {}))

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The fabric as a networkx ``MultiDiGraph``, built on first use: nodes in ``nodes`` order
        with attribute ``node``, and one edge ``(src, dst, key=channel.id)`` per channel in id
        order with attribute ``ch``. Read it, never change it: it mirrors the records."""
        if self._graph is None:
            import networkx as nx

            graph = nx.MultiDiGraph()
            graph.add_nodes_from((node.name, {"node": node}) for node in self.nodes.values())
            graph.add_edges_from((ch.src, ch.dst, ch.id, {"ch": ch}) for ch in self.channels)
            self._graph = graph
        return self._graph

    def out_channels(self, node: str) -> list[Channel]:
        """Channels leaving ``node``, in id order (a new list; none for an unknown node)."""
        key = ("fabric.out_channels",)
        out = self.route_cache.get(key)
        if out is None:
            out = self.route_cache[key] = {}
            for ch in self.channels:
                out.setdefault(ch.src, []).append(ch)
        return list(out.get(node, ()))

    def reverse(self, ch: Channel) -> Channel:
        """The other direction of the same physical link (KeyError if the link has one direction)."""
        rid = self.reverse_ids()[ch.id]
        if rid < 0:
            raise KeyError(f"channel {ch.id} has no reverse direction")
        return self.channels[rid]

    def reverse_latency_s(self, ch: Channel) -> float:
        """Latency of the other direction of ``ch``'s link (credits and responses travel it);
        ``ch``'s own latency for a one-direction link (links are otherwise symmetric)."""
        rid = self.reverse_ids()[ch.id]
        return self.channels[rid].latency_s if rid >= 0 else ch.latency_s

    def forwards(self, name: str) -> bool:
        """True for a node that passes traffic on (switch, NIC, root complex): not a GPU and with
        channels out. A receive buffer there is freed only after the node forwarded the data."""
        key = ("fabric.forwarding",)
        nodes = self.route_cache.get(key)
        if nodes is None:
            nodes = self.route_cache[key] = frozenset(
                c.src for c in self.channels if self.nodes[c.src].kind != "gpu")
        return name in nodes

    def reverse_ids(self) -> list[int]:
        """Channel id -> id of the other direction of its link (-1 if none); computed once."""
        key = ("fabric.reverse_ids",)
        ids = self.route_cache.get(key)
        if ids is None:
            ends = {(c.link, c.src, c.dst): c.id for c in self.channels}
            ids = [ends.get((c.link, c.dst, c.src), -1) for c in self.channels]
            self.route_cache[key] = ids
        return ids

    def response_uses(self) -> tuple[np.ndarray, np.ndarray]:
        """Where each channel's payload costs capacity besides itself: (channel id -> the reverse
        channel its responses and credits take, -1 if none; channel id -> its ``reverse_overhead``
        there, 0 where there is none), as arrays with a last dummy entry (-1, 0) for rate-limit
        slots. One byte sent on channel c uses ``overhead[c]`` of ``reverse[c]``: the flow engine's
        capacities and the tuner's channel loads both read it here; computed once."""
        key = ("fabric.response_uses",)
        uses = self.route_cache.get(key)
        if uses is None:
            reverse = np.array(self.reverse_ids() + [-1], dtype=np.int64)
            overhead = np.array([c.reverse_overhead for c in self.channels] + [0.0])
            overhead[reverse < 0] = 0.0
            uses = self.route_cache[key] = (reverse, overhead)
        return uses

    @property
    def n_links(self) -> int:
        """Physical links, each counted once."""
        return len({c.link for c in self.channels})
