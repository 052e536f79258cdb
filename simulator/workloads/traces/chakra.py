"""Chakra execution traces (MLCommons Chakra ET, the format ASTRA-sim reads) -> a transfer DAG.

One ``.et`` file per rank (``DIR/*.et`` or ``PREFIX.<rank>.et``), each a GlobalMetadata then Node
messages (chakra_schema.py). Rank r runs on the r-th chosen GPU. Node kinds:

- ``COMP_NODE``: a delay on its GPU: ``duration_micros`` if given, else the kernel model's cost of a
  kernel known only by its ``num_ops`` (FLOPs) and ``tensor_size`` (bytes) attributes
  (``hardware.kernels.GpuKernels.generic``: one fixed cost plus the longer of FLOPs at the sustained
  tensor rate and bytes at the saturated HBM rate).
- ``COMM_COLL_NODE``: the k-th collective of a process group (``pg_name`` attribute) is one
  collective over the group's ranks, built like ``bench`` builds it (``comm_type``, ``comm_size``
  bytes in the nccl-tests convention); it starts when every participant's dependencies are done.
  ``BARRIER`` joins the ranks without bytes. A collective without ``pg_name`` is in the world group,
  every rank; a named group's ranks are the ranks whose traces name it (two or more). Every rank of
  a group must have the same number of its collectives, and the k-th must agree on ``comm_type``
  and ``comm_size``: a rank that does not (its file cut short, a collective dropped or put in another
  group) is an error naming that rank's file, checked when the traces load (:func:`check_traces`).
- ``COMM_SEND_NODE`` / ``COMM_RECV_NODE``: matched by (sender, receiver, ``comm_tag``) in id
  order; one transfer of ``comm_size`` bytes that waits for both sides' dependencies.
- Data and control dependencies both order nodes. Other node types and collectives fabricsim
  does not model (REDUCE, GATHER, SCATTER) are skipped: their dependents wait for their
  dependencies instead, and each skipped kind is reported once with its count.

A rank's ``GlobalMetadata`` may say ``world_size`` (an int64 attribute; ``write_trace`` writes it):
the number of ranks, so a missing last rank's file is an error naming that file.

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
WORLD_SIZE = "world_size"
"""GlobalMetadata attribute: the number of ranks of the trace."""
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
    world_size: int | None = None
    """The number of ranks its GlobalMetadata says (``world_size`` attribute), if it says."""


def trace_files(dir_or_prefix: str | Path) -> list[Path]:
    """``DIR/*.et`` or ``PREFIX.<rank>.et``, ordered by rank (ranks must be 0..N-1, one file each)."""
    base = Path(dir_or_prefix)
    if base.is_dir():
        candidates, pattern = sorted(base.glob("*.et")), re.compile(r"(\d+)\.et$")
    else:
        candidates = sorted(base.parent.glob(f"{base.name}.*.et"))
        pattern = re.compile(re.escape(base.name) + r"\.(\d+)\.et$")
    ranked: dict[int, Path] = {}
    for path in candidates:
        m = pattern.search(path.name)
        if m:
            rank = int(m.group(1))
            if rank in ranked:
                raise InputError(f"a second trace file for rank {rank} beside {ranked[rank].name}; keep one "
                                 f"(PREFIX.{rank}.et)", file=str(path))
            ranked[rank] = path
    if not ranked:
        raise InputError("no Chakra trace files (expected DIR/*.<rank>.et or PREFIX.<rank>.et)", file=str(base))
    if sorted(ranked) != list(range(len(ranked))):
        missing = min(set(range(max(ranked) + 1)) - set(ranked))
        raise InputError(f"no such file: trace ranks must be 0..N-1, found {sorted(ranked)}, none for rank "
                         f"{missing}", file=str(rank_file(base, missing)))
    return [ranked[r] for r in range(len(ranked))]


def rank_file(dir_or_prefix: str | Path, rank: int) -> Path:
    """The file rank ``rank``'s trace would have: ``PREFIX.<rank>.et`` (``DIR/*.<rank>.et`` for a folder)."""
    base = Path(dir_or_prefix)
    return base / f"*.{rank}.et" if base.is_dir() else base.parent / f"{base.name}.{rank}.et"


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
    world = {a.name: attr_value(a) for a in meta.attr}.get(WORLD_SIZE)
    if world is not None and (isinstance(world, bool) or not isinstance(world, int) or world < 1):
        raise InputError(f"GlobalMetadata {WORLD_SIZE}: must be a positive integer (the number of ranks), "
                         f"got {world!r}", file=str(path))
    return RankTrace(rank, path, meta.version, nodes, world)


def load_traces(dir_or_prefix: str | Path) -> list[RankTrace]:
    """Every rank's trace, checked across ranks (:func:`check_traces`)."""
    traces = [read_trace(p, r) for r, p in enumerate(trace_files(dir_or_prefix))]
    check_traces(traces, dir_or_prefix)
    return traces


def write_trace(path: str | Path, nodes: list[Any], version: str = "0.0.4", world_size: int | None = None) -> Path:
    """Write one rank's trace: GlobalMetadata(version, and ``world_size`` if given) then the nodes,
    length-delimited."""
    path = Path(path)
    meta = message_class("GlobalMetadata")(version=version)
    if world_size is not None:
        meta.attr.add(name=WORLD_SIZE, int64_val=world_size)
    with path.open("wb") as f:
        write_delimited(f, meta)
        for node in nodes:
            write_delimited(f, node)
    return path


def _attrs(node) -> dict[str, Any]:  # noqa: ANN001
    return {a.name: attr_value(a) for a in node.attr}


def _where(t: RankTrace) -> str:
    return str(t.path)


def _int_attr(t: RankTrace, node, attrs: dict[str, Any], name: str, default: int | None = 0,  # noqa: ANN001
              low: int = 0) -> int | None:
    """Attribute ``name`` of ``node`` as an integer >= ``low`` (``default`` when absent)."""
    value = attrs.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (
            float("inf"), float("-inf")) or int(value) != value or value < low:
        raise InputError(f"node {node.id} ({node.name}): attribute {name}: must be an integer >= {low}, "
                         f"got {value!r}", file=_where(t))
    return int(value)


def _float_attr(t: RankTrace, node, attrs: dict[str, Any], name: str) -> float:  # noqa: ANN001
    """Attribute ``name`` of ``node`` as a finite number >= 0 (0 when absent)."""
    value = attrs.get(name)
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise InputError(f"node {node.id} ({node.name}): attribute {name}: must be a finite number >= 0, "
                         f"got {value!r}", file=_where(t))
    return float(value)


def _comm_type(t: RankTrace, node, attrs: dict[str, Any]) -> str:  # noqa: ANN001
    value = attrs.get("comm_type")
    name = COMM_NAME.get(value) if isinstance(value, int) and not isinstance(value, bool) else (
        value if isinstance(value, str) and value in COMM_TYPES else None)
    if name is None:
        what = "needs a comm_type attribute" if value is None else f"comm_type {value!r} is not one of"
        raise InputError(f"node {node.id} ({node.name}): COMM_COLL_NODE {what} "
                         f"({', '.join(f'{k}={v}' for k, v in COMM_TYPES.items())})", file=_where(t))
    return name


@dataclass(frozen=True)
class _Coll:
    """One COMM_COLL_NODE as the cross-rank check sees it."""

    node: Any
    comm: str
    size: int


def _ranks_text(ranks: list[int]) -> str:
    """``rank 3``, ``ranks 0, 2`` or ``ranks 0-4, 6, 7`` (runs of three or more as a range)."""
    parts, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        parts += [f"{ranks[i]}-{ranks[j]}"] if j - i >= 2 else [str(r) for r in ranks[i:j + 1]]
        i = j + 1
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(parts)


def _majority(values: dict[int, Any]) -> Any:  # noqa: ANN401
    """The value most ranks have (ties: the one the lowest such rank has)."""
    counts = Counter(values.values())
    best = max(counts.values())
    return next(v for v in values.values() if counts[v] == best)


def check_traces(traces: list[RankTrace], dir_or_prefix: str | Path | None = None) -> None:
    """Check the traces across ranks; each problem is an :class:`InputError` naming the file of the
    rank that is wrong: ``world_size`` against the files found; every node's attributes (sizes,
    FLOPs and peers are non-negative numbers of the right kind); every process group's collectives
    (module docstring): a group named by one rank only, a rank with fewer or more of a group's
    collectives than the others, a k-th collective of another ``comm_type`` or ``comm_size``; a node id
    twice in a rank, a dependency on a node the rank lacks, an unmatched send or receive, a cycle."""
    n = len(traces)
    if not traces:
        return
    declared = {t.rank: t.world_size for t in traces if t.world_size is not None}
    if declared:
        world = _majority(declared)
        for t in traces:
            if t.world_size is not None and t.world_size != world:
                raise InputError(f"GlobalMetadata {WORLD_SIZE} {t.world_size}, but "
                                 f"{_ranks_text(sorted(r for r, w in declared.items() if w == world))} say {world}",
                                 file=_where(t))
        if world > n:
            missing = rank_file(dir_or_prefix, n) if dir_or_prefix is not None else f"rank {n}'s trace"
            raise InputError(f"no such file: the traces say {WORLD_SIZE} {world} (ranks 0..{world - 1}) but only "
                             f"ranks 0..{n - 1} have a file", file=str(missing))
        if world < n:
            raise InputError(f"rank {world} is one too many: the traces say {WORLD_SIZE} {world} "
                             f"(ranks 0..{world - 1})", file=_where(traces[world]))
    groups: dict[str, dict[int, list[_Coll]]] = {}
    for t in traces:
        for node in t.nodes:
            attrs = _attrs(node)
            kind = TYPE_NAME.get(node.type)
            if kind == "COMP_NODE":
                _float_attr(t, node, attrs, "num_ops")
                _float_attr(t, node, attrs, "tensor_size")
            elif kind in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
                send = kind == "COMM_SEND_NODE"
                peer = _int_attr(t, node, attrs, "comm_dst" if send else "comm_src", default=None)
                if peer is None or peer >= n:
                    raise InputError(f"node {node.id} ({node.name}): {'comm_dst' if send else 'comm_src'} "
                                     f"must name a rank 0..{n - 1}, got {peer}", file=_where(t))
                _int_attr(t, node, attrs, "comm_size")
                _int_attr(t, node, attrs, "comm_tag", low=-(1 << 63))
            elif kind == "COMM_COLL_NODE":
                group = attrs.get("pg_name")
                if group is not None and not isinstance(group, str):
                    raise InputError(f"node {node.id} ({node.name}): attribute pg_name: must be a string, "
                                     f"got {group!r}", file=_where(t))
                coll = _Coll(node, _comm_type(t, node, attrs), _int_attr(t, node, attrs, "comm_size"))
                groups.setdefault(group or "", {}).setdefault(t.rank, []).append(coll)
    for group, per_rank in sorted(groups.items(), key=lambda g: (g[0] == "", g[0])):
        _check_group(traces, group, per_rank)
    _Builder(None, (), traces, None, "auto", "auto").plan()  # node ids, dependencies, send/recv pairs, cycles


def _check_group(traces: list[RankTrace], group: str, per_rank: dict[int, list[_Coll]]) -> None:
    name = f"process group {group!r}" if group else "the world process group (no pg_name: every rank)"
    members = list(range(len(traces))) if not group else sorted(per_rank)
    if group and len(members) == 1:
        (rank,) = members
        first = per_rank[rank][0].node
        raise InputError(f"node {first.id} ({first.name}): pg_name {group!r} is named by rank {rank} only; a "
                         "collective needs its group's other ranks to name the same pg_name", file=_where(traces[rank]))
    seqs = {r: per_rank.get(r, []) for r in members}
    counts = {r: len(seq) for r, seq in seqs.items()}
    common = max(c for c, k in Counter(counts.values()).items() if k == max(Counter(counts.values()).values()))
    for r in members:
        if counts[r] != common:
            others = _ranks_text([q for q in members if counts[q] == common])
            if counts[r] < common:
                ref = next(seqs[q][counts[r]].node for q in members if counts[q] == common)
                tail = f"its collective {counts[r]} ({ref.name or ref.id} on the others) is missing"
            else:
                extra = seqs[r][common].node
                tail = f"its collective {common} (node {extra.id}, {extra.name}) has no partner on the other ranks"
            raise InputError(f"rank {r} has {counts[r]} collective(s) of {name}, {others} have {common}: {tail} "
                             "(file cut short, a collective dropped or in another pg_name?)", file=_where(traces[r]))
    for k in range(common):
        for what in ("comm", "size"):
            values = {r: getattr(seqs[r][k], what) for r in members}
            expect = _majority(values)
            for r in members:
                if values[r] != expect:
                    node = seqs[r][k].node
                    field_name = "comm_type" if what == "comm" else "comm_size"
                    agree = _ranks_text([q for q in members if values[q] == expect])
                    raise InputError(f"node {node.id} ({node.name}): collective {k} of {name} has {field_name} "
                                     f"{values[r]}, {agree} have {expect}; every rank of a group must agree",
                                     file=_where(traces[r]))
        coll = seqs[members[0]][k]
        if coll.comm in OPS and coll.size <= 0:
            raise InputError(f"node {coll.node.id} ({coll.node.name}): collective {k} of {name}: {coll.comm} needs a "
                             "positive comm_size (bytes)", file=_where(traces[members[0]]))


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
    check_traces(traces)
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

    def plan(self) -> tuple[nx.DiGraph, list[tuple]]:
        """The graph of units (a compute node, a collective across ranks, a send/recv pair) and an
        order to emit them in; a dependency on a missing node, an unmatched send or receive, or a
        cycle is an :class:`InputError` naming a rank's file. Needs no fabric."""
        self._classify()
        for key, members in self.members.items():
            if key[0] == "p2p":
                kinds = {TYPE_NAME.get(n.type) for _, n in members}
                if len(kinds) != 2:
                    _, src, dst, tag, _k = key
                    have = next(iter(kinds))
                    raise InputError(f"{have} from rank {src} to rank {dst} (tag {tag}) has no matching "
                                     f"{'COMM_RECV_NODE' if have == 'COMM_SEND_NODE' else 'COMM_SEND_NODE'}",
                                     file=str(self.traces[members[0][0]].path))
        order = {key: i for i, key in enumerate(self.members)}
        graph = nx.DiGraph()
        graph.add_nodes_from(self.members)
        for key in self.members:
            graph.add_edges_from((dep, key) for dep in self._unit_deps(key))
        try:
            return graph, list(nx.lexicographical_topological_sort(graph, key=order.get))
        except nx.NetworkXUnfeasible:
            cycle = [edge[0] for edge in nx.find_cycle(graph)]
            rank, node, later = self._backward(cycle)
            why = f", through node {later}, later in its file" if later is not None else ""
            raise InputError(f"node {node.id} ({node.name}) waits for itself{why}: the traces' dependencies form "
                             f"a cycle of {len(cycle)} steps (within a rank, or across ranks through collectives "
                             "or send/recv matching)", file=str(self.traces[rank].path)) from None

    def _backward(self, cycle: list[tuple]) -> tuple[int, Any, int | None]:
        """The likely culprit of a cycle: a node on it that depends on a node later in its own
        file (rank, node, that later node's id); else the cycle's first node of one rank."""
        on_cycle = set(cycle)
        for t in self.traces:
            position = {n.id: i for i, n in enumerate(t.nodes)}
            for i, node in enumerate(t.nodes):
                if self.unit_of.get((t.rank, node.id)) in on_cycle:
                    for d in list(node.data_deps) + list(node.ctrl_deps):
                        if position.get(d, -1) > i:
                            return t.rank, node, d
        key = next((k for k in cycle if len(self.members[k]) == 1), cycle[0])
        rank, node = self.members[key][0]
        return rank, node, None

    def build(self) -> ChakraWorkload:
        graph, ordered = self.plan()
        dag = DagBuilder()
        done: dict[tuple, list[int]] = {}
        compute = [0.0] * len(self.traces)
        for key in ordered:
            after = sorted({tid for dep in graph.predecessors(key) for tid in done[dep]})
            done[key] = self._emit(key, after, dag, compute)
        # "bytes": every GPU-to-GPU transfer of the trace once, as its collectives' algorithms send them
        # (so it differs between systems), not link bytes hop by hop nor the nccl-tests sizes of its
        # collectives; reports label it "bytes sent GPU to GPU" (docs/reference/glossary.md, "bytes")
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
        where = str(self.traces[members[0][0]].path)
        comm = _comm_type(self.traces[members[0][0]], first, attrs)
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
