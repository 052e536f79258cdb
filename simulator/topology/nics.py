"""Which NIC a GPU's point-to-point traffic leaves and enters a node by, as NCCL picks it.

NCCL gives every network connection of a rank one NIC per channel (src/graph/topo.cc
``ncclTopoGetLocalNetType``, called as ``ncclTopoGetLocalNet``):

- the GPU's local NICs are those of its best path type (``ncclTopoGetLocal``): here the NICs
  fewest host-side hops away (PCIe, C2C; never through another GPU, NIC or the network);
- the local GPUs of the first of them share them (the communicator's: NCCL's topology holds only
  its ranks' GPUs, so with one GPU of a server in the job it has both NICs of its PCIe switch):
  each GPU uses ``DIVUP(local NICs, local GPUs)`` (``NCCL_NETDEVS_POLICY=AUTO``), starting at its
  device index modulo the local GPUs, bit-mirrored when the NIC count is a power of two
  (``mirrorBits``), channel c taking the next ``c mod`` that many.

A p2p send (``src/graph/search.cc`` ``ncclTopoGetNetDev`` with a peer, PXN off) uses the sender's
own NIC; the receive side always its own (``src/transport/net.cc`` ``recvSetup``: peerRank = itself).
So a GPU whose PCIe switch holds two NICs (HGX H100, two GPUs a switch) sends on one of them, not
on both: one 400G port bounds a cross-node ``sendrecv``, where the shortest routes alone would
spread it over both and over its PCIe link instead. Between the two NICs the route stays in the
scale-out network (a route back into a host would be PXN, which ``workloads.collectives.rails``
models as its own relay).

Computed per GPU on first use and cached on the fabric (``route_cache``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Collection
from itertools import product

import networkx as nx

from simulator.topology.fabric import Fabric
from simulator.topology.placement import layout
from simulator.topology.routing import MAX_NODE_PATHS, Route, equal_cost_routes, hop_count, routes_within

_HOST_SKIPS = frozenset({"nvlink", "network"})
"""Channel kinds a host-side search never takes: NVLink reaches GPUs only, the network other hosts."""
NETWORK = frozenset({"network"})


def nearest_on_host(fabric: Fabric, start: str, kind: str) -> tuple[str, ...]:
    """The ``kind`` nodes fewest host-side hops from ``start`` (breadth first over every channel but
    NVLink and network ones, never passing through a GPU or NIC), in name order; () if none.
    Cached on the fabric per (start, kind)."""
    key = ("nics.nearest", start, kind)
    cached = fabric.route_cache.get(key)
    if cached is not None:
        return cached
    seen, frontier, found = {start}, deque([start]), []
    while frontier and not found:
        nxt: deque[str] = deque()
        for node in frontier:
            for ch in fabric.out_channels(node):
                if ch.fabric in _HOST_SKIPS or ch.dst in seen:
                    continue
                seen.add(ch.dst)
                end = fabric.nodes[ch.dst].kind
                if end == kind:
                    found.append(ch.dst)
                elif end not in ("gpu", "nic"):
                    nxt.append(ch.dst)
        frontier = nxt
    out = fabric.route_cache[key] = tuple(sorted(found, key=_natural))
    return out


def _natural(name: str) -> tuple:
    """Sort key that orders ``nic10`` after ``nic9``."""
    head = name.rstrip("0123456789")
    tail = name[len(head):]
    return (head, int(tail) if tail else -1)


def local_nics(fabric: Fabric, gpu: str) -> tuple[str, ...]:
    """The NICs closest to ``gpu`` on its host (NCCL's local nets), in name order."""
    return nearest_on_host(fabric, gpu, "nic")


def _mirror(value: int, pow2: int) -> int:
    """NCCL's ``mirrorBits`` (src/graph/topo.h): ``value``'s bits reversed within log2(pow2) bits."""
    out, b, mb = 0, 1, pow2 >> 1
    while b < pow2:
        if value & b:
            out |= mb
        b, mb = b << 1, mb >> 1
    return out


def net_nics(fabric: Fabric, gpu: str, job: Collection[str] | None = None) -> tuple[str, ...]:
    """The NICs ``gpu``'s network connections use, channel c the entry c mod its length (NCCL's
    ``ncclTopoGetLocalNet`` over channels; module docstring); () for a GPU with no NIC nearby.
    ``job``: the GPUs of the communicator (NCCL's topology holds only its ranks' GPUs, so a NIC is
    shared by the job's GPUs near it, not by idle ones); None: every GPU of the fabric."""
    nets = local_nics(fabric, gpu)
    if not nets:
        return ()
    near = nearest_on_host(fabric, nets[0], "gpu")  # NCCL's local GPUs of the first local NET
    sharing = sum(1 for g in near if g in job) if job is not None else len(near)
    key = ("nics.net", gpu, sharing)
    found = fabric.route_cache.get(key)
    if found is None:
        sharing = max(1, sharing)
        per_gpu = -(-len(nets) // sharing)
        start = _device(fabric, gpu) % sharing
        if len(nets) & (len(nets) - 1) == 0:
            start = _mirror(start, len(nets))
        found = fabric.route_cache[key] = tuple(nets[(start + c) % len(nets)] for c in range(per_gpu))
    return found


def _device(fabric: Fabric, gpu: str) -> int:
    """``gpu``'s device index on its host (NCCL's ``gpu.dev``, the CUDA index): its place among
    its compute tray's GPUs (``placement.layout``)."""
    key = ("nics.device",)
    index = fabric.route_cache.get(key)
    if index is None:
        index = fabric.route_cache[key] = {g: i for tray in layout(fabric).units("tray").values()
                                           for i, g in enumerate(tray)}
    return index.get(gpu, 0)


def net_routes(fabric: Fabric, src: str, dst: str, job: Collection[str] | None = None) -> tuple[Route, ...] | None:
    """Routes of a p2p connection from ``src`` to ``dst`` on another host over the network: out of
    the sender's NIC of each channel (``net_nics``; ``job``: the call's GPUs), through the scale-out
    network only, into the receiver's NIC of the same channel; None where a NIC is missing on
    either side or the two NICs are not joined by the network (the caller keeps the shortest
    routes). At most ``MAX_NODE_PATHS`` routes."""
    sends, recvs = net_nics(fabric, src, job), net_nics(fabric, dst, job)
    key = ("nics.routes", src, dst, sends, recvs)
    cache = fabric.route_cache
    if key in cache:
        return cache[key]
    out: tuple[Route, ...] | None = None
    if sends and recvs:
        pairs = dict.fromkeys((sends[c % len(sends)], recvs[c % len(recvs)])
                              for c in range(math.lcm(len(sends), len(recvs))))
        routes: list[Route] = []
        try:
            for a, b in pairs:
                middle = routes_within(fabric, a, b, NETWORK) if a != b else ((),)
                routes += [head + mid + tail for head, mid, tail in
                           product(equal_cost_routes(fabric, src, a), middle, equal_cost_routes(fabric, b, dst))]
        except nx.NetworkXNoPath:  # the two NICs are not joined by the network
            routes = []
        out = tuple(routes[:MAX_NODE_PATHS]) or None
    cache[key] = out
    return out


def net_hops(fabric: Fabric, src: str, dst: str, job: Collection[str] | None = None) -> int:
    """Links on a p2p connection's route from ``src`` to ``dst`` (``net_routes``; the shortest
    route's where that gives none)."""
    routes = net_routes(fabric, src, dst, job)
    return len(routes[0]) if routes else hop_count(fabric, src, dst)
