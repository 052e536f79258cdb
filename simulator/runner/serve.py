"""``serve`` as one request -> plan -> outcome path: ``fabricsim serve`` parses its flags into a
:class:`ServeRequest`, ``simulator.api.serve`` builds the same request, and both get the same
:class:`ServeOutcome` from :func:`run_serve`.

    planned = plan_serve(ServeRequest("serving_nvl72_vs_hopper", rates=(10, 20)))
    outcome = run_serve(planned)        # one row per system x deployment x rate

What runs (``workloads.serving``): for each topology and deployment, each pool's iteration model
(the kernel model of the pool's GPU; its collectives simulated on the fabric, on the scenario's
engine, at doubling message sizes over every size an iteration can ask, on the pool's first
instance's GPUs, and interpolated between: ``iteration.SizeCurve``), its KV cache from HBM
(``capacity``), then at each rate the requests through the deployment (``deployment``), each KV
transfer of a disaggregated one simulated between the two instances' GPUs the same way.

Power, over the arrival window (the throughputs' window, ``metrics``): the GPUs' board power by
state over the time each unit spent in kernels in the window's iterations, the idle state for the
rest of the window (and for every GPU outside the deployment's pools, as they stay in the rack),
the fabric's static interconnect power, and the transport energy of every collective and KV
transfer of the window; per kW figures divide by that average. Host CPUs, memory and cooling are
not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from simulator.engine.dispatch import simulate
from simulator.engine.transfer import Workload
from simulator.errors import InputError
from simulator.metrics.bottleneck import busiest_of
from simulator.metrics.energy import energy_report
from simulator.metrics.gpu_energy import WAIT_STATE, gpu_energy
from simulator.runner.gpu_kernels import gpu_kernels
from simulator.runner.tables import rows_frame
from simulator.shipped import find, not_found
from simulator.topology.builder import build_fabric, topology_files
from simulator.topology.fabric import Fabric
from simulator.workloads.attention.kv_transfer import pool_kv_transfer
from simulator.workloads.attention.model import ModelShape
from simulator.workloads.attention.moe import dispatch_bytes
from simulator.workloads.collectives import build_collective
from simulator.workloads.collectives.base import link_kind
from simulator.workloads.collectives.rails import nodes_of
from simulator.workloads.copies import build_copy
from simulator.workloads.scenario import gpu_hbm_bytes
from simulator.workloads.serving.capacity import kv_capacity
from simulator.workloads.serving.deployment import (DeploymentRun, Pool, gpus_for, serve_aggregated,
                                                    serve_disaggregated, units_for)
from simulator.workloads.serving.iteration import BySize, Collectives, IterationModel, SizeCurve, doubling_sizes
from simulator.workloads.serving.metrics import PERCENTILES, ServingRun, summarize
from simulator.workloads.serving.requests import Request, generate, read_azure_trace, read_burstgpt_trace
from simulator.workloads.serving.scenario import (CUSTOM_ALL_REDUCE_GPUS,
                                                  CUSTOM_ALL_REDUCE_MAX_BYTES, DeploymentSpec, PoolSpec,
                                                  ServingScenario, custom_all_reduce_one_shot_bytes,
                                                  load_serving)
from simulator.workloads.serving.scheduler import SchedulerConfig

MS = 1e3


@dataclass(frozen=True, slots=True)
class ServeRequest:
    """What ``serve`` is asked; every field has the meaning of the ``fabricsim serve`` flag."""

    scenario: str
    """A serving scenario file, or a shipped one's name."""
    topologies: tuple[str, ...] = ()
    """Topology files or shipped names replacing the scenario's; empty: the scenario's."""
    rates: tuple[float, ...] = ()
    """Request rates (per second) replacing the scenario's ``load.rates``."""
    deployments: tuple[str, ...] = ()
    """Names of the scenario's deployments to run; empty: all."""
    duration_s: float | None = None
    """Replaces ``load.duration``."""
    seed: int | None = None
    workers: int | None = None
    """Run the system x deployment x rate combinations on a local Dask cluster of this many worker
    processes (as ``fabricsim sweep`` runs points); None: one after another in this process."""
    scheduler: str | None = None
    """Or on a running Dask scheduler (``tcp://HOST:PORT``)."""


@dataclass(frozen=True)
class ServePlan:
    request: ServeRequest
    scenario: ServingScenario
    topologies: tuple[Path, ...]
    fabrics: tuple[Fabric, ...]
    deployments: tuple[DeploymentSpec, ...]
    loads: tuple[tuple[float | None, tuple[Request, ...]], ...]
    """(offered rate or None for a trace, the requests) of each run."""
    inputs: tuple[Path, ...]
    warnings: tuple[str, ...] = ()
    sources: Any = None
    """Where each value of the scenario file was written: errors found while running (a deployment
    whose weights leave no KV cache, a request no instance can hold) are placed there."""


@dataclass(frozen=True)
class ServeOutcome:
    """One row per system x deployment x rate (``rows``), with each row's latencies kept for the
    CDF plots (``latencies``: row index -> ``{"ttft_s", "tpot_s", "latency_s"}`` arrays)."""

    name: str
    rows: list[dict] = field(default_factory=list)
    latencies: list[dict] = field(default_factory=list)
    systems: list[dict] = field(default_factory=list)
    """Per system and deployment: pools, KV capacity, collectives' sizes."""
    warnings: list[str] = field(default_factory=list)
    slo: dict = field(default_factory=dict)
    headline: str = ""
    """The comparison in one sentence (written by ``reports.serve_text.headlined``)."""

    def to_dict(self) -> dict:
        """The ``--json`` document of ``fabricsim serve``."""
        return {"scenario": self.name, "slo": self.slo, "headline": self.headline, "rows": self.rows,
                "systems": self.systems, "warnings": list(self.warnings)}

    def to_pandas(self) -> Any:
        return rows_frame(self.rows)


# ---------------------------------------------------------------- plan

def plan_serve(request: ServeRequest) -> ServePlan:
    """The request checked and made concrete: scenario loaded, topologies built, deployments fitted
    to each topology (a pool larger than it is an error at the deployment's line), loads drawn."""
    path = find(request.scenario, "scenarios")
    if not path.is_file():
        raise not_found(request.scenario, "scenarios", "serving scenario")
    scenario, own, sources = load_serving(path)
    given = [find(t, "topologies") for t in request.topologies]
    for name, topo in zip(request.topologies, given):
        if not topo.is_file():
            raise not_found(name, "topologies", "topology")
    topologies = given or own
    parts = [p if Path(p).is_absolute() else path.parent / p for p in scenario.parts]
    fabrics = tuple(build_fabric(t, parts=parts) for t in topologies)
    deployments = list(scenario.deployments)
    if request.deployments:
        names = [d.name for d in deployments]
        for want in request.deployments:
            if want not in names:
                raise InputError(f"no deployment {want!r} in {path}; choose from: {', '.join(names)}",
                                 field="--deployment")
        deployments = [d for d in deployments if d.name in request.deployments]
    for fabric in fabrics:
        for d in deployments:
            where = scenario.deployments.index(d)
            need = sum(gpus_for(_instances(p, fabric, d, role), p.tp, p.ep) for role, p in d.pools())
            if need > len(fabric.gpus):
                raise sources.error(("deployments", where),
                                    f"deployment {d.name!r} needs {need} GPUs; {fabric.name} has "
                                    f"{len(fabric.gpus)}: give fewer instances or a smaller tp/ep")
    duration = request.duration_s
    if duration is not None and not (math.isfinite(duration) and duration > 0):
        raise InputError(f"--duration {duration!r} must be a time > 0 in seconds", field="--duration")
    for r in request.rates:
        if not (math.isfinite(r) and r > 0):
            raise InputError(f"--rate {r!r} must be > 0 requests per second", field="--rate")
    loads, warnings = _loads(scenario, request)
    inputs = [path, *(f for t in topologies for f in topology_files(t)), *parts]
    if scenario.load.trace:
        inputs.append(Path(scenario.load.trace))
    return ServePlan(request, scenario, tuple(Path(t) for t in topologies), fabrics, tuple(deployments),
                     tuple(loads), tuple(inputs), tuple(warnings), sources)


def _instances(pool: PoolSpec, fabric: Fabric, d: DeploymentSpec, role: str) -> int:
    """The pool's instances: as written, or as many as the GPUs left after the pools before it hold."""
    if pool.instances is not None:
        return pool.instances
    before = 0
    for other_role, other in d.pools():
        if other_role == role:
            break
        before += gpus_for(_instances(other, fabric, d, other_role), other.tp, other.ep)
    return max(1, (len(fabric.gpus) - before) // pool.gpus_per_instance)


def _loads(scenario: ServingScenario, request: ServeRequest) -> tuple[list, list[str]]:
    load = scenario.load
    seed = scenario.seed if request.seed is None else request.seed
    if load.trace is not None:
        if request.rates:
            raise InputError("the scenario replays a trace; --rate applies to an arrival process", field="--rate")
        read = (read_azure_trace if load.format == "azure" else read_burstgpt_trace)(load.trace)
        return [(None, read.requests)], [str(w) for w in read.warnings]
    rates = request.rates or tuple(load.rates)
    duration = request.duration_s or load.duration_s
    out = []
    for rate in rates:
        count = load.requests or max(1, math.ceil(rate * duration))
        out.append((rate, generate(load.process(rate), load.prompt_tokens.distribution(),  # type: ignore[union-attr]
                                   load.output_tokens.distribution(), count, rate_seed(seed, rate))))  # type: ignore[union-attr]
    return out, []


def rate_seed(seed: int, rate: float) -> int:
    """The seed of the requests at ``rate``: the scenario's seed and the rate (in mHz) mixed by
    numpy's SeedSequence, so a rate's requests are the same whether it runs alone (``--rate``) or
    among others, and differ from every other rate's."""
    return int(np.random.SeedSequence([seed, round(rate * 1000)]).generate_state(1)[0])


# ---------------------------------------------------------------- the fabric's costs

def _curve(fabric: Fabric, build: Callable[[int], Workload], sizes: tuple[int, ...], engine: str) -> SizeCurve:
    times, joules, busy = [], [], []
    for nbytes in sizes:
        result = simulate(fabric, build(nbytes), engine=engine)  # type: ignore[arg-type]
        times.append(result.makespan_s)
        joules.append(energy_report(fabric, result).total_dynamic_J)
        busy.append(np.asarray(result.channel_busy_s, dtype=float))
    return SizeCurve(sizes, tuple(times), tuple(joules), tuple(busy))


def _link_busy(fabric: Fabric, run: DeploymentRun, kv_pair, window_end: float) -> tuple:  # noqa: ANN001
    """(collectives, KV transfers): seconds each channel was busy in the arrival window. A pool's
    collectives were simulated on its first instance's GPUs: their load is the pool's units'
    average, on that instance's links (the units are alike); each KV transfer on its own links."""
    coll = np.zeros(len(fabric.channels))
    for pr in run.pools:
        for u in pr.units:
            for (c, nbytes), times in u.window_messages.items():
                arr = c.busy_at(nbytes)
                if arr is not None:
                    coll += arr * (times / len(pr.units))
    kv = np.zeros(len(fabric.channels))
    if kv_pair is not None:
        for m in run.kv_moves:
            if m.start_s < window_end:
                arr = kv_pair.curve(m.src_unit, m.dst_unit).busy_at(m.bytes)
                if arr is not None:
                    kv += arr
    return coll, kv


def _custom_all_reduce(fabric: Fabric, gpus: tuple[str, ...]) -> bool:
    """Whether vLLM's custom all-reduce runs on ``gpus``: 2, 4, 6 or 8 of them, one host
    (``Node.group``) and NVLink between every pair (``ALL_REDUCE_POLICIES['vllm']``)."""
    return (len(gpus) in CUSTOM_ALL_REDUCE_GPUS and len(nodes_of(fabric, gpus)) == 1
            and all(link_kind(fabric, gpus[0], g) == "nvlink" for g in gpus[1:]))


def _two_shot(fabric: Fabric, gpus: tuple[str, ...], sizes: tuple[int, ...], kernel_s: float,
              engine: str) -> SizeCurve:
    """vLLM's two-shot all-reduce at ``sizes``: every GPU reads its 1/n of each peer's buffer and
    reduces it (a direct reduce-scatter), then reads every peer's reduced part (a direct
    all-gather), one kernel with a barrier between (its fixed cost paid once)."""
    first = _curve(fabric, lambda n: build_collective(fabric, list(gpus), "reduce_scatter", n, "direct", "auto",
                                                      kernel_fixed_s=kernel_s), sizes, engine)
    second = _curve(fabric, lambda n: build_collective(fabric, list(gpus), "all_gather", n, "direct", "auto"),
                    sizes, engine)
    return SizeCurve(sizes, tuple(a + b for a, b in zip(first.times_s, second.times_s)),
                     tuple(a + b for a, b in zip(first.energies_J, second.energies_J)),
                     tuple(a + b for a, b in zip(first.busy_s, second.busy_s)))


def _collectives(fabric: Fabric, tp_gpus: tuple[str, ...], ep_gpus: tuple[str, ...], m: ModelShape,
                 d: DeploymentSpec, max_tokens: int, kernel_s: float, engine: str) -> tuple[Collectives, dict]:
    """The pool's collectives on its first instance's GPUs, each a curve over every size it asks."""
    row = m.hidden * m.dtype_bytes
    rows = doubling_sizes(row, max_tokens * row)
    facts: dict = {}

    def coll(gpus: tuple[str, ...], op: str, algo: str, sizes: tuple[int, ...]) -> SizeCurve:
        return _curve(fabric, lambda n: build_collective(fabric, list(gpus), op, n, algo, "auto",
                                                         kernel_fixed_s=kernel_s), sizes, engine)

    all_reduce = all_gather = alltoall = None
    if m.tp > 1:
        nccl = coll(tp_gpus, "all_reduce", "auto", rows)
        all_reduce = nccl
        if d.all_reduce == "vllm" and _custom_all_reduce(fabric, tp_gpus):
            one = custom_all_reduce_one_shot_bytes(m.tp)
            top = CUSTOM_ALL_REDUCE_MAX_BYTES

            def within(lo: int, hi: int) -> tuple[int, ...]:
                return tuple(s for s in doubling_sizes(lo, hi) if lo <= s <= hi) or (lo,)

            small = coll(tp_gpus, "all_reduce", "direct", within(row, one))
            if one < top:
                two = _two_shot(fabric, tp_gpus, within(one, top), kernel_s, engine)
                all_reduce = BySize(small, BySize(two, nccl, top), one)
                facts["all_reduce"] = (f"vLLM's one-shot below {one // 1024} KiB, two-shot below "
                                       f"{top // 1024 // 1024} MiB, NCCL's choice above")
            else:
                all_reduce = BySize(small, nccl, top)
                facts["all_reduce"] = f"vLLM's one-shot below {top // 1024 // 1024} MiB, NCCL's choice above"
        else:
            facts["all_reduce"] = ("NCCL's choice (GPUs on more than one host)" if d.all_reduce == "vllm"
                                   else "NCCL's choice")
        if m.is_moe and m.ep > 1:
            all_gather = coll(tp_gpus, "all_gather", "auto", rows)
    if m.is_moe and m.ep > 1:
        most = int(math.ceil(dispatch_bytes(m, max_tokens) * d.imbalance))
        alltoall = coll(ep_gpus, "alltoall", "auto", doubling_sizes(dispatch_bytes(m, 1), most))
        facts["alltoall"] = f"over {len(ep_gpus)} GPUs, NCCL's choice"
    return Collectives(all_reduce, all_gather, alltoall), facts


@dataclass
class BuiltPool:
    pool: Pool
    gpus: list[tuple[str, ...]]
    """Each unit's GPUs."""
    spec: PoolSpec
    facts: dict


def _swaps(fabric: Fabric, gpus: tuple[str, ...], m: ModelShape, most_tokens: int, engine: str):  # noqa: ANN202
    """(out, in): seconds to copy the KV of N tokens between the unit's GPUs and host memory, every
    GPU its own shard at once (they share whatever PCIe switch or uplink they have in common)."""
    per_token = m.layers * m.kv_bytes_per_token_layer()
    sizes = doubling_sizes(per_token, max(1, most_tokens) * per_token)
    try:
        curves = [_curve(fabric, lambda n, kind=kind: build_copy(fabric, kind, gpus, n), sizes, engine)
                  for kind in ("d2h", "h2d")]
    except InputError as err:
        raise InputError(f"preemption: swap copies the KV cache to host memory, but {err.message}") from None
    return tuple((lambda tokens, c=c: c.time_s(tokens * per_token)) for c in curves)


def build_pools(fabric: Fabric, scenario: ServingScenario, d: DeploymentSpec) -> list[tuple[str, BuiltPool]]:
    """Each pool of ``d`` on ``fabric``: its GPUs in rank order, iteration model and KV cache."""
    gpus = fabric.gpus
    offset = 0
    out = []
    for role, p in d.pools():
        instances = _instances(p, fabric, d, role)
        m = scenario.model.shape(p.tp, p.ep)
        first = tuple(gpus[offset:offset + p.gpus_per_instance])
        gk = gpu_kernels(fabric, first[0], scenario.launch)
        collectives, facts = _collectives(fabric, first[:p.tp], first, m, d, p.max_num_batched_tokens,
                                          gk.kernel_s, scenario.engine)
        model = IterationModel(gk, m, collectives, d.context_bucket_tokens, d.imbalance, d.overhead_s)
        part, hbm = gpu_hbm_bytes(fabric, first[0])
        capacity = kv_capacity(m, hbm, p.max_num_batched_tokens, p.gpu_memory_utilization, d.block_tokens,
                               where=f"deployment {d.name!r}{'' if role == 'serve' else f' ({role})'} on {fabric.name}")
        config = SchedulerConfig(p.max_num_seqs, p.max_num_batched_tokens, p.chunked_prefill,
                                 d.prefix_cache_hit_fraction, d.context_bucket_tokens, preemption=p.preemption)
        units = units_for(instances, p.tp, p.ep)
        unit_gpus = [tuple(gpus[offset + u * p.tp: offset + (u + 1) * p.tp]) for u in range(units)]
        swap_out = swap_in = None
        if p.preemption == "swap":
            swap_out, swap_in = _swaps(fabric, unit_gpus[0], m, capacity.tokens, scenario.engine)
            facts["swap"] = "KV copied to host memory over PCIe and back (simulated d2h and h2d)"
        offset += gpus_for(instances, p.tp, p.ep)
        facts.update({"gpu": part, "instances": instances, "units": units, "tp": p.tp, "ep": p.ep,
                      "kv_cache": capacity.as_dict(), "first_gpus": [first[0], first[-1]]})
        out.append((role, BuiltPool(Pool(role, units, p.tp, model, config, capacity, swap_out, swap_in), unit_gpus,
                                    p, facts)))
    return out


# ---------------------------------------------------------------- run

def run_serve(planned: ServePlan | ServeRequest,
              on_progress: Callable[[int, int, str], None] | None = None) -> ServeOutcome:
    """Every deployment at every load on every topology; ``on_progress(done, total, label)`` after each.
    With ``workers`` or ``scheduler`` the combinations run on Dask, each in a worker
    (:func:`serve_point`), and come back in the same order with the same numbers."""
    planned = planned if isinstance(planned, ServePlan) else plan_serve(planned)
    if planned.request.workers or planned.request.scheduler:
        return _run_on_dask(planned, on_progress)
    sc = planned.scenario
    ttft_slo, tpot_slo = sc.slo.seconds()
    rows: list[dict] = []
    latencies: list[dict] = []
    systems: list[dict] = []
    total = len(planned.fabrics) * len(planned.deployments) * len(planned.loads)
    done = 0
    for fabric in planned.fabrics:
        for d in planned.deployments:
            try:
                built = build_pools(fabric, sc, d)
            except InputError as err:
                raise _placed(planned, ("deployments", sc.deployments.index(d)), err) from None
            longest = max((r.prompt_tokens for _, requests in planned.loads for r in requests), default=1)
            kv_pair = _kv_pairs(fabric, sc, built, longest) if d.disaggregated else None
            systems.append({"system": fabric.name, "deployment": d.name,
                            "pools": {role: b.facts for role, b in built}})
            for rate, requests in planned.loads:
                try:
                    _check_fits(requests, built, d, fabric)
                except InputError as err:
                    raise _placed(planned, ("load", "trace") if sc.load.trace else ("load", "prompt_tokens"),
                                  err) from None
                if d.disaggregated:
                    (_, p), (_, q) = built
                    run = serve_disaggregated(requests, p.pool, q.pool, kv_pair.kv_bytes,  # type: ignore[union-attr]
                                              kv_pair.time_s, q.pool.model.model.layers)  # type: ignore[union-attr]
                else:
                    run = serve_aggregated(requests, built[0][1].pool)
                row, lat = _row(fabric, d, rate, run, built, kv_pair, ttft_slo, tpot_slo)
                rows.append(row)
                latencies.append(lat)
                done += 1
                if on_progress:
                    on_progress(done, total, _label(fabric, d, rate))
    slo = {"ttft_s": ttft_slo, "tpot_s": tpot_slo, "ttft": sc.slo.ttft, "tpot": sc.slo.tpot}
    return ServeOutcome(sc.name, rows, latencies, systems, list(planned.warnings), slo)


def _label(fabric: Fabric, d: DeploymentSpec, rate: float | None) -> str:
    return f"{fabric.name} · {d.name} · {'trace' if rate is None else f'{rate:g} req/s'}"


def serve_point(payload: dict) -> dict:
    """One system x deployment x rate of a serving scenario, as a Dask worker runs it: the
    scenario planned again with that topology, deployment and rate alone (a rate's requests do not
    depend on the others: ``rate_seed``); ``{"rows": [{"row", "latencies", "system"}]}`` or
    ``{"error": ...}`` (never raises)."""
    try:
        request = ServeRequest(payload["scenario"], topologies=(payload["topology"],),
                               rates=() if payload["rate"] is None else (payload["rate"],),
                               deployments=(payload["deployment"],), duration_s=payload["duration_s"],
                               seed=payload["seed"])
        out = run_serve(request)
    except Exception as err:  # reported with the point, the other points go on
        return {"error": str(err)}
    lat = {k: np.asarray(v).tolist() for k, v in out.latencies[0].items()}
    return {"rows": [{"row": out.rows[0], "latencies": lat, "system": out.systems[0]}]}


def _run_on_dask(planned: ServePlan, on_progress: Callable[[int, int, str], None] | None) -> ServeOutcome:
    from simulator.runner.distributed import run_points
    from simulator.runner.sweep_file import Point

    req, sc = planned.request, planned.scenario
    combos = [(f, t, d, rate) for f, t in zip(planned.fabrics, planned.topologies) for d in planned.deployments
              for rate, _ in planned.loads]
    points = [Point(i, {"system": f.name, "deployment": d.name, "rate": rate},
                    {"scenario": req.scenario, "topology": str(t), "deployment": d.name, "rate": rate,
                     "duration_s": req.duration_s, "seed": req.seed}, digest=f"serve{i:011d}")
              for i, (f, t, d, rate) in enumerate(combos)]
    done = [0]

    def heard(outcome) -> None:  # noqa: ANN001
        done[0] += 1
        if on_progress:
            f, _, d, rate = combos[outcome.point.index]
            on_progress(done[0], len(points), _label(f, d, rate))

    outcomes = run_points(points, serve_point, workers=req.workers, scheduler=req.scheduler, on_outcome=heard)
    failed = [o for o in outcomes if o.error]
    if failed:
        raise InputError(f"{len(failed)} of {len(outcomes)} serving runs failed; the first: {failed[0].error}")
    rows, latencies, systems = [], [], []
    for o in outcomes:
        (got,) = o.rows  # type: ignore[misc]
        rows.append(got["row"])
        latencies.append({k: np.asarray(v, dtype=float) for k, v in got["latencies"].items()})
        if got["system"] not in systems:
            systems.append(got["system"])
    ttft_slo, tpot_slo = sc.slo.seconds()
    slo = {"ttft_s": ttft_slo, "tpot_s": tpot_slo, "ttft": sc.slo.ttft, "tpot": sc.slo.tpot}
    return ServeOutcome(sc.name, rows, latencies, systems, list(planned.warnings), slo)


def _placed(planned: ServePlan, path: tuple, err: InputError) -> InputError:
    """``err`` at the FILE:LINE of ``path`` in the scenario file (as it is when it has no place)."""
    if planned.sources is None or err.file:
        return err
    return planned.sources.error(path, err.message)


def _check_fits(requests, built, d: DeploymentSpec, fabric: Fabric) -> None:  # noqa: ANN001
    """A request whose KV cache no unit can hold is an error naming it (never silently dropped)."""
    for role, b in built:
        blocks = b.pool.capacity.blocks
        block = b.pool.capacity.block_tokens
        for r in requests:
            need = -(-(r.prompt_tokens + (r.output_tokens if role != "prefill" else 1) - 1) // block)
            if need > blocks:
                raise InputError(f"request {r.request_id} ({r.prompt_tokens} prompt + {r.output_tokens} output "
                                 f"tokens) needs {need} KV blocks; deployment {d.name!r} ({role}) on {fabric.name} "
                                 f"holds {blocks} per instance: shorten the lengths or raise tp")


class _KvPairs:
    """One KV cache's transfer time between a prefill and a decode unit, simulated per pair of
    units at doubling sizes (lazily: a pair is simulated the first time a request crosses it)."""

    def __init__(self, fabric: Fabric, src: list[tuple[str, ...]], dst: list[tuple[str, ...]],
                 per_token_B: int, sizes: tuple[int, ...], engine: str) -> None:
        self.fabric, self.src, self.dst, self.sizes, self.engine = fabric, src, dst, sizes, engine
        self.per_token_B = per_token_B
        """One prompt token's KV cache, every layer, over the decode instance's GPUs (B)."""
        self.curves: dict[tuple[int, int], SizeCurve] = {}

    def kv_bytes(self, prompt_tokens: int) -> int:
        """The KV cache a prompt of ``prompt_tokens`` moves (B)."""
        return prompt_tokens * self.per_token_B

    def curve(self, s: int, d: int) -> SizeCurve:
        key = (s, d)
        if key not in self.curves:
            src, dst = self.src[s], self.dst[d]
            self.curves[key] = _curve(self.fabric, lambda n: pool_kv_transfer(src, dst, n), self.sizes, self.engine)
        return self.curves[key]

    def time_s(self, s: int, d: int, nbytes: int) -> float:
        return self.curve(s, d).time_s(nbytes)

    def energy_J(self, s: int, d: int, nbytes: int) -> float:
        return self.curve(s, d).energy_J(nbytes)


def _kv_pairs(fabric: Fabric, sc: ServingScenario, built, longest_prompt: int) -> _KvPairs:  # noqa: ANN001
    """The KV pairs of a disaggregated deployment, their curves up to the longest prompt the loads hold."""
    (_, p), (_, q) = built
    m = q.pool.model.model
    per_token = m.layers * m.kv_bytes_per_token_layer() * q.spec.tp
    longest = max(2, longest_prompt)
    return _KvPairs(fabric, p.gpus, q.gpus, per_token, doubling_sizes(per_token, longest * per_token), sc.engine)


def _ms(x: float) -> float:
    return x * MS if math.isfinite(x) else math.nan


def _row(fabric: Fabric, d: DeploymentSpec, rate: float | None, run: DeploymentRun, built, kv_pair,  # noqa: ANN001
         ttft_slo: float | None, tpot_slo: float | None) -> tuple[dict, dict]:
    window_end = max(o.arrival_s for o in run.outcomes)
    s = summarize(ServingRun(run.outcomes, sum(u.iterations for p in run.pools for u in p.units),
                             sum(u.preemptions for p in run.pools for u in p.units), sum(p.busy_s for p in run.pools)),
                  ttft_slo, tpot_slo, window_end_s=window_end)
    span, window = s.span_s, s.window_s
    windowed = window < span
    gpus_used = sum(b.pool.units * b.pool.gpus_per_unit for _, b in built)
    gk = built[0][1].pool.model.gk
    gpu_J = 0.0
    transport_J = 0.0
    busy: dict[str, float] = {}
    for (role, b), pr in zip(built, run.pools):
        for u in pr.units:
            state = u.window_state_s if windowed else u.state_s
            gpu_J += gpu_energy(state, b.pool.model.gk.power_W, b.pool.gpus_per_unit, window).total_J
            transport_J += u.window_transport_J if windowed else u.transport_J
        used = sum(min(u.window_busy_s, window) if windowed else u.busy_s for u in pr.units)
        busy[role] = used / (len(pr.units) * window) if window > 0 else math.nan
    idle_gpus = len(fabric.gpus) - gpus_used
    gpu_J += idle_gpus * gk.power_W(WAIT_STATE) * window
    if kv_pair is not None:
        transport_J += sum(kv_pair.energy_J(m.src_unit, m.dst_unit, m.bytes) for m in run.kv_moves
                           if not windowed or m.start_s < window_end)
    static_W = sum(fabric.static_power_W.values())
    static_J = static_W * window
    energy_J = gpu_J + transport_J + static_J
    power_kW = energy_J / window / 1e3 if window > 0 else math.nan
    out_tokens = s.output_tokens_per_s * window
    ttft = np.array([o.ttft_s for o in run.outcomes])
    tpot = np.array([o.tpot_s for o in run.outcomes if o.output_tokens > 1])
    latency = np.array([o.latency_s for o in run.outcomes])
    row = {"system": fabric.name, "deployment": d.name, "rate_per_s": rate, "requests": s.requests,
           "gpus": gpus_used, "throughput_req_per_s": s.requests_per_s, "output_tok_per_s": s.output_tokens_per_s,
           "output_tok_per_s_per_gpu": s.output_tokens_per_s / gpus_used,
           "tok_per_s_per_user": 1.0 / s.tpot.p50_s if s.tpot.p50_s > 0 else math.nan}
    for name, p in (("ttft", s.ttft), ("tpot", s.tpot), ("latency", s.latency)):
        for q in PERCENTILES:
            row[f"{name}_p{q}_ms"] = _ms(getattr(p, f"p{q}_s"))
        row[f"{name}_mean_ms"] = _ms(p.mean_s)
    row.update({"goodput_req_per_s": s.goodput_requests_per_s, "slo_attainment": s.slo_attainment,
                "mean_in_system": s.mean_in_system, "window_s": window, "span_s": span,
                "output_tokens": s.output_tokens,
                # every output token over the first arrival to the last finish: how vLLM's
                # benchmark_serving.py and published benchmark tables divide (drain included)
                "benchmark_output_tok_per_s": s.output_tokens / span if span > 0 else math.nan,
                "preemptions": sum(u.preemptions for p in run.pools for u in p.units),
                "computed_tokens": sum(u.tokens for p in run.pools for u in p.units),
                "busy_fraction": busy, "avg_power_kW": power_kW,
                "output_tok_per_s_per_kW": s.output_tokens_per_s / power_kW if power_kW else math.nan,
                "J_per_output_token": energy_J / out_tokens if out_tokens else math.nan,
                "energy_J": {"gpus": gpu_J, "transport": transport_J, "interconnect_static": static_J},
                "power_kW": {"gpus": gpu_J / window / 1e3, "transport": transport_J / window / 1e3,
                             "interconnect_static": static_W / 1e3} if window > 0 else {},
                "peak_kv_fraction": max(u.peak_blocks / b.pool.capacity.blocks
                                        for (_, b), pr in zip(built, run.pools) for u in pr.units),
                "communication_share": _comm_share(run)})
    coll_busy, kv_busy = _link_busy(fabric, run, kv_pair, window_end)
    if window > 0:
        row["busiest_link"] = busiest_of(fabric, np.minimum(1.0, (coll_busy + kv_busy) / window))
        if run.kv_moves:
            row["busiest_link_kv"] = busiest_of(fabric, np.minimum(1.0, kv_busy / window))
    if run.kv_moves:
        exposed = np.array([m.exposed_s for m in run.kv_moves])
        share = exposed / np.maximum(ttft, 1e-12)
        row.update({"kv_transfer_exposed_mean_ms": float(exposed.mean()) * MS,
                    "kv_share_of_ttft": float(share.mean()),
                    "kv_bytes_per_request": float(np.mean([m.bytes for m in run.kv_moves]))})
    return row, {"ttft_s": ttft, "tpot_s": tpot, "latency_s": latency}


def _comm_share(run: DeploymentRun) -> float:
    busy = sum(u.busy_s for p in run.pools for u in p.units)
    comm = sum(u.communication_s for p in run.pools for u in p.units)
    return comm / busy if busy > 0 else math.nan


__all__ = ["ServeOutcome", "ServePlan", "ServeRequest", "plan_serve", "run_serve"]
