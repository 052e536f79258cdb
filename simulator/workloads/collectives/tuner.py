"""``algo=auto``: predict each (algorithm, protocol) time with an alpha-beta model, pick the fastest.

Like NCCL's tuner, but the model is read off the steady-state workload itself instead of
per-algorithm formulas: transfers are grouped into phases (their depth in the DAG); a phase's
bandwidth time is its most loaded channel (bytes / rate_Bps, alpha-beta "beta"; a link's
responses load its other direction, as in the engines) or its slowest
rate-limited transfer (bytes / ``Transfer.rate_Bps``: a CTA's pace), its latency the
largest delay + route latency ("alpha"); phases add along the DAG's critical path. Protocol
constants come from the protocol parts, bandwidths and latencies from the fabric.

``choose`` builds each candidate for its estimate only partly on multi-node fabrics of alike nodes
(``sample_node``: one node's insides plus every transfer between nodes, the same estimate as the
whole workload's) and builds whole only the candidate it picks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.engine.transfer import Workload
from simulator.errors import InputError
from simulator.hardware.protocols import PROTOCOL_NAMES, ProtocolTable
from simulator.topology.fabric import Fabric
from simulator.topology.placement import layout
from simulator.topology.routing import equal_cost_routes, route_latency_s, route_shares
from simulator.workloads.collectives.build import build_algorithm
from simulator.workloads.collectives.gpu_side import GpuSide
from simulator.workloads.collectives.rails import even, one_gpu_per_node, rail_nodes
from simulator.workloads.collectives.registry import ALGORITHMS, choices, why_not


@dataclass(frozen=True, slots=True)
class Estimate:
    """What ``estimate`` reads off a workload."""

    time_s: float
    """Alpha-beta estimate of the makespan (s)."""
    load_s: float
    """The part of ``time_s`` its most loaded channels alone force: over the phases, the sum of the
    largest wire bytes / rate of any channel (s). ``time_s >= load_s``: a chain of transfers
    passes through every phase."""
    least_bytes: int
    """Wire bytes of the smallest transfer that moves data (0 when none moves), as built: before
    an estimate's build merged identical ones (``DagBuilder.merge``, meta ``least_wire_B``)."""


def predict_s(fabric: Fabric, workload: Workload) -> float:
    """Alpha-beta estimate of ``workload``'s makespan on ``fabric`` (s)."""
    return estimate(fabric, workload).time_s


def estimate(fabric: Fabric, workload: Workload) -> Estimate:
    """``predict_s``'s estimate with its channel-load part and smallest transfer (``Estimate``)."""
    ts = workload.transfers
    if not ts:
        return Estimate(0.0, 0.0, 0)
    depth = [0] * len(ts)
    key_of: dict[tuple, int] = {}
    spreads: list[_Spread] = []
    moving, key_index = [], []
    for t in ts:
        if t.deps:
            depth[t.id] = 1 + max(map(depth.__getitem__, t.deps))
        if t.bytes == 0:
            continue
        key = (t.src, t.dst, t.paths)
        k = key_of.get(key)
        if k is None:
            k = key_of[key] = len(spreads)
            spreads.append(_spread(fabric, t.src, t.dst, t.paths))
        moving.append(t.id)
        key_index.append(k)
    latency = np.zeros(len(ts))
    load_beta = np.zeros(max(depth) + 1)
    phase_beta = load_beta.copy()
    least = 0
    if moving:
        ids, keys = np.array(moving), np.array(key_index)
        latency[ids] = np.array([s.latency_s for s in spreads])[keys]
        # every (transfer, channel) entry: bytes on the channel, added up per (depth, channel)
        lengths = np.array([len(s.channels) for s in spreads])
        ptr = np.concatenate(([0], np.cumsum(lengths)))
        counts = lengths[keys]
        first = np.cumsum(counts) - counts
        gather = np.repeat(ptr[keys] - first, counts) + np.arange(int(counts.sum()))
        channels = np.concatenate([s.channels for s in spreads])[gather]
        share = np.concatenate([s.share for s in spreads])[gather]
        nbytes = np.array([ts[i].bytes for i in moving], dtype=float)
        n_ch = len(fabric.channels)
        cell = np.repeat(np.array(depth)[ids], counts) * n_ch + channels
        cells, inverse = np.unique(cell, return_inverse=True)
        load = np.bincount(inverse, weights=np.repeat(nbytes, counts) * share)
        capacity = np.array([c.rate_Bps for c in fabric.channels])
        np.maximum.at(load_beta, cells // n_ch, load / capacity[cells % n_ch])
        phase_beta = load_beta.copy()
        least = int(workload.meta.get("least_wire_B") or nbytes.min())
        # a transfer no faster than its sender (CTA or copy engine) can push it
        limit = np.array([ts[i].rate_Bps for i in moving])
        capped = limit > 0
        if capped.any():
            np.maximum.at(phase_beta, np.array(depth)[ids[capped]], nbytes[capped] / limit[capped])
    finish = [0.0] * len(ts)
    lat, beta = latency.tolist(), phase_beta.tolist()
    for t in ts:
        ready = max(map(finish.__getitem__, t.deps)) if t.deps else 0.0
        finish[t.id] = ready + t.delay_s + lat[t.id] + beta[depth[t.id]]
    return Estimate(float(max(finish)), float(load_beta.sum()), least)


@dataclass(frozen=True, slots=True)
class _Spread:
    """Channels a transfer loads, the share of its bytes on each, its route latency (s): the
    channels it crosses, and the other direction of each link it crosses, which carries the
    responses (``Fabric.response_uses``, as the flow engine charges them)."""

    channels: np.ndarray
    share: np.ndarray
    latency_s: float


def _spread(fabric: Fabric, src: str, dst: str, paths) -> _Spread:
    """Bytes spread over ``paths`` (all equal-cost routes if None) as the flow engine splits them
    (``routing.route_shares``); cached on the fabric (key ``("tuner.spread", src, dst, paths)``)."""
    key = ("tuner.spread", src, dst, paths)
    cached = fabric.route_cache.get(key)
    if cached is not None:
        return cached
    routes = paths if paths is not None else equal_cost_routes(fabric, src, dst)
    if not any(routes):  # a local copy: no channel crossed
        spread = fabric.route_cache[key] = _Spread(np.zeros(0, dtype=np.int64), np.zeros(0), 0.0)
        return spread
    shares = route_shares(fabric, routes)
    channels = np.array([c for r in routes for c in r], dtype=np.int64)
    per_channel = np.repeat(shares, [len(r) for r in routes]) if len(channels) else np.zeros(0)
    reverse, overhead = fabric.response_uses()  # responses load each link's other direction
    crossed = channels
    answered = overhead[crossed] > 0
    channels = np.concatenate((crossed, reverse[crossed[answered]]))
    per_channel = np.concatenate((per_channel, per_channel[answered] * overhead[crossed[answered]]))
    spread = fabric.route_cache[key] = _Spread(channels, per_channel,
                                               max((route_latency_s(fabric, r) for r in routes), default=0.0))
    return spread


def choose(fabric: Fabric, gpus: tuple[str, ...], op: str, nbytes: int, algo: str, protocol: str,
           table: ProtocolTable, channels: int | None = None, skip: bool = True,
           **build) -> tuple[str, str, float, Workload]:
    """The (algorithm, protocol, predicted seconds, its workload) with the smallest prediction
    (ties: the first in ALGORITHMS x PROTOCOL_NAMES order); ``auto`` in either argument means
    "any" (``algo`` may also be a list to choose among, ``registry.choices``): with ``algo=auto``,
    the registered algorithms whose records make them candidates for ``op`` on these GPUs
    (``AlgorithmRecord.auto_candidate``: NCCL's tuner picks among ring, tree, NVLS and NVLSTree for
    collectives and runs the p2p ops point to point; inside one NVLink domain it runs Ring or NVLS,
    measured on 2x H200, NCCL 2.28); ``channels`` fixes the CTA count of every
    candidate; ``build`` passes further ``build_algorithm`` arguments (root, launch) through.

    Each algorithm's protocols are tried by falling wire efficiency. A protocol changes a
    transfer's wire bytes, delay and rate, never which transfers a builder emits or their routes
    (``tests/test_tuner_estimate.py`` checks every algorithm), so at equal channel counts a
    protocol of efficiency e moves e_built / e times the wire bytes of a built one over every
    channel: its estimate is at least that multiple of the built one's ``load_s`` (less one byte
    of rounding per transfer). ``skip``: a candidate whose bound exceeds the best estimate so far
    is not built (it cannot win); at 1 GiB that leaves LL unbuilt. Across more than two nodes, and
    at one GPU per node, the candidates NCCL rates by one bandwidth per channel
    (``AlgorithmRecord.nccl_rating``: ring, tree, pat) are ranked as NCCL ranks them
    (``nccl_rated_extra_s``); the time returned is the estimate."""
    listed = choices(algo)  # None: one algorithm asked for
    algos = listed if listed is not None else [algo]
    # a list (not auto) none of whose algorithms auto would try here runs them by name, as NCCL_ALGO=Tree
    # does inside one node
    by_auto = listed is not None and (algo == "auto" or any(
        ALGORITHMS[a].auto_candidate(fabric, gpus, op) for a in listed))
    protos = list(PROTOCOL_NAMES) if protocol == "auto" else [protocol]
    sample = sample_node(fabric, gpus)
    gpu = GpuSide.of(fabric, gpus)
    best: tuple[tuple[float, int], str, str, Workload, float] | None = None
    reasons: list[str] = []
    nodes = rail_nodes(fabric, gpus)
    # NCCL rates its candidates by one bandwidth per channel across more than two nodes (bwInter) and
    # at one GPU per node, where every graph is the GPU's path to its NICs
    rated = (nodes is not None and len(nodes) > 2) or one_gpu_per_node(fabric, gpus)
    reference: list[float] = []  # the first rated candidate's load time x wire efficiency x rating
    for i, a in enumerate(algos):
        record = ALGORITHMS.get(a)  # None: why_not says so
        built: tuple[int, float, Estimate] | None = None  # channels, efficiency, estimate of the first built
        for p in sorted(protos, key=lambda p: -table.protocol(p).efficiency):
            reason = why_not(fabric, gpus, op, a, p, table)
            if reason:
                reasons.append(reason)
                continue
            if by_auto and not record.auto_candidate(fabric, gpus, op):
                continue
            efficiency = table.protocol(p).efficiency
            if skip and built and best and built[2].least_bytes and built[0] == (
                    channels or record.call_ctas(fabric, gpus, gpu, op, p, nbytes)):
                ratio = built[1] / efficiency
                if ratio * built[2].load_s * (1.0 - 1.0 / built[2].least_bytes) > best[0][0]:
                    continue
            workload = build_algorithm(fabric, gpus, op, nbytes, a, p, table, channels=channels, sample=sample,
                                       **build)
            guess = estimate(fabric, workload)
            if built is None:
                built = (workload.meta["channels"], efficiency, guess)
            rank = guess.time_s
            if rated and listed is not None and record.nccl_rating is not None:
                rank += nccl_rated_extra_s(guess, record.nccl_rating(len(gpus), op) * efficiency, reference)
            key = (rank, i * len(PROTOCOL_NAMES) + protos.index(p))
            if best is None or key < best[0]:
                best = (key, a, p, workload, guess.time_s)
    if best is None:
        if listed is None and reasons:  # one algorithm asked for: its own reason
            raise InputError(f"{algo} cannot run {op} here: {reasons[0]}", field="algo")
        raise InputError(f"no algorithm/protocol can run {op} on these {len(gpus)} GPUs", field="algo")
    _, a, p, workload, t = best
    if sample is not None:  # the estimate left other nodes' insides out: build the whole call
        workload = build_algorithm(fabric, gpus, op, nbytes, a, p, table, channels=channels, **build)
    return a, p, t, workload


def nccl_rated_extra_s(guess: Estimate, rating: float, reference: list[float]) -> float:
    """Seconds to add to a candidate's estimate to rank it as NCCL's tuner does across more than
    two nodes: there NCCL rates Ring and Tree by the same network bandwidth per channel, each at its
    own ``AlgorithmRecord.nccl_rating`` (src/graph/tuning.cc ``ncclTopoTuneModel``), so a candidate's
    network time is, to NCCL, the first rated candidate's (the ring, in registry order) times the
    ratio of their ratings. ``rating`` includes the protocol's wire efficiency (the channel loads
    of one algorithm scale with 1 / efficiency: ``choose``), so one reference serves every
    protocol: the first candidate rated sets it (its channel-load time times its rating) and adds
    nothing; a later one adds what NCCL's rating puts above its own channel-load time, never less
    than 0 (NCCL may rate it faster than it runs: then its estimate ranks it)."""
    if not reference:
        reference.append(guess.load_s * rating)
        return 0.0
    return max(0.0, reference[0] / rating - guess.load_s)


def sample_node(fabric: Fabric, gpus: tuple[str, ...]) -> str | None:
    """The node (``Node.group``) whose insides stand for every node's in the tuner's estimates, or
    None to estimate from whole workloads.

    On a multi-node fabric whose nodes are alike (equal GPU counts joined by the network:
    ``rails.rail_nodes``, the same local GPUs of each node; no faults, which make nodes differ),
    every algorithm runs the same schedule inside each node, over identical links, so the
    transfers inside one node load its links, pay its latencies and meet its CTA rates exactly as
    every other node's do. The estimate keeps them for the first node and every transfer between
    nodes (which share NICs, leaves and spines across nodes): ``predict_s`` gives the same time as for the whole
    workload, for a build of 1/k of the intra-node transfers on k nodes."""
    if fabric.faults:
        return None
    nodes = rail_nodes(fabric, gpus)
    if nodes is None or not even(nodes):  # uneven nodes run different schedules inside
        return None
    local = layout(fabric).local  # a placement may take other GPUs of each node: then they differ too
    first = [local[g] for g in nodes[0]]
    if any([local[g] for g in node] != first for node in nodes[1:]):
        return None
    return fabric.nodes[nodes[0][0]].group
