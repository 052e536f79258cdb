"""``bench`` as one request -> plan -> outcome path: ``fabricsim bench`` parses its flags into a
:class:`BenchRequest`, ``simulator.api.bench`` builds the same request from its arguments, and both
get the same :class:`BenchOutcome` from :func:`run_bench` (the CLI renders it; ``--json`` writes
``outcome.to_dict()``), so the two can never give different rows for the same sizes.

    request = BenchRequest("hgx_h100", op="all_reduce", sizes="1M:1G", dtype="half")
    planned = plan_bench(request)      # fabric built, GPUs placed, sizes rounded, inputs listed
    outcome = run_bench(planned)       # rows, healthy vs degraded rows with faults, the engine plan
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from simulator.engine.packet import EngineObserver
from simulator.engine.result import RunResult
from simulator.engine.transfer import Workload
from simulator.errors import InputError, unknown_choice
from simulator.metrics.collective_stats import TYPE_SIZE, round_to_elements
from simulator.runner.degraded import healthy_vs_degraded
from simulator.runner.estimate import SweepPlan
from simulator.runner.fabrics import load_fabric
from simulator.runner.sweeps import SweepSpec, per_tray_job, select_gpus, size_list, sweep
from simulator.runner.tables import rows_frame
from simulator.shipped import find
from simulator.topology.builder import topology_files
from simulator.topology.fabric import Fabric, SwitchScheduling
from simulator.topology.fault_file import fault_inputs
from simulator.topology.partitions import per_tray
from simulator.topology.placement import Placement


@dataclass(frozen=True, slots=True)
class BenchRequest:
    """What ``bench`` is asked: one collective or copy of a topology, swept over message sizes.
    Every field has the meaning of the ``fabricsim bench`` flag of the same name."""

    topology: str
    """A topology file, or a shipped topology by name (``hgx_h100``)."""
    op: str = "all_reduce"
    sizes: str = "1M:1G"
    """``LO:HI`` (multiplied by ``step_factor``), a list ``1M,64M``, or one size."""
    step_factor: int = 2
    dtype: str = "float"
    """nccl-tests' ``-d``: sets the count column and rounds each size down to whole elements."""
    gpus: int | None = None
    """GPUs of the job: the first in rank order, or where ``placement`` puts them (None: all, or
    what the placement gives)."""
    placement: Placement | None = None
    root: int = 0
    algo: str = "auto"
    protocol: str = "auto"
    channels: int | None = None
    """NCCL channels (CTAs) per call; None: NCCL's choice per size."""
    timing: str = "nccl-tests"
    engine: str = "auto"
    packet_bytes: int | None = None
    seed: int = 0
    switch: SwitchScheduling | None = None
    """Switch scheduling defaults of the packet engine (the --arbiter ... --queueing flags)."""
    faults: tuple[str, ...] = ()
    """``--fault`` values: ``KIND:key=value,...`` or fault files."""
    mnnvl: bool = True
    """NCCL_MNNVL_ENABLE: False runs every compute tray of an NVL72 rack as its own NCCL node, NVLink
    inside it and the network between trays (``runner.sweeps.per_tray_job``)."""


@dataclass(frozen=True, slots=True)
class BenchPlan:
    """A bench request made concrete before anything runs."""

    request: BenchRequest
    fabric: Fabric
    """The fabric the rows are measured on (with the request's faults)."""
    healthy: Fabric
    """The same fabric without faults (``fabric`` itself when there are none)."""
    gpus: tuple[str, ...]
    """The job's GPUs, in rank order."""
    spec: SweepSpec
    """The sweep: sizes rounded to whole elements, duplicates dropped."""
    inputs: tuple[Path, ...]
    """Every file the run reads (outputs may not overwrite them)."""
    warnings: tuple[str, ...]
    """What the faults did beyond the rows (a bit error rate that takes links down)."""

    @property
    def placed(self) -> str:
        """How the GPUs were placed, in words ('' for the first N in rank order)."""
        return self.request.placement.describe() if self.request.placement else ""


@dataclass(frozen=True)
class BenchOutcome:
    """What ``bench`` found: one nccl-tests row per size (``rows``: bytes, time_us, algbw_GBps,
    busbw_GBps, algo, protocol, channels, engine, energy_J, ... as ``runner.sweeps.run_one``), and
    with faults the healthy vs degraded rows (``compared``)."""

    topology: str
    system: str
    op: str
    gpus: int
    rows: list[dict] = field(default_factory=list)
    placement: str | None = None
    nodes: dict[str, int] = field(default_factory=dict)
    """GPUs of the job per node, in order (what an uneven placement looks like)."""
    algo: str = "auto"
    engine: str = "auto"
    """The engine asked for (``rows[i]["engine"]`` says which ran)."""
    timing: str = "nccl-tests"
    dtype: str = "float"
    root: int = 0
    faults: list[str] = field(default_factory=list)
    compared: list[dict] = field(default_factory=list)
    """With faults: per size the degraded row beside the same sweep on the healthy fabric
    (``runner.degraded.healthy_vs_degraded``); empty without."""
    warnings: list[str] = field(default_factory=list)
    plan: SweepPlan | None = None
    """The engine every size ran on, why (``asked``, the packet-hops ``auto`` weighed) and each
    size's packet-engine unit."""

    def to_dict(self) -> dict:
        """The ``--json`` document of ``fabricsim bench``."""
        out: dict[str, Any] = {"topology": self.topology, "system": self.system, "op": self.op, "gpus": self.gpus,
                               "placement": self.placement, "nodes": dict(self.nodes), "algo": self.algo,
                               "engine": self.engine, "timing": self.timing, "dtype": self.dtype, "root": self.root,
                               "faults": list(self.faults), "rows": [dict(r) for r in self.rows]}
        if self.compared:
            out["healthy_vs_degraded"] = [{k: v for k, v in r.items() if k not in ("healthy", "degraded")}
                                          for r in self.compared]
        if self.plan is not None:
            out["plan"] = {"engine": self.plan.engine, "asked": self.plan.asked,
                           "packet_bytes": list(self.plan.units) if self.plan.engine == "packet" else None,
                           "weighed_packet_hops": self.plan.weighed_hops, "budget_packet_hops": self.plan.budget}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

    def to_pandas(self) -> Any:
        """One DataFrame row per size (nested values as ``key.subkey`` columns); needs pandas."""
        return rows_frame(self.rows)


def plan_bench(request: BenchRequest) -> BenchPlan:
    """The request checked and made concrete: fabric built (healthy and with the faults), GPUs
    placed, sizes listed and rounded to whole elements of ``dtype``; errors name the flag."""
    if request.dtype not in TYPE_SIZE:
        raise unknown_choice("dtype", request.dtype, list(TYPE_SIZE), field="dtype")
    fabric = load_fabric(request.topology, request.faults)
    healthy = load_fabric(request.topology, healthy=True) if fabric.faults else fabric
    inputs = (*topology_files(find(request.topology, "topologies")), *fault_inputs(request.faults))
    placement = request.placement
    count = request.gpus or (None if placement else len(fabric.gpus))
    if not request.mnnvl:  # placed on the racks as asked, run where NCCL sees every tray as a node
        select_gpus(fabric, count, placement, field="--gpus")
        fabric, placement = per_tray_job(fabric, count, placement, "NCCL_MNNVL_ENABLE=0", field="--no-mnnvl")
        healthy = per_tray(healthy)
    placed = select_gpus(fabric, count, placement, field="--gpus")
    n = len(placed)
    if request.root >= n:
        raise InputError(f"root rank {request.root} does not exist: the run has ranks 0..{n - 1}", field="root")
    wanted = size_list(request.sizes, request.step_factor)
    rounded = tuple(dict.fromkeys(round_to_elements(request.op, s, n, request.dtype) for s in wanted))
    spec = SweepSpec(op=request.op, gpus=n, sizes=rounded, algo=request.algo, root=request.root,
                     timing=request.timing, protocol=request.protocol, channels=request.channels,
                     engine=request.engine, packet_bytes=request.packet_bytes, seed=request.seed,
                     switch=request.switch, placement=placement)
    warnings = tuple(w for w in fabric.warnings if w not in healthy.warnings)
    return BenchPlan(request=request, fabric=fabric, healthy=healthy, gpus=tuple(placed), spec=spec,
                     inputs=tuple(inputs), warnings=warnings)


def run_bench(planned: BenchPlan | BenchRequest, observer: EngineObserver | None = None,
              on_row: Callable[[dict], None] | None = None, on_plan: Callable[[SweepPlan], None] | None = None,
              on_hops: Callable[[int, int], None] | None = None,
              on_result: Callable[[Workload, RunResult], None] | None = None) -> BenchOutcome:
    """Run a planned (or a plain) request: the sweep (``runner.sweeps.sweep``; the callbacks watch,
    they never change what runs), then with faults the same sweep on the healthy fabric."""
    planned = planned if isinstance(planned, BenchPlan) else plan_bench(planned)
    request, fabric = planned.request, planned.fabric
    seen: list[SweepPlan] = []

    def heard(plan: SweepPlan) -> None:
        seen.append(plan)
        if on_plan:
            on_plan(plan)

    rows = sweep(fabric, planned.spec, on_row=on_row, observer=observer, on_result=on_result, on_plan=heard,
                 on_hops=on_hops)
    compared = healthy_vs_degraded(planned.healthy, fabric, planned.spec, rows) if fabric.faults else []
    return BenchOutcome(topology=str(request.topology), system=fabric.name, op=request.op, gpus=len(planned.gpus),
                        rows=rows, placement=planned.placed or None, nodes=node_counts(fabric, planned.gpus),
                        algo=request.algo, engine=request.engine, timing=request.timing, dtype=request.dtype,
                        root=request.root, faults=list(fabric.faults), compared=compared,
                        warnings=list(planned.warnings), plan=seen[0] if seen else None)


def node_counts(fabric: Fabric, gpus: tuple[str, ...] | list[str]) -> dict[str, int]:
    """The job's GPUs per node (``Node.group``), in order: what an uneven placement looks like."""
    counts: dict[str, int] = {}
    for g in gpus:
        name = fabric.nodes[g].group or fabric.name
        counts[name] = counts.get(name, 0) + 1
    return counts
