"""Collectives as transfer DAGs: a registry of algorithms (name -> builder) and one entry point.

    build_collective(fabric, gpus, op, nbytes, algo="auto", protocol="auto", channels=None,
                     granularity="steady", chunk_bytes=DEFAULT_CHUNK_BYTES) -> Workload

``algo="auto"`` / ``protocol="auto"`` ask the tuner (tuner.py) for the fastest predicted pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import networkx as nx

from simulator.engine.transfer import Workload
from simulator.errors import InputError, unknown_choice
from simulator.hardware.protocols import IDEAL, PROTOCOL_NAMES, ProtocolTable, load_protocols
from simulator.topology.fabric import Fabric
from simulator.workloads.collectives import direct, hierarchical, nvls, ring, tree
from simulator.workloads.collectives.base import (DEFAULT_CHUNK_BYTES, DEFAULT_WINDOW, GRANULARITIES,
                                                  CollectiveSpec, DagBuilder, check_gpus, default_channels)
from simulator.workloads.collectives.gpu_side import GpuSide
from simulator.workloads.collectives.ops import OPS, busbw_factor, check_op
from simulator.workloads.collectives.rails import rail_channels

RAIL_AWARE = frozenset({"ring", "tree"})
"""Algorithms whose channels take rail-aware orders on multi-node fabrics (rails.py); their default
channel count is rounded to a multiple of the GPUs per node there."""


@dataclass(frozen=True, slots=True)
class Algorithm:
    """A registered algorithm: the ops it implements, its builder, and when it cannot run."""

    name: str
    ops: frozenset[str]
    build: Callable[[CollectiveSpec, DagBuilder], None]
    applicable: Callable[[Fabric, tuple[str, ...]], str | None] = lambda fabric, gpus: None


ALGORITHMS: dict[str, Algorithm] = {
    "ring": Algorithm("ring", ring.OPS, ring.build),
    "tree": Algorithm("tree", tree.OPS, tree.build),
    "direct": Algorithm("direct", direct.OPS, direct.build),
    "nvls": Algorithm("nvls", nvls.OPS, nvls.build, nvls.applicable),
    "hierarchical": Algorithm("hierarchical", hierarchical.OPS, hierarchical.build, hierarchical.applicable),
}


def why_not(fabric: Fabric, gpus: tuple[str, ...], op: str, algo: str, protocol: str,
            table: ProtocolTable) -> str | None:
    """None if ``algo`` x ``protocol`` can run ``op`` on these GPUs, else the reason."""
    a = ALGORITHMS.get(algo)
    if a is None:
        return str(unknown_choice("algo", algo, ["auto", *ALGORITHMS]))
    if op not in a.ops:
        return f"{algo} does not implement {op} (it does {', '.join(sorted(a.ops))})"
    if len(gpus) < 2:
        return "a collective needs at least 2 GPUs"
    reason = a.applicable(fabric, gpus)  # the fabric's reason first: it holds for every protocol
    if reason is None and not table.supports(algo, protocol):
        reason = f"{algo} does not run protocol {protocol}"
    return reason


def check_algo(algo: str) -> str:
    """``algo`` if it names a registered algorithm or ``auto``, else an input error with a suggestion."""
    if algo != "auto" and algo not in ALGORITHMS:
        raise unknown_choice("algo", algo, ["auto", *ALGORITHMS], field="algo")
    return algo


def check_protocol(protocol: str) -> str:
    """The protocol's canonical spelling (``ll`` -> ``LL``: NCCL_PROTO is case-insensitive too), or an
    input error with a suggestion."""
    names = {p.lower(): p for p in (*PROTOCOL_NAMES, IDEAL, "auto")}
    if str(protocol).lower() not in names:
        raise unknown_choice("protocol", protocol, ["auto", *PROTOCOL_NAMES, IDEAL], field="protocol")
    return names[str(protocol).lower()]


def build_collective(fabric: Fabric, gpus: list[str] | tuple[str, ...], op: str, nbytes: int,
                     algo: str = "auto", protocol: str = "auto", channels: int | None = None,
                     granularity: str = "steady", chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                     window: int = DEFAULT_WINDOW, root: int = 0,
                     table: ProtocolTable | None = None, exposed_launch: bool = False,
                     sample: str | None = None, kernel_fixed_s: float = 0.0) -> Workload:
    """The transfer DAG of one collective call of ``nbytes`` (nccl-tests size convention).

    ``meta``: op, algo, protocol, bytes, n, busbw_factor, channels, granularity (and the tuner's
    predicted time when it chose). ``kernel_fixed_s``: the NCCL kernel's fixed cost in its launch
    mode (``CollectiveSpec.kernel_fixed_s``). ``sample`` (the tuner's estimates only, never run): build the
    transfers inside that node and between nodes, not those inside the other nodes
    (``CollectiveSpec.sample``).
    """
    table = table or load_protocols()
    gpus = check_gpus(fabric, gpus)
    check_op(op)
    if granularity not in GRANULARITIES:
        raise InputError(f"unknown granularity {granularity!r}; choose steady or chunked", field="granularity")
    if nbytes <= 0:
        raise InputError("message size must be positive", field="bytes")
    if channels is not None and channels < 1:
        raise InputError(f"channels must be at least 1, not {channels}", field="channels")
    algo, protocol = check_algo(algo), check_protocol(protocol)
    try:
        return _build(fabric, gpus, op, nbytes, algo, protocol, channels, granularity, chunk_bytes, window, root,
                      table, exposed_launch, sample, kernel_fixed_s)
    except nx.NetworkXNoPath as err:
        if fabric.faults:  # the faults cut the route, not the choice of GPUs
            raise InputError(f"{op} cannot run on {fabric.name} with its faults ({'; '.join(fabric.faults)}): "
                             f"{err}; the faults leave these GPUs unconnected (fewer faults, or GPUs they leave "
                             "connected, would run)", field="fault") from None
        raise InputError(f"{op} cannot run on {fabric.name}: {err}", field="gpus") from None


def _build(fabric: Fabric, gpus: tuple[str, ...], op: str, nbytes: int, algo: str, protocol: str,
           channels: int | None, granularity: str, chunk_bytes: int, window: int, root: int,
           table: ProtocolTable, exposed_launch: bool, sample: str | None = None,
           kernel_fixed_s: float = 0.0) -> Workload:
    from simulator.workloads.collectives.tuner import choose  # tuner builds through this module

    meta_extra = {}
    if algo == "auto" or protocol == "auto":
        algo, protocol, predicted, chosen = choose(fabric, gpus, op, nbytes, algo, protocol, table, channels,
                                                   root=root, exposed_launch=exposed_launch,
                                                   kernel_fixed_s=kernel_fixed_s)
        if granularity == "steady":  # the candidate the tuner built is this call's workload
            chosen.meta["predicted_s"] = predicted
            return chosen
        meta_extra["predicted_s"] = predicted
    reason = why_not(fabric, gpus, op, algo, protocol, table)
    if reason:
        raise InputError(reason, field="algo")
    gpu = GpuSide.of(fabric, gpus)
    if not channels:
        channels = choose_channels(fabric, gpus, gpu, op, algo, protocol, nbytes)
    spec = CollectiveSpec(fabric=fabric, gpus=gpus, op=op, nbytes=int(nbytes), algo=algo,
                          protocol=table.protocol(protocol), table=table, channels=channels,
                          granularity=granularity, chunk_bytes=chunk_bytes, window=window, root=root,
                          gpu=gpu, exposed_launch=exposed_launch, sample=sample, kernel_fixed_s=kernel_fixed_s)
    dag = DagBuilder(merge=sample is not None)  # an estimate: identical transfers merged
    ALGORITHMS[algo].build(spec, dag)
    meta = {"op": op, "algo": algo, "protocol": protocol, "bytes": int(nbytes), "n": len(gpus),
            "busbw_factor": busbw_factor(op, len(gpus)), "channels": spec.channels,
            "granularity": granularity, **meta_extra}
    return dag.workload(f"{op}.{algo}.{protocol}.{nbytes}B.{len(gpus)}gpu", meta)


def choose_channels(fabric: Fabric, gpus: tuple[str, ...], gpu: GpuSide, op: str, algo: str, protocol: str,
                    nbytes: int) -> int:
    """NCCL's channel count for one call: the architecture's default for the algorithm (one per
    equal-cost route on fabrics without a GPU side), fewer for small messages, rounded to the rails
    on multi-node fabrics (rail-aware algorithms)."""
    channels = gpu.default_channels(op, algo) or default_channels(fabric, gpus)
    channels = gpu.channels_for_size(channels, op, algo, protocol, nbytes, len(gpus))
    if algo in RAIL_AWARE:
        channels = rail_channels(fabric, gpus, channels)
    return channels


__all__ = ["ALGORITHMS", "Algorithm", "OPS", "build_collective", "busbw_factor", "check_algo", "check_protocol",
           "why_not"]
