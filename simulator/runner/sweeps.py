"""Message-size sweeps: build a collective or copy per size, simulate it, return nccl-tests rows.

Shared by ``fabricsim bench``, ``compare`` and ``validate`` so all three measure the same way.
Each row: ``bytes``, ``time_us``, ``algbw_GBps``, ``busbw_GBps`` (GB = 1e9 B) plus what the
run chose and cost: ``algo``, ``protocol``, ``engine``, ``p99_latency_us`` (packet engine),
``energy_J``, ``avg_power_W``, ``transport_pJ_per_byte`` (dynamic energy per byte moved; static
power apart), ``dynamic_J`` (by component kind),
``busiest_link``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from simulator.engine.dispatch import ENGINES, simulate
from simulator.engine.flow import FlowConfig
from simulator.engine.packet import EngineObserver, PacketConfig
from simulator.engine.result import RunResult
from simulator.engine.transfer import Workload
from simulator.errors import InputError, unknown_choice
from simulator.metrics.bottleneck import busiest_link
from simulator.metrics.collective_stats import row as nccl_row
from simulator.metrics.energy import energy_report
from simulator.runner.estimate import SweepPlan, plan_sweep
from simulator.runner.gpu_kernels import gpu_kernels
from simulator.runner.packet_unit import RunUnit, choose
from simulator.topology.fabric import Fabric, SwitchScheduling
from simulator.topology.partitions import per_tray
from simulator.topology.placement import Placement, place
from simulator.workloads.collectives import OPS, build_collective
from simulator.workloads.copies import COPIES, build_copy
from simulator.workloads.sizes import MAX_SIZES, size_list  # noqa: F401  (re-exported for the CLI)



@dataclass(frozen=True, slots=True)
class SweepSpec:
    """What to measure: an operation on ``gpus`` GPUs of a topology (the first in rank order, or
    where ``placement`` puts them), at each size."""

    op: str
    gpus: int
    sizes: tuple[int, ...]
    algo: str = "auto"
    protocol: str = "auto"
    engine: str = "auto"
    packet_bytes: int | None = None
    """Transfer unit of the packet engine; None: the engine's default."""
    channels: int | None = None
    seed: int = 0
    switch: SwitchScheduling | None = None
    """Packet engine: switch scheduling defaults (arbiter, crossbar, iterations, speedup, queueing)."""
    root: int = 0
    """Rank of the root of broadcast (nccl-tests -r)."""
    timing: str = "nccl-tests"
    """How the call is timed (``TIMINGS``): as nccl-tests does, back-to-back iterations that hide
    the kernel launch, or ``single``: one call between two CUDA events (how PyTorch users time it),
    which exposes the launch (``launch_s`` of the GPU architecture); or ``graph``: back-to-back calls
    captured in one CUDA graph, each paying the GPU's per-kernel fixed cost in a graph (the kernel
    model's ``graph_kernel_s``, as every other kernel)."""
    placement: Placement | None = None
    """Which GPUs (``topology.placement``): per rack, tray or node, a rank list or a host list;
    None: the first ``gpus`` in rank order."""


TIMINGS = ("nccl-tests", "single", "graph")


def select_gpus(fabric: Fabric, count: int | None, placement: Placement | None = None,
                field: str = "gpus") -> list[str]:
    """The GPUs of a job of ``count`` GPUs: the first in rank order (nccl-tests -g N on one node, or
    the first N ranks), or where ``placement`` puts them (``topology.placement``); ``field`` names
    the count in errors."""
    if placement is None or placement.is_default:
        if count is None or count < 1 or count > len(fabric.gpus):
            raise InputError(f"{fabric.name} has {len(fabric.gpus)} GPUs, asked for {count}", field=field)
        return fabric.gpus[:count]
    return list(place(fabric, count, placement))


def per_tray_job(fabric: Fabric, count: int | None, placement: Placement | None, said: str,
                 **where) -> tuple[Fabric, Placement]:
    """MNNVL off (NCCL_MNNVL_ENABLE=0): the job's GPUs placed on the racks as asked, then the fabric
    as NCCL sees it, every compute tray its own node (``topology.partitions.per_tray``), and the
    placement as those GPUs' ranks. ``said`` names the setting in the error raised when the trays
    meet over NVLink only (no scale-out network); ``where``: the error's file, line or field."""
    placed = select_gpus(fabric, count, placement)
    view = per_tray(fabric)
    if len({view.nodes[g].group for g in placed}) > 1 and not any(c.fabric == "network" for c in view.channels):
        raise InputError(f"{said} makes every compute tray its own node, and {fabric.name} joins its trays by "
                         "NVLink only (no scale-out network): pick a topology with NICs (gb200_nvl72_x8_ib)",
                         **where)
    return view, Placement(ranks=tuple(fabric.nodes[g].rank for g in placed))


def build_workload(fabric: Fabric, spec: SweepSpec, nbytes: int) -> Workload:
    """The collective or copy of ``spec`` at one size."""
    gpus = select_gpus(fabric, spec.gpus, spec.placement)
    if spec.timing not in TIMINGS:
        raise unknown_choice("timing", spec.timing, TIMINGS, field="timing")
    if spec.op in COPIES:
        return build_copy(fabric, spec.op, gpus, nbytes)
    if spec.op not in OPS:
        raise unknown_choice("op", spec.op, OPS + COPIES, field="op")
    fixed = gpu_kernels(fabric, gpus[0], "graph").kernel_s if spec.timing == "graph" else 0.0
    return build_collective(fabric, gpus, spec.op, nbytes, algo=spec.algo, protocol=spec.protocol,
                            channels=spec.channels, root=spec.root, exposed_launch=spec.timing == "single",
                            kernel_fixed_s=fixed)


@dataclass(frozen=True, slots=True)
class SizeRun:
    """One size of a sweep as planned: its workload and packet-engine settings (and the unit
    ``runner.packet_unit`` chose, None where nothing was chosen: a flow-engine run)."""

    nbytes: int
    workload: Workload
    packet: PacketConfig
    unit: RunUnit | None


@dataclass(frozen=True, slots=True)
class PlannedSweep:
    """A sweep before it runs: the engine every size runs on (``plan.engine``, with what ``auto``
    weighed and the estimated cost) and each size's run, in the order of ``SweepSpec.sizes``."""

    spec: SweepSpec
    """The spec with ``engine`` resolved: what every size runs with."""
    plan: SweepPlan
    runs: tuple[SizeRun, ...]


def plan(fabric: Fabric, spec: SweepSpec, observed: bool = False,
         built: dict[int, Workload] | None = None) -> PlannedSweep:
    """The one way a sweep is planned (with or without progress display, observer or callbacks):
    every size's workload built (or taken from ``built``, and left there for a later plan), its
    packet unit chosen once (``runner.packet_unit``; ``observed``: fine packets for an observer), and
    for ``auto`` one engine for all sizes, by the largest (``runner.estimate.plan_sweep``), so rows of
    one sweep never mix engines."""
    if spec.engine not in ENGINES:
        raise unknown_choice("engine", spec.engine, ENGINES, field="engine")
    if spec.op in OPS and spec.gpus < 2:
        raise InputError(f"{spec.op} is a collective: it needs at least 2 GPUs, got {spec.gpus}", field="gpus")
    built = built if built is not None else {}
    workloads = {nbytes: built.get(nbytes) or build_workload(fabric, spec, nbytes) for nbytes in spec.sizes}
    built.update(workloads)
    choices = {nbytes: _packet_choice(fabric, spec, w, observed) for nbytes, w in workloads.items()}
    by_id = {id(workloads[n]): choices[n][0] for n in workloads}
    estimate = plan_sweep(fabric, spec.engine, workloads, lambda w: by_id[id(w)])
    resolved = replace(spec, engine=estimate.engine) if spec.sizes else spec
    runs = []
    for nbytes in spec.sizes:
        packet, unit = choices[nbytes]
        if resolved.engine == "flow" and spec.packet_bytes is None:
            packet, unit = PacketConfig(seed=spec.seed), None  # no packets: no unit
        runs.append(SizeRun(nbytes, workloads[nbytes], packet, unit))
    return PlannedSweep(spec=resolved, plan=estimate, runs=tuple(runs))


def run_one(fabric: Fabric, workload: Workload, spec: SweepSpec,
            observer: EngineObserver | None = None,
            progress: Callable[[int], None] | None = None,
            choice: tuple[PacketConfig, RunUnit | None] | None = None) -> tuple[dict, RunResult]:
    """Simulate one workload; its row and the raw result (``observer`` sees packet-engine runs,
    ``progress`` gets their packet-hops so far now and then; ``choice``: the packet settings and
    unit already chosen by :func:`plan`, else chosen here)."""
    packet, unit = choice or _packet_choice(fabric, spec, workload, observer is not None)
    result = simulate(fabric, workload, engine=spec.engine, packet=packet, flow=FlowConfig(), observer=observer,
                      progress=progress)
    energy = energy_report(fabric, result)
    row = nccl_row(workload, result).as_dict()
    latency = result.packet_latency_s
    row.update(
        algo=workload.meta.get("algo"), protocol=workload.meta.get("protocol"),
        channels=workload.meta.get("channels"), engine=result.engine, timing=spec.timing,
        packet_bytes=packet.packet_bytes if result.engine == "packet" else None,
        fine_packet_bytes=unit.fine_bytes if unit and result.engine == "packet" else None,
        p99_latency_us=float(np.percentile(latency, 99) * 1e6) if len(latency) else None,
        energy_J=energy.total_J, avg_power_W=energy.average_power_W,
        transport_pJ_per_byte=energy.pJ_per_byte if result.bytes_delivered else None,
        dynamic_J=dict(energy.dynamic_J), busiest_link=busiest_link(fabric, result),
    )
    if fabric.changes:  # faults during the run (flow engine): what they moved
        row.update(faults_struck=len(result.fault_events),
                   rerouted_B=sum(e["bytes_rerouted"] for e in result.fault_events))
    return row, result


def _packet_choice(fabric: Fabric, spec: SweepSpec, workload: Workload,
                   observed: bool = False) -> tuple[PacketConfig, RunUnit | None]:
    """The packet engine's settings for one run and the unit chosen: the given packet size, else
    ``runner.packet_unit``'s rule (nothing to choose for a flow engine run, which has no packets;
    an observed run moves fine packets)."""
    if spec.packet_bytes is None and spec.engine == "flow":  # a bad given size is an error, even here
        return PacketConfig(seed=spec.seed), None
    return choose(fabric, (workload,), seed=spec.seed, packet_bytes=spec.packet_bytes, switch=spec.switch,
                  observed=observed)


def measure(fabric: Fabric, workload: Workload, spec: SweepSpec, observer: EngineObserver | None = None) -> dict:
    """Simulate one workload and return its row."""
    return run_one(fabric, workload, spec, observer)[0]


def sweep(fabric: Fabric, spec: SweepSpec, on_row: Callable[[dict], None] | None = None,
          observer: EngineObserver | None = None,
          on_result: Callable[[Workload, RunResult], None] | None = None,
          built: dict[int, Workload] | None = None,
          on_plan: Callable[[SweepPlan], None] | None = None,
          on_hops: Callable[[int, int], None] | None = None) -> list[dict]:
    """One row per size, in the order of ``spec.sizes``, planned by :func:`plan` whatever the
    callbacks: ``on_plan`` hears the plan once before the first run (engine and estimated cost),
    ``on_row`` each row (progress bars), ``on_hops(size, packet_hops)`` a packet-engine run's progress
    now and then, ``on_result`` the raw run (plots that need per-channel data). None of them changes
    what runs."""
    planned = plan(fabric, spec, observer is not None, built)
    for nbytes in spec.sizes:  # each workload runs once: ``built`` does not keep it alive after
        (built or {}).pop(nbytes, None)
    if on_plan and spec.sizes:
        on_plan(planned.plan)
    rows = []
    for run in planned.runs:
        hops = (lambda done, size=run.nbytes: on_hops(size, done)) if on_hops else None
        row, result = run_one(fabric, run.workload, planned.spec, observer, hops, (run.packet, run.unit))
        rows.append(row)
        if on_row:
            on_row(row)
        if on_result:
            on_result(run.workload, result)
    return rows
