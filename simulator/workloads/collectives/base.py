"""What every collective builder shares: the request, a DAG builder, channel routes, latencies.

Granularity (the same physics at two resolutions):
- ``steady``: a pipelined algorithm as concurrent flows that carry the steady-state bytes of each
  link for the whole message, with the pipeline's step latencies (k steps x (protocol hop latency
  + route latency) + base latency) put in ``delay_s``. Few transfers: n x channels for a ring.
- ``chunked``: every step of every chunk is a transfer whose deps are the data it needs; at most
  ``window`` chunks in flight per sender (NCCL_STEPS buffer slots). Many transfers. The base
  (launch) latency is paid once, by the first chunk.
On a symmetric fabric both give k x latency + bytes_per_link / rate: every link carries the same
bytes back to back in both (tests/test_workloads_granularity.py checks they agree within a few %).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import Literal

from simulator.engine.transfer import Transfer, Workload
from simulator.errors import InputError
from simulator.hardware.protocols import IDEAL, Protocol, ProtocolTable
from simulator.topology.fabric import Fabric
from simulator.topology.nics import net_routes
from simulator.topology.routing import Route, equal_cost_routes, route_latency_s, route_weights
from simulator.workloads.collectives.gpu_side import GpuSide

Granularity = Literal["steady", "chunked"]
GRANULARITIES = ("steady", "chunked")
DEFAULT_CHUNK_BYTES = 512 * 1024
"""Bytes per channel per pipeline step in chunked mode: NCCL's default 4 MiB buffer / 8 steps
(NCCL_BUFFSIZE, NCCL_STEPS; NCCL environment docs)."""
DEFAULT_WINDOW = 8
"""Chunks in flight per sender in chunked mode (NCCL_STEPS = 8 buffer slots)."""
MAX_CHANNELS = 32
"""Upper bound on default channels (assumption: NCCL's usual ceiling on NVLink systems)."""


@dataclass(frozen=True, slots=True)
class CollectiveSpec:
    """One collective call: where, what, how."""

    fabric: Fabric
    gpus: tuple[str, ...]
    op: str
    nbytes: int
    """Message size S in nccl-tests' convention (see ops.py)."""
    algo: str
    """The registered algorithm's name (``registry.AlgorithmRecord.name``)."""
    protocol: Protocol
    table: ProtocolTable
    channels: int
    granularity: Granularity = "steady"
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    window: int = DEFAULT_WINDOW
    root: int = 0
    """Index in ``gpus`` of the broadcast root."""
    gpu: GpuSide | None = None
    """The GPU side (CTA rates, launch and flag latency); None or the ``ideal`` protocol: none."""
    exposed_launch: bool = False
    """Charge the kernel launch: a call timed alone. False (nccl-tests): back-to-back iterations
    hide each launch behind the previous kernel."""
    kernel_fixed_s: float = 0.0
    """The NCCL kernel's fixed cost as any kernel's in its launch mode (``hardware.kernels``:
    ``graph_kernel_s`` when the call is one node of a CUDA graph, as a serving engine's decode step
    runs it); 0 for nccl-tests' back-to-back eager iterations, whose launches overlap the kernels."""
    table_row: str = ""
    """The protocol table's algorithm row (``parts/protocols.yaml``) whose base and step latencies
    ``base_s`` and ``hop_s`` read by default (``registry.AlgorithmRecord.row``); "": ``algo``'s."""
    pxn: bool = False
    """PXN across nodes (NCCL src/graph/paths.cc; NCCL's default, ``NCCL_PXN_DISABLE=0``): point-to-point
    transfers to another node's GPU on another rail relay through an NVLink peer of the sender's host
    (``rails.pxn_relay``). False (here the default): every GPU sends from its own NICs, as with
    ``NCCL_PXN_DISABLE=1``."""
    sample: str | None = None
    """Tuner estimates on multi-node fabrics whose nodes are alike: build the transfers inside this
    node (``Node.group``) and every transfer between nodes, skip those inside the other nodes
    (their links, latencies and rates repeat this node's). None: build everything."""

    @property
    def n(self) -> int:
        return len(self.gpus)

    @property
    def side(self) -> GpuSide | None:
        """The GPU side in force (None for the ``ideal`` protocol, which models the wire alone)."""
        return None if self.protocol.name == IDEAL else self.gpu

    def builds(self, src: str, dst: str) -> bool:
        """False for a transfer an estimate leaves out: inside a node other than ``sample``."""
        if self.sample is None:
            return True
        group = self._groups()
        return group[src] == self.sample or group[src] != group[dst]

    def _groups(self) -> dict[str, str]:
        """Node name -> ``Node.group`` (cached on the fabric: ``builds`` asks for every edge)."""
        key = ("collectives.groups",)
        group = self.fabric.route_cache.get(key)
        if group is None:
            group = self.fabric.route_cache[key] = {name: node.group for name, node in self.fabric.nodes.items()}
        return group

    def built_edges(self, ring: tuple[str, ...]) -> list[tuple[int, str, str]]:
        """The edges (i, ring[i], its successor, the last closing the ring) that ``builds``."""
        builds = self.builds
        return [(i, a, b) for i, (a, b) in enumerate(zip(ring, ring[1:] + ring[:1])) if builds(a, b)]

    def wire(self, data_bytes: float, efficiency: float = 1.0) -> int:
        """Wire bytes for ``data_bytes`` of data with this protocol (and an extra efficiency)."""
        return int(round(data_bytes / (self.protocol.efficiency * efficiency)))

    def base_s(self, algo: str | None = None) -> float:
        """Fixed cost of the call: kernel launch (a call timed alone) or the kernel's fixed cost in
        a CUDA graph, plus NCCL's in-kernel base latency of the protocol table's row ``algo``
        (default: this call's algorithm's, ``table_row``) (s)."""
        side = self.side
        launch = side.launch_s if side and self.exposed_launch else 0.0
        return self.table.base_s(algo or self.table_row or self.algo, self.protocol.name) + launch + self.kernel_fixed_s

    def hop_s(self, src: str, dst: str, algo: str | None = None) -> float:
        """Latency of one pipeline step from ``src`` to ``dst`` besides the route: NCCL's protocol
        latency for the link kinds on the way (the protocol table's row ``algo``, default this
        call's algorithm's, ``table_row``) plus one slot handoff (flag write and poll).
        Cached on the fabric per (table, row, protocol, GPU architecture, pair); tables are
        loaded once per process (``load_protocols``), so their identity is a stable key."""
        algo = algo or self.table_row or self.algo
        side = self.side
        key = ("collectives.hop", id(self.table), algo, self.protocol.name, side.name if side else "", src, dst)
        cache = self.fabric.route_cache
        value = cache.get(key)
        if value is None:
            value = cache[key] = (self.table.hop_s(algo, self.protocol.name, link_kind(self.fabric, src, dst))
                                  + (side.flag_s if side else 0.0))
        return value

    def cta_Bps(self, src: str, dst: str, ctas: float = 1.0, ring: tuple[str, int] | None = None) -> float:
        """Rate limit (wire B/s) of a transfer that ``ctas`` channels drive from ``src`` to ``dst``:
        min(CTA copy/reduce rate, the slot credit loop) per channel (0: no limit). ``ring``:
        (op, ranks) of the ring loop the transfer belongs to, whose link primitives set the CTA
        rate. Cached on the fabric per (op, protocol, GPU side, ring, pair)."""
        side = self.side
        if side is None:
            return 0.0
        op, ring_n = ring or (self.op, 0)
        key = ("collectives.cta", id(self.table), op, ring_n, self.protocol.name, side.name, src, dst)
        cache = self.fabric.route_cache
        one = cache.get(key)
        if one is None:
            # the FIFO between two ranks is a point-to-point connection: its handoff is a ring step's
            one = cache[key] = side.rate_Bps(op, self.hop_s(src, dst, "ring"), route_lat_s(self.fabric, src, dst),
                                             ring_n)
        return ctas * one

    def ring_local_s(self, op: str, n: int, chunk_bytes: float) -> float:
        """Time (s) a CTA spends on the primitive that closes a loop of ring ``op`` on ``n`` ranks,
        for ``chunk_bytes`` of data, with its link idle (0 without a GPU side)."""
        side = self.side
        return 0.0 if side is None else chunk_bytes * side.ring_local_s_per_B(op, n)


@dataclass(slots=True)
class DagBuilder:
    """Accumulates transfers with consecutive ids.

    ``merge`` (tuner estimates, which are never run): identical transfers (ends, bytes, deps,
    delay, routes, rate) become one that carries k times the bytes at k times the rate. It loads
    every channel as the k did, takes its CTAs the same time (k x bytes / (k x rate)) and finishes
    when they would, so ``tuner.estimate`` gives the same figure from fewer objects; a channel
    dealt the same route as another (72 channels over 18 NVSwitch planes) repeats its transfers."""

    transfers: list[Transfer] = field(default_factory=list)
    merge: bool = False
    counts: list[int] = field(default_factory=list)
    """Transfers each entry stands for (``merge``)."""
    same: dict[tuple, int] = field(default_factory=dict)
    least_B: int = 0
    """Fewest bytes of one moving transfer as added (``merge``: what merged ones are made of)."""

    def add(self, src: str, dst: str, nbytes: int, deps=(), delay_s: float = 0.0,
            paths: tuple[Route, ...] | None = None, tag: str = "", rate_Bps: float = 0.0) -> int:
        deps = tuple(sorted(set(deps))) if deps else ()
        nbytes = int(nbytes)
        if self.merge:
            if nbytes and (nbytes < self.least_B or not self.least_B):
                self.least_B = nbytes
            key = (src, dst, nbytes, deps, delay_s, paths, rate_Bps)
            tid = self.same.get(key)
            if tid is not None:
                self.counts[tid] += 1
                return tid
            self.same[key] = len(self.transfers)
            self.counts.append(1)
        tid = len(self.transfers)
        self.transfers.append(Transfer(tid, src, dst, nbytes, deps, delay_s, paths, tag, rate_Bps))
        return tid

    def workload(self, name: str, meta: dict) -> Workload:
        transfers = self.transfers
        if self.merge:
            transfers = [t if k == 1 else t._replace(bytes=t.bytes * k, rate_Bps=t.rate_Bps * k)
                         for t, k in zip(transfers, self.counts)]
            meta = {**meta, "least_wire_B": self.least_B}
        return Workload(name, tuple(transfers), meta)


@dataclass(frozen=True, slots=True)
class PairFacts:
    """What the builders ask about one (src, dst) pair, computed once per fabric."""

    routes: tuple[Route, ...]
    """The pair's equal-cost routes (``routing.equal_cost_routes``)."""
    kind: str
    """NCCL latency class of a step: ``network``, ``pcie`` or ``nvlink`` (see ``link_kind``)."""
    latency_s: float
    """Zero-load latency of the slowest equal-cost route (s)."""
    even: bool
    """Every link of the equal-cost routes serves one route (``route_weights`` all 1)."""


def pair_facts(fabric: Fabric, src: str, dst: str) -> PairFacts:
    """``PairFacts`` of ``src`` -> ``dst``, cached in ``fabric.route_cache`` next to the routes
    (key ``("collectives.pair", src, dst)``: no node pair can take a 3-tuple key)."""
    key = ("collectives.pair", src, dst)
    facts = fabric.route_cache.get(key)
    if facts is None:
        routes = equal_cost_routes(fabric, src, dst)
        kinds = {fabric.channels[c].fabric for c in set(chain.from_iterable(routes))}
        kind = next((k for k in ("network", "pcie") if k in kinds), "nvlink")
        facts = fabric.route_cache[key] = PairFacts(routes, kind, max(route_latency_s(fabric, r) for r in routes),
                                                    bool(route_weights(routes).min() >= 1))
    return facts


def link_kind(fabric: Fabric, src: str, dst: str) -> str:
    """``network`` if the route crosses the scale-out network, else ``pcie`` if it crosses PCIe,
    else ``nvlink``: the NCCL latency class of a step."""
    return pair_facts(fabric, src, dst).kind


def route_lat_s(fabric: Fabric, src: str, dst: str) -> float:
    """Zero-load latency of the slowest equal-cost route (s)."""
    return pair_facts(fabric, src, dst).latency_s


def p2p_routes(fabric: Fabric, src: str, dst: str, job: frozenset[str]) -> tuple[Route, ...] | None:
    """A point-to-point connection's routes: across the network out of the sender's NIC and into
    the receiver's, as NCCL picks them among the NICs the call's GPUs (``job``) share
    (``topology.nics.net_routes``); None (every shortest route) within a node."""
    return net_routes(fabric, src, dst, job) if link_kind(fabric, src, dst) == "network" else None


def channel_paths(fabric: Fabric, src: str, dst: str, channel: int, channels: int) -> tuple[Route, ...]:
    """Routes of channel ``channel`` of ``channels`` from ``src`` to ``dst``: ``dealt_paths``'s entry."""
    return dealt_paths(fabric, src, dst, channels)[channel]


def dealt_paths(fabric: Fabric, src: str, dst: str, channels: int) -> tuple[tuple[Route, ...], ...]:
    """Routes of each of ``channels`` NCCL-like channels (entry c: channel c's). When the
    equal-cost routes divide evenly among the channels they are dealt out (channel c takes every
    channels-th route, or route c mod routes when there are more channels), so together the
    channels use every parallel link and switch plane equally. Otherwise each channel spreads
    over every route, as a GPU's traffic hashes over all NVSwitch planes: dealing 18 routes to 16
    channels would put two channels' worth on some links and one on others. So do routes that
    share links unevenly (``route_weights``: a bundle that lost a link), whose bytes the engine
    then splits by weight. Worked out once per pair and channel count (cached on the fabric)."""
    key = ("collectives.dealt", src, dst, channels)
    dealt = fabric.route_cache.get(key)
    if dealt is None:
        facts = pair_facts(fabric, src, dst)
        routes = facts.routes
        if not facts.even:  # some links serve two routes (a bundle lost a link): spread
            dealt = (routes,) * channels
        elif channels <= len(routes) and len(routes) % channels == 0:
            dealt = tuple(routes[c::channels] for c in range(channels))
        elif channels > len(routes) and channels % len(routes) == 0:
            alone = [(r,) for r in routes]
            dealt = tuple(alone[c % len(routes)] for c in range(channels))
        else:
            dealt = (routes,) * channels
        fabric.route_cache[key] = dealt
    return dealt


def route_channels(fabric: Fabric, gpus: tuple[str, ...]) -> int:
    """NCCL channels on a fabric without a GPU side (no CTA defaults): one per equal-cost route
    between the first two GPUs (every link/plane), at most ``MAX_CHANNELS``."""
    if len(gpus) < 2:
        return 1
    return max(1, min(MAX_CHANNELS, len(equal_cost_routes(fabric, gpus[0], gpus[1]))))


def split(total: float, parts: int) -> list[float]:
    """``total`` split into ``parts`` equal float shares."""
    return [total / parts] * parts


def check_gpus(fabric: Fabric, gpus: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    unknown = [g for g in gpus if g not in fabric.nodes or fabric.nodes[g].kind != "gpu"]
    if unknown:
        raise InputError(f"not GPUs of {fabric.name}: {', '.join(unknown)}", field="gpus")
    if len(set(gpus)) != len(gpus):
        raise InputError("a GPU is listed twice", field="gpus")
    return tuple(gpus)


def n_chunks(data_bytes: float, chunk_bytes: int) -> int:
    """Pipeline chunks needed to move ``data_bytes`` in pieces of ``chunk_bytes`` (at least 1)."""
    return max(1, -(-int(data_bytes) // max(1, chunk_bytes)))
