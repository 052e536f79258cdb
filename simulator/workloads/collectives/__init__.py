"""Collectives as transfer DAGs: a registry of algorithms (one record each, ``registry.py``) and one
entry point.

    build_collective(fabric, gpus, op, nbytes, algo="auto", protocol="auto", channels=None,
                     granularity="steady", chunk_bytes=DEFAULT_CHUNK_BYTES) -> Workload

``algo="auto"`` / ``protocol="auto"`` ask the tuner (tuner.py) for the fastest predicted pair; a list
(``algo="ring,tree"``, ``"^nvls,nvls_tree"``: ``registry.choices``) asks it to choose among some.
"""

from __future__ import annotations

import networkx as nx

from simulator.engine.transfer import Workload
from simulator.errors import InputError, unknown_choice
from simulator.hardware.protocols import IDEAL, PROTOCOL_NAMES, ProtocolTable, load_protocols
from simulator.topology.fabric import Fabric
from simulator.workloads.collectives import collnet_chain, direct, hierarchical, nvls, nvls_tree, pat, ring, tree
from simulator.workloads.collectives.base import DEFAULT_CHUNK_BYTES, DEFAULT_WINDOW, GRANULARITIES, check_gpus
from simulator.workloads.collectives.build import build_algorithm
from simulator.workloads.collectives.ops import OPS, busbw_factor, check_op
from simulator.workloads.collectives.registry import (ALGORITHMS, AlgorithmRecord, algorithm_help, check_algo,
                                                      choices, register, unregister, why_not)
from simulator.workloads.collectives.tuner import choose

SHIPPED = (ring, tree, direct, nvls, nvls_tree, collnet_chain, pat, hierarchical)
"""The algorithms' modules, each declaring its ``RECORD``, in registry order: the tuner's tie order
(``tuner.choose``) and the order of every listing (``ALGORITHM_NAMES``, ``algorithm_help``)."""
for _module in SHIPPED:
    register(_module.RECORD)

ALGORITHM_NAMES: tuple[str, ...] = tuple(ALGORITHMS)
"""The shipped algorithms' names in registry order (what ``algo=`` takes besides ``auto``)."""


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
                     sample: str | None = None, kernel_fixed_s: float = 0.0, pxn: bool = False) -> Workload:
    """The transfer DAG of one collective call of ``nbytes`` (nccl-tests size convention).

    ``meta``: op, algo, protocol, bytes, n, busbw_factor, channels, granularity (and the tuner's
    predicted time when it chose). ``kernel_fixed_s``: the NCCL kernel's fixed cost in its launch
    mode (``CollectiveSpec.kernel_fixed_s``). ``pxn``: relay cross-rail point-to-point transfers
    through an NVLink peer of the sender's host (``CollectiveSpec.pxn``, NCCL's PXN; off by default
    here). ``sample`` (the tuner's estimates only, never run): build the
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
    fixed = dict(channels=channels, root=root, exposed_launch=exposed_launch, kernel_fixed_s=kernel_fixed_s, pxn=pxn)
    try:
        meta_extra = {}
        if choices(algo) is not None or protocol == "auto":
            algo, protocol, predicted, chosen = choose(fabric, gpus, op, nbytes, algo, protocol, table, **fixed)
            if granularity == "steady":  # the candidate the tuner built is this call's workload
                chosen.meta["predicted_s"] = predicted
                return chosen
            meta_extra["predicted_s"] = predicted
        return build_algorithm(fabric, gpus, op, nbytes, algo, protocol, table, granularity=granularity,
                               chunk_bytes=chunk_bytes, window=window, sample=sample, meta_extra=meta_extra,
                               **fixed)
    except nx.NetworkXNoPath as err:
        if fabric.faults:  # the faults cut the route, not the choice of GPUs
            raise InputError(f"{op} cannot run on {fabric.name} with its faults ({'; '.join(fabric.faults)}): "
                             f"{err}; the faults leave these GPUs unconnected (fewer faults, or GPUs they leave "
                             "connected, would run)", field="fault") from None
        raise InputError(f"{op} cannot run on {fabric.name}: {err}", field="gpus") from None


__all__ = ["ALGORITHMS", "ALGORITHM_NAMES", "AlgorithmRecord", "OPS", "SHIPPED", "algorithm_help", "build_collective",
           "busbw_factor", "check_algo", "check_protocol", "choices", "register", "unregister", "why_not"]
