"""Chakra execution traces (MLCommons Chakra ET, the format ASTRA-sim reads) -> a transfer DAG.

One ``.et`` file per rank (``DIR/*.et`` or ``PREFIX.<rank>.et``), each a GlobalMetadata then Node
messages (chakra_schema.py). Rank r runs on the r-th chosen GPU. Node kinds:

- ``COMP_NODE``: a delay on its GPU: ``duration_micros`` if given, else the kernel model's cost of a
  kernel known only by its ``num_ops`` (FLOPs) and ``tensor_size`` (bytes) attributes
  (``hardware.kernels.GpuKernels.generic``: one fixed cost plus the longer of FLOPs at the sustained
  tensor rate and bytes at the saturated HBM rate).
- ``COMM_COLL_NODE``: the k-th collective of a process group (``pg_name`` attribute, default one
  group) on every rank that has one is one collective over those ranks' GPUs, built like
  ``bench`` builds it (``comm_type``, ``comm_size`` bytes in the nccl-tests convention); it starts
  when every participant's dependencies are done. ``BARRIER`` joins the ranks without bytes.
- ``COMM_SEND_NODE`` / ``COMM_RECV_NODE``: matched by (sender, receiver, ``comm_tag``) in id
  order; one transfer of ``comm_size`` bytes that waits for both sides' dependencies.
- Data and control dependencies both order nodes. Other node types and collectives fabricsim
  does not model (REDUCE, GATHER, SCATTER) are skipped: their dependents wait for their
  dependencies instead, and each skipped kind is reported once with its count.

Per rank the report gives compute (sum of its compute delays), the time it ended, and exposed
communication = end - compute (the rank's compute is serialized on one stream; whatever else the
rank waited for is communication not hidden under compute).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from simulator.engine.transfer import Workload
from simulator.errors import InputError
from simulator.topology.fabric import Fabric
from simulator.hardware.kernels import GpuKernels
from simulator.workloads.collectives import build_collective
from simulator.workloads.collectives.base import DagBuilder
from simulator.workloads.compose import append
from simulator.workloads.traces.chakra_schema import (COMM_TYPES, NODE_TYPES, TraceFormatError, attr_value,
                                                      message_class, read_delimited, write_delimited)

US = 1e-6
TYPE_NAME = {v: k for k, v in NODE_TYPES.items()}
COMM_NAME = {v: k for k, v in COMM_TYPES.items()}
OPS = {"ALL_REDUCE": "all_reduce", "ALL_GATHER": "all_gather", "REDUCE_SCATTER": "reduce_scatter",
       "ALL_TO_ALL": "alltoall", "BROADCAST": "broadcast"}
"""Chakra collective -> fabricsim operation."""


@dataclass(frozen=True)
class RankTrace:
    """One rank's trace file, parsed."""

    rank: int
    path: Path
    version: str
    nodes: list[Any]
    """Node messages in file order."""


def trace_files(dir_or_prefix: str | Path) -> list[Path]:
    """``DIR/*.et`` or ``PREFIX.<rank>.et``, ordered by rank (ranks must be 0..N-1)."""
    base = Path(dir_or_prefix)
    if base.is_dir():
        candidates, pattern = sorted(base.glob("*.et")), re.compile(r"(\d+)\.et$")
    else:
        candidates = sorted(base.parent.glob(f"{base.name}.*.et"))
        pattern = re.compile(re.escape(base.name) + r"\.(\d+)\.et$")
    ranked = {}
    for path in candidates:
        m = pattern.search(path.name)
        if m:
            ranked[int(m.group(1))] = path
    if not ranked:
        raise InputError("no Chakra trace files (expected DIR/*.<rank>.et or PREFIX.<rank>.et)", file=str(base))
    if sorted(ranked) != list(range(len(ranked))):
        raise InputError(f"trace ranks must be 0..N-1, found {sorted(ranked)}", file=str(base))
    return [ranked[r] for r in range(len(ranked))]


def read_trace(path: str | Path, rank: int = 0) -> RankTrace:
    """Parse one ``.et`` file; a malformed stream is an :class:`InputError` naming the file."""
    path = Path(path)
    meta_cls, node_cls = message_class("GlobalMetadata"), message_class("Node")
    try:
        payloads = list(read_delimited(path.read_bytes()))
    except (TraceFormatError, OSError) as err:
        raise InputError(f"not a Chakra ET stream: {err}", file=str(path)) from None
    if not payloads:
        raise InputError("empty trace: expected GlobalMetadata then Node messages", file=str(path))
    meta, nodes = meta_cls(), []
    for i, data in enumerate(payloads):
        message = meta if i == 0 else node_cls()
        try:
            message.ParseFromString(data)
        except Exception as err:  # protobuf's DecodeError
            what = "GlobalMetadata" if i == 0 else "Node"
            raise InputError(f"message {i} does not decode as a Chakra {what}: {err}", file=str(path)) from None
        if i:
            nodes.append(message)
    return RankTrace(rank, path, meta.version, nodes)


def load_traces(dir_or_prefix: str | Path) -> list[RankTrace]:
    return [read_trace(p, r) for r, p in enumerate(trace_files(dir_or_prefix))]


def write_trace(path: str | Path, nodes: list[Any], version: str = "0.0.4") -> Path:
    """Write one rank's trace: GlobalMetadata(version) then the nodes, length-delimited."""
    path = Path(path)
    with path.open("wb") as f:
        write_delimited(f, message_class("GlobalMetadata")(version=version))
        for node in nodes:
            write_delimited(f, node)
    return path


def _attrs(node) -> dict[str, Any]:  # noqa: ANN001
    return {a.name: attr_value(a) for a in node.attr}


@dataclass
class ChakraWorkload:
    """The DAG of a set of rank traces and what the report needs to split time per rank."""

    workload: Workload
    gpus: tuple[str, ...]
    compute_s: list[float]
    """Per rank: sum of its compute delays (s)."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Node kind (or collective) not modelled -> how many were skipped."""

    def warnings(self) -> list[str]:
        return [f"skipped {n} {kind} node(s): not modelled by fabricsim" for kind, n in self.skipped.items()]


def build_chakra(fabric: Fabric, gpus: list[str] | tuple[str, ...], traces: list[RankTrace], kernels: GpuKernels,
                 algo: str = "auto", protocol: str = "auto") -> ChakraWorkload:
    """The transfer DAG of ``traces`` with rank r on ``gpus[r]`` (module docstring)."""
    if len(gpus) != len(traces):
        raise InputError(f"{len(traces)} trace ranks need {len(traces)} GPUs, got {len(gpus)}", field="gpus")
    return _Builder(fabric, tuple(gpus), traces, kernels, algo, protocol).build()


class _Builder:
    def __init__(self, fabric, gpus, traces, kernels, algo, protocol) -> None:  # noqa: ANN001
        self.fabric, self.gpus, self.traces, self.kernels = fabric, gpus, traces, kernels
        self.algo, self.protocol = algo, protocol
        self.unit_of: dict[tuple[int, int], tuple] = {}
        self.members: dict[tuple, list[tuple[int, Any]]] = {}
        self.skipped: Counter = Counter()

    def _unit(self, key: tuple, rank: int, node) -> None:  # noqa: ANN001
        self.unit_of[(rank, node.id)] = key
        self.members.setdefault(key, []).append((rank, node))

    def _classify(self) -> None:
        coll_count: Counter = Counter()
        p2p_count: Counter = Counter()
        for t in self.traces:
            seen: set[int] = set()
            for node in t.nodes:
                if node.id in seen:
                    raise InputError(f"node id {node.id} appears twice", file=str(t.path))
                seen.add(node.id)
                kind = TYPE_NAME.get(node.type, f"type {node.type}")
                attrs = _attrs(node)
                if kind == "COMP_NODE":
                    self._unit(("comp", t.rank, node.id), t.rank, node)
                elif kind == "COMM_COLL_NODE":
                    group = str(attrs.get("pg_name") or "")
                    k = coll_count[(t.rank, group)]
                    coll_count[(t.rank, group)] += 1
                    self._unit(("coll", group, k), t.rank, node)
                elif kind in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
                    send = kind == "COMM_SEND_NODE"
                    peer = attrs.get("comm_dst" if send else "comm_src")
                    if peer is None or not 0 <= int(peer) < len(self.traces):
                        raise InputError(f"node {node.id} ({node.name}): {'comm_dst' if send else 'comm_src'} "
                                         f"must name a rank 0..{len(self.traces) - 1}, got {peer}", file=str(t.path))
                    src, dst = (t.rank, int(peer)) if send else (int(peer), t.rank)
                    tag = int(attrs.get("comm_tag") or 0)
                    k = p2p_count[(src, dst, tag, send)]
                    p2p_count[(src, dst, tag, send)] += 1
                    self._unit(("p2p", src, dst, tag, k), t.rank, node)
                else:
                    self.skipped[kind] += 1
                    self._unit(("skip", t.rank, node.id), t.rank, node)

    def _unit_deps(self, key: tuple) -> list[tuple]:
        deps = []
        for rank, node in self.members[key]:
            for d in list(node.data_deps) + list(node.ctrl_deps):
                dep = self.unit_of.get((rank, d))
                if dep is None:
                    raise InputError(f"node {node.id} ({node.name}) depends on node {d}, which rank {rank} "
                                     "does not have", file=str(self.traces[rank].path))
                if dep != key:
                    deps.append(dep)
        return deps

    def build(self) -> ChakraWorkload:
        self._classify()
        order = {key: i for i, key in enumerate(self.members)}
        graph = nx.DiGraph()
        graph.add_nodes_from(self.members)
        for key in self.members:
            graph.add_edges_from((dep, key) for dep in self._unit_deps(key))
        try:
            ordered = list(nx.lexicographical_topological_sort(graph, key=order.get))
        except nx.NetworkXUnfeasible:
            raise InputError("the traces' dependencies form a cycle (across ranks through collectives or "
                             "send/recv matching)", file=str(self.traces[0].path.parent)) from None
        dag = DagBuilder()
        done: dict[tuple, list[int]] = {}
        compute = [0.0] * len(self.traces)
        for key in ordered:
            after = sorted({tid for dep in graph.predecessors(key) for tid in done[dep]})
            done[key] = self._emit(key, after, dag, compute)
        meta = {"op": "chakra", "algo": self.algo, "protocol": self.protocol, "n": len(self.gpus),
                "bytes": sum(t.bytes for t in dag.transfers), "busbw_factor": 1.0}
        workload = dag.workload(f"chakra.{len(self.traces)}ranks", meta)
        return ChakraWorkload(workload, self.gpus, compute, dict(self.skipped))

    def _emit(self, key: tuple, after: list[int], dag: DagBuilder, compute: list[float]) -> list[int]:
        kind = key[0]
        members = self.members[key]
        if kind == "skip":
            return after
        if kind == "comp":
            rank, node = members[0]
            t = self._compute_s(node)
            compute[rank] += t
            gpu = self.gpus[rank]
            return [dag.add(gpu, gpu, 0, after, t, tag=f"chakra.r{rank}.{node.name or node.id}")]
        if kind == "p2p":
            _, src, dst, tag, _k = key
            sides = {TYPE_NAME.get(n.type): (r, n) for r, n in members}
            if len(sides) != 2:
                have = next(iter(sides))
                raise InputError(f"{have} from rank {src} to rank {dst} (tag {tag}) has no matching "
                                 f"{'COMM_RECV_NODE' if have == 'COMM_SEND_NODE' else 'COMM_SEND_NODE'}",
                                 file=str(self.traces[members[0][0]].path))
            rank, send = sides["COMM_SEND_NODE"]
            size = int(_attrs(send).get("comm_size") or 0)
            return [dag.add(self.gpus[src], self.gpus[dst], size, after, tag=f"chakra.p2p.{src}->{dst}.{send.name}")]
        return self._collective(key, members, after, dag)

    def _collective(self, key: tuple, members: list, after: list[int], dag: DagBuilder) -> list[int]:
        ranks = sorted({r for r, _ in members})
        first = members[0][1]
        attrs = _attrs(first)
        comm = COMM_NAME.get(int(attrs.get("comm_type", -1) if attrs.get("comm_type") is not None else -1))
        where = str(self.traces[members[0][0]].path)
        if comm is None:
            raise InputError(f"node {first.id} ({first.name}): COMM_COLL_NODE needs a comm_type attribute "
                             f"({', '.join(COMM_TYPES)})", file=where)
        gpus = [self.gpus[r] for r in ranks]
        if comm == "BARRIER" or len(ranks) < 2:
            return [dag.add(g, g, 0, after, tag=f"chakra.{key[1] or 'world'}.{comm.lower()}{key[2]}") for g in gpus]
        if comm not in OPS:
            self.skipped[f"{comm} collective"] += 1
            return after
        sizes = {int(_attrs(n).get("comm_size") or 0) for _, n in members}
        if len(sizes) != 1 or not next(iter(sizes)):
            raise InputError(f"collective {key[2]} of group {key[1] or 'default'!r} ({first.name}): ranks must "
                             f"agree on a positive comm_size, got {sorted(sizes)}", file=where)
        workload = build_collective(self.fabric, gpus, OPS[comm], sizes.pop(), algo=self.algo, protocol=self.protocol,
                                    kernel_fixed_s=self.kernels.kernel_s)  # NCCL's kernel, in the trace's launch mode
        return append(dag, workload, after, tag=f"chakra.{first.name or comm.lower()}.")

    def _compute_s(self, node) -> float:  # noqa: ANN001
        if node.duration_micros:
            return node.duration_micros * US
        attrs = _attrs(node)
        flops, nbytes = float(attrs.get("num_ops") or 0), float(attrs.get("tensor_size") or 0)
        return self.kernels.generic(node.name or "comp", flops, nbytes).time_s


def rank_report(built: ChakraWorkload, finish_s) -> dict[str, Any]:  # noqa: ANN001 - per-transfer finish times
    """Step time and, per rank, compute / end / exposed communication (us)."""
    ends = [0.0] * len(built.gpus)
    index = {g: r for r, g in enumerate(built.gpus)}
    for t in built.workload.transfers:
        for end in {t.src, t.dst}:
            if end in index:
                ends[index[end]] = max(ends[index[end]], float(finish_s[t.id]))
    per_rank = [{"rank": r, "gpu": g, "compute_us": built.compute_s[r] / US, "end_us": ends[r] / US,
                 "exposed_comm_us": max(0.0, ends[r] - built.compute_s[r]) / US} for r, g in enumerate(built.gpus)]
    return {"step_us": max(ends, default=0.0) / US, "per_rank": per_rank}
