"""Run a scenario on each of its topologies and gather rows, power and energy per system.

Every figure comes from a simulation run: collective/copy rows as in ``bench``; attention items
report the simulated time of their DAG (compute kernels as delays on the GPUs, communication as
transfers), split into compute and exposed communication (makespan minus the compute on the
critical path), the busiest link, and the analytic figures that explain them (roofline bound,
SM occupancy). Output shape (``--json``)::

    {"scenario": str, "systems": [{"topology", "name", "rows": [...], "power_W": {...},
                                   "energy_J": float}]}
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from simulator.engine.dispatch import simulate
from simulator.engine.packet import EngineObserver, PacketConfig
from simulator.engine.transfer import Workload
from simulator.errors import InputError, Origin
from simulator.metrics.bottleneck import busiest_link
from simulator.metrics.energy import EnergyReport, energy_report
from simulator.metrics.gpu_energy import gpu_energy
from simulator.runner.estimate import SweepPlan
from simulator.runner.gpu_kernels import gpu_kernels
from simulator.runner.packet_unit import packet_config
from simulator.runner.sweeps import SweepSpec, plan, select_gpus, size_list, sweep
from simulator.hardware.faults import FaultSpec
from simulator.topology.builder import build_fabric
from simulator.topology.faults import flag_origin
from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes
from simulator.units import GB
from simulator.workloads.attention import decode_step, kv_transfer, prefill, ring_attention
from simulator.workloads.attention.model import AttentionRun
from simulator.workloads.scenario import (ChakraItem, CollectiveItem, CopyItem, DecodeItem, PrefillItem,
                                          RingAttentionItem, ScenarioModel, check_on_fabrics, item_placement)

US = 1e6

PacketFor = Callable[[Sequence[Workload]], PacketConfig]
"""A run's packet settings from the workloads it runs (``runner.packet_unit.packet_config``)."""


@dataclass(slots=True)
class SystemResult:
    """One topology's results for the whole scenario."""

    topology: str
    name: str
    rows: list[dict] = field(default_factory=list)
    power_W: dict = field(default_factory=dict)
    inventory: dict = field(default_factory=dict)
    """Counts of cables by kind, optical modules and retimers (from the topology)."""
    faults: list[str] = field(default_factory=list)
    """The faults applied to this system (``FaultSpec.describe``), empty for a healthy one."""

    def energy(self) -> EnergyReport:
        """The whole scenario on this system as one run: static power over the summed simulated
        time plus the dynamic energy of every row."""
        dynamic: dict[str, float] = {}
        for row in self.rows:
            for kind, joules in (row.get("dynamic_J") or {}).items():
                dynamic[kind] = dynamic.get(kind, 0.0) + joules
        return EnergyReport(duration_s=sum(r["time_us"] for r in self.rows) / US,
                            static_W={k: v for k, v in self.power_W.items() if k != "total"},
                            dynamic_J=dynamic, bytes_delivered=sum(int(r.get("bytes", 0)) for r in self.rows))

    def as_dict(self) -> dict:
        return {"topology": self.topology, "name": self.name, "rows": self.rows, "power_W": self.power_W,
                "inventory": self.inventory, "faults": self.faults,
                "energy_J": sum(r.get("energy_J") or 0.0 for r in self.rows)}


def inventory(fabric: Fabric) -> dict[str, int]:
    """Physical links by cable kind (board traces left out) and retimers, each link counted once."""
    counts: dict[str, int] = {}
    seen: set[int] = set()
    for ch in fabric.channels:
        if ch.link in seen:
            continue
        seen.add(ch.link)
        if ch.cable and ch.cable != "trace":
            counts[f"{ch.cable} links"] = counts.get(f"{ch.cable} links", 0) + 1
        if ch.retimers:
            counts["retimer count"] = counts.get("retimer count", 0) + ch.retimers
    return counts


def _hops(fabric: Fabric, src: str, dst: str) -> int:
    return len(equal_cost_routes(fabric, src, dst)[0])


def pick_peer(fabric: Fabric, src_rank: int, dst: int | str) -> tuple[str, str]:
    """Source and destination GPU names for a point-to-point item (``farthest``/``nearest`` by hops)."""
    gpus = fabric.gpus
    if src_rank >= len(gpus):
        raise InputError(f"{fabric.name} has {len(gpus)} GPUs, no rank {src_rank}", field="src")
    src = gpus[src_rank]
    if isinstance(dst, int):
        if dst >= len(gpus) or dst == src_rank:
            raise InputError(f"destination rank {dst} is not another GPU of {fabric.name}", field="dst")
        return src, gpus[dst]
    others = [g for g in gpus if g != src]
    key = (lambda g: (-_hops(fabric, src, g), fabric.nodes[g].rank)) if dst == "farthest" else \
          (lambda g: (_hops(fabric, src, g), fabric.nodes[g].rank))
    return src, min(others, key=key)


def _attention_run(fabric: Fabric, item, launch: str) -> AttentionRun:
    if isinstance(item, DecodeItem):
        gpus = select_gpus(fabric, item.tp, item_placement(item), field="tp")
        return decode_step(fabric, gpus, gpu_kernels(fabric, gpus[0], launch), item.shape(item.tp),
                           item.flash_decoding, stack=item.layer_kernels)
    if isinstance(item, PrefillItem):
        gpus = select_gpus(fabric, item.tp, item_placement(item), field="tp")
        return prefill(fabric, gpus, gpu_kernels(fabric, gpus[0], launch), item.shape(item.tp),
                       stack=item.layer_kernels)
    if isinstance(item, RingAttentionItem):
        gpus = select_gpus(fabric, item.gpus)
        return ring_attention(fabric, gpus, gpu_kernels(fabric, gpus[0], launch), item.shape(1),
                              item.layers, item.placement)
    src, dst = pick_peer(fabric, item.src, item.dst)
    return kv_transfer(fabric, src, dst, item.shape(1), item.block_tokens)


_FIGURES = ("bottleneck", "attention_bound", "sm_occupancy", "sm_occupancy_flash_attention",
            "sm_occupancy_flash_decoding", "allreduce_algo", "allreduce_protocol", "link_kinds",
            "overlapped", "blocks_per_layer", "block_bytes", "step_bound", "attention_ctas", "attention_kernel",
            "kernels_per_layer", "kernels_per_step", "launch", "layer_kernels", "kernel_sequence", "allreduces_per_step",
            "placement", "load_imbalance", "idle_steps_per_layer", "simplifications")
_PER_LAYER_US = ("attention_per_layer_s", "gemm_per_layer_s", "other_per_layer_s", "layer_compute_s")


def _compute_on_critical_path_s(item, run: AttentionRun) -> float:
    """Kernel time every GPU must spend whatever the network does (the kernel model's sum)."""
    if isinstance(item, RingAttentionItem):
        layers = item.layers or item.model.layers
        return layers * item.gpus * float(run.figures["step_compute_s"])
    return float(run.figures.get("compute_s", 0.0))


def attention_row(fabric: Fabric, item, engine: str, packet: PacketFor,
                  observer: EngineObserver | None = None, launch: str = "graph") -> dict:
    """Simulate one attention item; time split into compute and exposed communication. Decode and
    prefill rows add the per-layer kernel breakdown, tokens per second and energy per token (GPU
    boards by power state, transport energy per byte moved, static fabric power, each apart)."""
    run = _attention_run(fabric, item, launch)
    result = simulate(fabric, run.workload, engine=engine, packet=packet((run.workload,)), observer=observer)
    energy = energy_report(fabric, result)
    compute_s = _compute_on_critical_path_s(item, run)
    row = {"workload": item.name, "kind": item.kind, "bytes": int(run.workload.meta.get("bytes", 0)),
           "time_us": result.makespan_s * US, "compute_us": compute_s * US,
           "communication_us": max(0.0, result.makespan_s - compute_s) * US, "engine": result.engine,
           "energy_J": energy.total_J, "avg_power_W": energy.average_power_W,
           "transport_pJ_per_byte": energy.pJ_per_byte if result.bytes_delivered else None,
           "static_J": energy.total_static_J, "transport_J": energy.total_dynamic_J,
           "dynamic_J": dict(energy.dynamic_J), "busiest_link": busiest_link(fabric, result)}
    if item.kind == "kv_transfer":
        row["algbw_GBps"] = row["bytes"] / result.makespan_s / GB if result.makespan_s else 0.0
        row["ideal_time_us"] = run.figures["ideal_time_s"] * US
    if item.kind in ("decode", "prefill"):
        comm = row["communication_us"]
        row["bottleneck"] = "communication" if comm > row["compute_us"] else run.figures["bottleneck"]
        row.update(_token_figures(fabric, item, run, result.makespan_s, energy.total_dynamic_J,
                                  energy.total_static_J, launch))
    row.update({k: _plain(run.figures[k]) for k in _FIGURES if k in run.figures and k not in row})
    return row


def _token_figures(fabric: Fabric, item, run: AttentionRun, makespan_s: float, transport_J: float,
                   fabric_static_J: float, launch: str) -> dict:
    """Per-layer kernel times (us), tokens per second, GPU energy and J per token of a step: the
    GPUs' board energy, the transport energy of the bytes moved, and the group's share of the
    fabric's static power, each reported apart."""
    f = run.figures
    gpus = select_gpus(fabric, item.tp, item_placement(item), field="tp")
    gk = gpu_kernels(fabric, gpus[0], launch)
    board = gpu_energy(f["power_state_s"], gk.power_W, len(gpus), makespan_s)
    tokens = item.batch if item.kind == "decode" else item.batch * item.context
    # the fabric's static power is shared by all its GPUs; this group is charged its GPUs' share
    # (assumption: the rest of the rack serves other groups meanwhile)
    share = len(gpus) / len(fabric.gpus)
    static_J = fabric_static_J * share
    total_J = board.total_J + transport_J + static_J
    out = {k.replace("_s", "_us"): f[k] * US for k in _PER_LAYER_US}
    out.update({"tokens": tokens, "tokens_per_s": tokens / makespan_s if makespan_s else 0.0,
                "gpu_J": board.total_J, "gpu_J_by_state": board.by_state_J, "energy_J": total_J,
                "static_J": static_J, "static_share": share,
                "J_per_token": total_J / tokens if tokens else None,
                "avg_power_W": total_J / makespan_s if makespan_s else 0.0,
                "bound_us": {k: v * US for k, v in f["bound_s"].items() if v > 0},
                "kernels": f["kernels"]})
    out["tokens_per_s_per_kW"] = out["tokens_per_s"] / (out["avg_power_W"] / 1e3) if out["avg_power_W"] else 0.0
    if item.kind == "decode":
        out["token_latency_us"] = makespan_s * US
    else:
        out["time_to_first_token_us"] = makespan_s * US
    return out


def _plain(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def run_scenario(scenario: ScenarioModel, topologies: list[Path],
                 on_row: Callable[[str, dict], None] | None = None,
                 observer: EngineObserver | None = None, faults: Sequence[FaultSpec] = (),
                 origins: Sequence[Origin] | None = None,
                 on_plan: Callable[[str, str, SweepPlan], None] | None = None,
                 on_hops: Callable[[str, str, int, int], None] | None = None,
                 parts: Sequence[str | Path] = (), launch: str | None = None) -> list[SystemResult]:
    """Every workload item on every topology, in file order. ``parts`` (``--parts``): parts or
    calibration files applied to every topology after its own (the scenario's ``parts:`` first);
    ``launch`` (``--launch``): ``graph`` or ``eager`` kernel launches, over the scenario's ``launch``. With faults (the scenario's
    ``faults:``, then ``faults`` from ``run --fault``) each topology runs twice, healthy and with
    the faults, as two systems side by side.
    ``on_plan(system, item, plan)`` hears each size sweep's engine and estimated cost before it runs,
    ``on_hops(system, item, size, packet_hops)`` a packet-engine run's progress now and then."""
    faults, origins = scenario_faults(scenario, faults, origins)
    parts = [*scenario_parts(scenario), *parts]
    if launch is not None:
        scenario = scenario.model_copy(update={"launch": launch})
    if faults:
        fabrics = []
        for topo in topologies:
            fabrics.append(build_fabric(topo, healthy=True, parts=parts))
            degraded = build_fabric(topo, faults, origins=origins, parts=parts)
            degraded.name = f"{degraded.name} (degraded)"
            fabrics.append(degraded)
            scenario._warnings.extend(w for w in degraded.warnings  # what the faults did (a BER taking links down)
                                      if w not in fabrics[-2].warnings and w not in scenario._warnings)
        topologies = [t for t in topologies for _ in (0, 1)]
    else:
        fabrics = [build_fabric(topo, parts=parts) for topo in topologies]
    check_on_fabrics(scenario, fabrics, topologies)
    prebuilt: dict[tuple[int, int], dict] = {}
    """(fabric index, item id) -> workloads built while choosing the engine, reused by the sweep."""
    engines = {id(item): _common_engine(fabrics, item, scenario, prebuilt) for item in scenario.workloads}
    systems = []
    for index, (topo, fabric) in enumerate(zip(topologies, fabrics)):
        system = SystemResult(topology=str(topo), name=fabric.name, power_W={
            "total": sum(fabric.static_power_W.values()), **fabric.static_power_W}, inventory=inventory(fabric),
            faults=list(fabric.faults))
        rows = []

        def packet(workloads, fabric=fabric) -> PacketConfig:
            if scenario.engine == "flow" and not scenario.packet_bytes:
                return PacketConfig(seed=scenario.seed)  # no packets: no unit to work out
            return packet_config(fabric, workloads, seed=scenario.seed, packet_bytes=scenario.packet_bytes,
                                 observed=observer is not None)

        for item in scenario.workloads:
            one = scenario.model_copy(update={"engine": engines[id(item)]})
            plan = (lambda p, name=fabric.name, item=item.name: on_plan(name, item, p)) if on_plan else None
            hops = (lambda size, done, name=fabric.name, item=item.name: on_hops(name, item, size, done)) \
                if on_hops else None
            rows += _item_rows(fabric, item, one, packet, observer, prebuilt.get((index, id(item))), plan, hops)
        if scenario.jobs:
            rows += job_rows(fabric, scenario, packet)
        for row in rows:
            system.rows.append(row)
            if on_row:
                on_row(fabric.name, row)
        systems.append(system)
    return systems


def scenario_parts(scenario: ScenarioModel) -> list[Path]:
    """The scenario's ``parts:`` files (calibration or parts overrides), relative to the scenario file."""
    names = getattr(scenario, "parts", None) or []
    base = Path(scenario._sources.file).parent if getattr(scenario, "_sources", None) is not None else Path(".")
    return [base / n for n in names]


def scenario_faults(scenario: ScenarioModel, flags: Sequence[FaultSpec] = (),
                    origins: Sequence[Origin] | None = None) -> tuple[list[FaultSpec], list[Origin]]:
    """The scenario's ``faults:`` followed by ``flags`` (``--fault``), each with where it was
    written: the scenario file's FILE:LINE for its own, ``origins`` (default: the flag) for the rest."""
    sources = scenario._sources
    own = [Origin(sources, ("faults", i)) for i in range(len(scenario.faults))]
    given = list(origins) if origins is not None else [flag_origin(f) for f in flags]
    return [*scenario.faults, *flags], own + given


def _common_engine(fabrics: list[Fabric], item, scenario: ScenarioModel, prebuilt: dict) -> str:
    """One engine for ``item`` on every system of a comparison: the scenario's, or for ``auto`` the
    packet engine only if every system's largest run of the item fits its budget (a comparison
    never sets packet-engine rows beside flow-engine rows). Attention items compared across
    systems run on the flow engine."""
    if scenario.engine != "auto" or len(fabrics) < 2:
        return scenario.engine
    if not isinstance(item, (CollectiveItem, CopyItem)):
        return "flow"
    engine = "packet"
    for index, fabric in enumerate(fabrics):
        spec = SweepSpec(op=item.op, gpus=_item_count(fabric, item), sizes=tuple(size_list(item.sizes)),
                         algo=getattr(item, "algo", "auto"), protocol=getattr(item, "protocol", "auto"),
                         channels=getattr(item, "channels", None), packet_bytes=scenario.packet_bytes,
                         placement=item_placement(item))
        built = prebuilt[(index, id(item))] = {}
        if plan(fabric, spec, built=built).spec.engine != "packet":
            engine = "flow"
    return engine


def _item_count(fabric: Fabric, item) -> int:
    """GPUs of a collective or copy item: its ``gpus``, else what its placement gives, else all."""
    placement = item_placement(item)
    if item.gpus or placement is None:
        return item.gpus or len(fabric.gpus)
    return len(select_gpus(fabric, None, placement))


def _item_rows(fabric: Fabric, item, scenario: ScenarioModel, packet: PacketFor,
               observer: EngineObserver | None, built: dict | None = None,
               on_plan: Callable[[SweepPlan], None] | None = None,
               on_hops: Callable[[int, int], None] | None = None) -> list[dict]:
    if isinstance(item, (CollectiveItem, CopyItem)):
        spec = SweepSpec(op=item.op, gpus=_item_count(fabric, item), sizes=tuple(size_list(item.sizes)),
                         algo=getattr(item, "algo", "auto"), protocol=getattr(item, "protocol", "auto"),
                         channels=getattr(item, "channels", None), engine=scenario.engine,
                         packet_bytes=scenario.packet_bytes, seed=scenario.seed, placement=item_placement(item))
        return [{"workload": item.name, "kind": item.kind, "op": item.op, "gpus": spec.gpus, **row}
                for row in sweep(fabric, spec, observer=observer, built=built, on_plan=on_plan, on_hops=on_hops)]
    if isinstance(item, ChakraItem):
        return [chakra_row(fabric, item, scenario.engine, packet, observer, getattr(scenario, "launch", "graph"))]
    return [attention_row(fabric, item, scenario.engine, packet, observer, getattr(scenario, "launch", "graph"))]


def chakra_row(fabric: Fabric, item: ChakraItem, engine: str, packet: PacketFor,
               observer: EngineObserver | None, launch: str = "graph") -> dict:
    """A Chakra trace run: step time, the slowest rank's compute and exposed communication, per-rank
    figures (``per_rank``) and the node kinds skipped."""
    from simulator.workloads.traces.chakra import build_chakra, load_traces, rank_report

    traces = load_traces(item.chakra)
    gpus = select_gpus(fabric, len(traces))
    built = build_chakra(fabric, gpus, traces, gpu_kernels(fabric, gpus[0], launch), item.algo, item.protocol)
    result = simulate(fabric, built.workload, engine=engine, packet=packet((built.workload,)), observer=observer)
    report = rank_report(built, result.finish_s)
    slowest = max(report["per_rank"], key=lambda r: r["end_us"])
    energy = energy_report(fabric, result)
    return {"workload": item.name, "kind": item.kind, "time_us": report["step_us"], "ranks": len(traces),
            "compute_us": slowest["compute_us"], "communication_us": slowest["exposed_comm_us"],
            "bytes": built.workload.total_bytes, "busiest_link": busiest_link(fabric, result),
            "engine": result.engine, "energy_J": energy.total_J, "avg_power_W": energy.average_power_W,
            "skipped": "; ".join(built.warnings()) or "none", "per_rank": report["per_rank"]}


def job_rows(fabric: Fabric, scenario: ScenarioModel, packet: PacketFor) -> list[dict]:
    """Each job alone, then all together: per job its time alone and together (slowdown) and the
    physical links it shares with other jobs (links both carried bytes on when run alone)."""
    from simulator.units import parse_size
    from simulator.workloads.collectives import build_collective
    from simulator.workloads.copies import COPIES, build_copy
    from simulator.workloads.jobs import merge, place

    taken: set[str] = set()
    placed, workloads = [], []
    for i, job in enumerate(scenario.jobs):
        try:
            gpus = place(fabric, job.gpus if job.gpus is not None else job.placement, job.count, taken)
        except InputError as err:
            raise InputError(f"job {job.name!r}: {err.message}", field=f"jobs[{i}].{err.field or 'gpus'}") from None
        taken.update(gpus)
        nbytes = parse_size(job.size)
        workloads.append(build_copy(fabric, job.op, gpus, nbytes) if job.op in COPIES else
                         build_collective(fabric, gpus, job.op, nbytes, job.algo, job.protocol))
        placed.append(gpus)
    unit = packet(workloads)  # one unit for the jobs alone and together: the same packets compared
    alone = [simulate(fabric, w, engine=scenario.engine, packet=unit) for w in workloads]
    merged = merge([j.name for j in scenario.jobs], workloads)
    together = simulate(fabric, merged.workload, engine=scenario.engine, packet=unit)
    finish = np.asarray(together.finish_s)
    owner = np.asarray(merged.owner)
    used = [{fabric.channels[c].link for c in np.flatnonzero(r.channel_bytes)} for r in alone]
    first: dict[int, object] = {}
    for ch in fabric.channels:
        first.setdefault(ch.link, ch)
    rows = []
    for j, (job, gpus, w, run) in enumerate(zip(scenario.jobs, placed, workloads, alone)):
        together_s = float(finish[owner == j].max()) if (owner == j).any() else 0.0
        others = set().union(*(used[k] for k in range(len(used)) if k != j))
        shared = sorted(used[j] & others)
        pairs = Counter(f"{first[lk].src}-{first[lk].dst}" for lk in shared)
        example = [f"{name} x{n}" if n > 1 else name for name, n in list(pairs.items())[:3]]
        groups = sorted({fabric.nodes[g].group for g in gpus})
        rows.append({"workload": f"job {job.name}", "kind": "job", "op": job.op, "gpus": len(gpus),
                     "groups": len(groups), "bytes": w.meta.get("bytes"), "algo": w.meta.get("algo"),
                     "time_us": together_s * US, "alone_us": run.makespan_s * US,
                     "slowdown": together_s / run.makespan_s if run.makespan_s else None,
                     "shared_links": len(shared), "shared_example": ", ".join(example) or "none",
                     "busiest_link": busiest_link(fabric, together), "engine": together.engine,
                     "energy_J": energy_report(fabric, run).total_J})
    return rows
