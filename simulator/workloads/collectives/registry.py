"""The algorithm registry: one record per collective algorithm, holding every rule decided by its name.

Each algorithm's file (``ring.py``, ``tree.py``, ``direct.py``, ``nvls.py``, ``hierarchical.py``)
declares ``RECORD = AlgorithmRecord(...)``: its builder, the ops it serves, when it cannot run, when
``algo=auto`` considers it, whether its channels take rail-aware orders, its CTA rule and the protocol
table row its latencies come from. The package registers the shipped records in its order
(``collectives.SHIPPED``: the tuner's tie order and every listing's); ``register`` adds another
(a test's temporary algorithm) and ``unregister`` takes it out. Nothing else in the package
compares an algorithm's name: the tuner, the channel count and ``why_not`` read the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from simulator.errors import InputError, unknown_choice
from simulator.hardware.protocols import ProtocolTable
from simulator.topology.fabric import Fabric
from simulator.workloads.collectives.base import CollectiveSpec, DagBuilder, route_channels
from simulator.workloads.collectives.gpu_side import CtaRule, GpuSide
from simulator.workloads.collectives.rails import network_nodes, rail_channels


def runs_anywhere(fabric: Fabric, gpus: tuple[str, ...]) -> str | None:
    """The ``applicable`` of an algorithm that runs on any fabric and any 2 or more GPUs: None."""
    return None


@dataclass(frozen=True, slots=True)
class AlgorithmRecord:
    """Everything the code decides about one collective algorithm."""

    name: str
    """What ``algo=`` calls it (``--algo``, scenarios, workload meta ``algo``)."""
    ops: frozenset[str]
    """The ops its builder implements (``ops.OPS`` names)."""
    build: Callable[[CollectiveSpec, DagBuilder], None]
    """Emits the transfers of one call (``spec``) into the DAG builder."""
    help: str
    """One line for listings: what it does."""
    applicable: Callable[[Fabric, tuple[str, ...]], str | None] = runs_anywhere
    """(fabric, GPUs) -> None if it can run there, else the reason (for any protocol and op)."""
    ctas: CtaRule = CtaRule()
    """Its CTA (NCCL channel) count: default and scaling with the message (``gpu_side.CtaRule``)."""
    auto_ops: frozenset[str] | None = None
    """The ops for which ``algo=auto`` considers it (None: all of ``ops``); it stays available by name
    for the others."""
    auto_multi_node_only: bool = False
    """``algo=auto`` considers it only when the GPUs span nodes joined by the network
    (``rails.network_nodes``: one GPU per node counts)."""
    rail_aware: bool = False
    """Its channels take rail-aware orders on multi-node fabrics (``rails.py``), so its default CTA
    count is rounded to a multiple of the GPUs per node there, within NCCL's channel limits
    (``rails.rail_channels``)."""
    nccl_algo: str = ""
    """The NCCL_ALGO value naming this algorithm (NCCL src/enqueue.cc, ``ncclAlgoStr``: Tree, Ring,
    CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT; case-insensitive as NCCL reads it), so a logged
    run's setting maps to it; "": NCCL has no algorithm of that one name."""
    nccl_rating: Callable[[int, str], float] | None = None
    """The algbw NCCL's tuner rates this algorithm at per unit of the bus bandwidth of its channels,
    for ``n`` ranks and an op (src/graph/tuning.cc ``ncclTopoTuneModel``: across more than two
    nodes Ring and Tree both take ``bwInter`` of graphs of one channel count, and at one GPU per
    node PAT and Ring one bandwidth: Ring nRanks / nsteps, n / (2(n-1)) for all_reduce and
    n / (n-1) for all_gather and reduce_scatter; Tree all_reduce busBw x 0.92 then x 0.5; PAT
    busBw x 0.75, not converted). The tuner ranks the rated candidates as NCCL does
    (``tuner.choose``); None: by its estimate alone."""
    nccl_since: tuple[int, int] | None = None
    """The NCCL release (major, minor) that brought the algorithm (the first tag defining its
    ``NCCL_ALGO_*``: NVLS 2.17, NVLSTree 2.18, CollNetChain 2.14, PAT 2.23); a log of an older NCCL
    cannot have run it. None: in every NCCL that logs are read from, or not NCCL's."""
    table_row: str = ""
    """The protocol table's algorithm row (``parts/protocols.yaml``) giving the protocols it runs and
    its base and step latencies; "": its own name."""

    @property
    def row(self) -> str:
        """The protocol table row it reads (``table_row``, else its name)."""
        return self.table_row or self.name

    def auto_candidate(self, fabric: Fabric, gpus: tuple[str, ...], op: str) -> bool:
        """``algo=auto`` considers it for ``op`` on these GPUs (``auto_ops``, ``auto_multi_node_only``)."""
        if self.auto_ops is not None and op not in self.auto_ops:
            return False
        return not self.auto_multi_node_only or network_nodes(fabric, gpus) is not None

    def call_ctas(self, fabric: Fabric, gpus: tuple[str, ...], gpu: GpuSide, op: str, protocol: str,
                  nbytes: int) -> int:
        """NCCL's CTA (channel) count for one call of ``nbytes``: the architecture's default under
        ``ctas`` (one per equal-cost route on fabrics without a GPU side: ``base.route_channels``),
        fewer for small messages (``GpuSide.ctas_for_size``), rounded to the rails on multi-node
        fabrics when ``rail_aware``."""
        ctas = gpu.default_ctas(op, self.ctas) or route_channels(fabric, gpus)
        ctas = gpu.ctas_for_size(ctas, op, self.ctas, protocol, nbytes, len(gpus))
        if self.rail_aware:
            ctas = rail_channels(fabric, gpus, ctas)
        return ctas


ALGORITHMS: dict[str, AlgorithmRecord] = {}
"""Name -> record of every registered algorithm, in registration order."""


def register(record: AlgorithmRecord) -> AlgorithmRecord:
    """Add ``record`` to ``ALGORITHMS`` (after the others) and return it; a name taken already, or
    ``auto``, is a ``ValueError``."""
    if record.name in ALGORITHMS or record.name == "auto":
        raise ValueError(f"an algorithm named {record.name!r} is registered already")
    ALGORITHMS[record.name] = record
    return record


def unregister(name: str) -> AlgorithmRecord:
    """Take the algorithm ``name`` out of ``ALGORITHMS`` (a ``KeyError`` if absent) and return its record."""
    return ALGORITHMS.pop(name)


def algorithm_help(details: bool = False) -> str:
    """The choices of ``algo`` in registry order: "ring, tree, ... or auto; ..." (and how to give a
    list to choose from); with ``details``, one "name: help" line per algorithm."""
    if details:
        return "\n".join(f"{r.name}: {r.help}" for r in ALGORITHMS.values())
    return (", ".join(ALGORITHMS) + " or auto; a comma list lets the tuner choose among those, ^ and a list "
            "among the others")


def _listed(algo: str) -> tuple[bool, list[str]] | None:
    """A choice list (``ring,tree`` or ``^nvls``) as (leave out?, its names stripped, empty items
    left out); None for ``algo`` that is no list."""
    excluding = algo.strip().startswith("^")
    if "," not in algo and not excluding:
        return None
    return excluding, [a.strip() for a in algo.strip().lstrip("^").split(",") if a.strip()]


def choices(algo: str) -> list[str] | None:
    """The registered algorithms ``algo`` lets the tuner choose among, in registry order: all of them
    for ``auto``; for a comma list (NCCL_ALGO's syntax: ``ring,tree``) those it names; after ``^``
    all but those it names (``^nvls,nvls_tree``, as NCCL_ALGO=^NVLS); None for one algorithm's name
    (no choice: that algorithm runs)."""
    if algo == "auto":
        return list(ALGORITHMS)
    listed = _listed(algo)
    if listed is None:
        return None
    excluding, names = listed
    return [a for a in ALGORITHMS if (a in names) != excluding]


def check_algo(algo: str) -> str:
    """``algo`` if it names a registered algorithm, ``auto``, or a choice list of registered names
    (``choices``: ``ring,tree``, ``^nvls``; returned without spaces), else an input error with a
    suggestion."""
    if algo == "auto" or algo in ALGORITHMS:
        return algo
    listed = _listed(algo)
    if listed is None:
        raise unknown_choice("algo", algo, ["auto", *ALGORITHMS], field="algo")
    excluding, names = listed
    for name in names:
        if name not in ALGORITHMS:
            raise unknown_choice("algo", name, ["auto", *ALGORITHMS], field="algo")
    if not names or not choices(algo):
        raise InputError(f"algo {algo!r} leaves no algorithm to choose from (name some of "
                         f"{', '.join(ALGORITHMS)})", field="algo")
    return ("^" if excluding else "") + ",".join(names)


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
    if reason is None and not table.supports(a.row, protocol):
        reason = f"{algo} does not run protocol {protocol}"
    return reason
