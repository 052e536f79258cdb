"""Flow-level engine: transfers as fluid flows sharing channel capacity max-min fairly.

Each transfer, once its dependencies have finished and its ``delay_s`` has passed, is spread over
its routes as sub-flows (bytes split in proportion to each route's bottleneck rate, as striping
over parallel links does). Rates are the max-min fair allocation of ``Channel.rate_Bps`` among
all active sub-flows, recomputed whenever a sub-flow starts or finishes (progressive filling).
A transfer finishes when its last sub-flow drains plus the zero-load latency of its slowest
route (links + transit switches). Pure delays (``bytes == 0``) finish ``delay_s`` after their
deps. No randomness: the same workload gives the same result.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np

from simulator.engine.flow_maxmin import max_min_rates
from simulator.engine.result import RunResult
from simulator.engine.transfer import Workload
from simulator.errors import SimulationError
from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes, route_latency_s, route_rate_Bps

_START, _FINISH = 0, 1


@dataclass(frozen=True, slots=True)
class FlowConfig:
    """Knobs of the flow engine."""

    done_fraction: float = 1e-9
    """A sub-flow with less than this fraction of its bytes left counts as drained (float slack)."""
    max_events: int = 50_000_000
    """Safety stop: more events than this is reported as a SimulationError."""


@dataclass(slots=True)
class _Plan:
    """Per-transfer routing decided before the run: sub-flow bytes and routes, latency."""

    routes: list[tuple[int, ...]]
    shares: list[float]
    latency_s: float


def _plan(fabric: Fabric, workload: Workload) -> list[_Plan | None]:
    plans: list[_Plan | None] = []
    cache: dict[tuple, _Plan] = {}
    for t in workload.transfers:
        if t.bytes == 0:
            plans.append(None)
            continue
        key = (t.src, t.dst, t.paths)
        plan = cache.get(key)
        if plan is None:
            routes = [r for r in (t.paths if t.paths is not None else equal_cost_routes(fabric, t.src, t.dst))]
            if not routes:
                raise SimulationError(f"transfer {t.id} ({t.src}->{t.dst}) has no route")
            if routes == [()]:
                plan = _Plan([], [], 0.0)  # local copy: no channel crossed
            else:
                rates = np.array([route_rate_Bps(fabric, r) for r in routes])
                plan = _Plan(routes, list(rates / rates.sum()),
                             max(route_latency_s(fabric, r) for r in routes))
            cache[key] = plan
        plans.append(plan)
    return plans


class _Active:
    """The set of active sub-flows, as parallel lists plus numpy views rebuilt on change."""

    __slots__ = ("tid", "bytes", "left", "route", "rate", "dirty")

    def __init__(self) -> None:
        self.tid: list[int] = []
        self.bytes: list[float] = []
        self.left = np.zeros(0)
        self.route: list[tuple[int, ...]] = []
        self.rate = np.zeros(0)
        self.dirty = False

    def add(self, tid: int, nbytes: float, route: tuple[int, ...]) -> None:
        self.tid.append(tid)
        self.bytes.append(nbytes)
        self.left = np.append(self.left, nbytes)
        self.route.append(route)
        self.dirty = True

    def keep(self, mask: np.ndarray) -> None:
        idx = np.flatnonzero(mask)
        self.tid = [self.tid[i] for i in idx]
        self.bytes = [self.bytes[i] for i in idx]
        self.route = [self.route[i] for i in idx]
        self.left = self.left[idx]
        self.dirty = True

    def reallocate(self, capacity: np.ndarray) -> None:
        lengths = np.fromiter((len(r) for r in self.route), dtype=np.int64, count=len(self.route))
        entry_flow = np.repeat(np.arange(len(self.route)), lengths)
        entry_channel = np.fromiter((c for r in self.route for c in r), dtype=np.int64,
                                    count=int(lengths.sum()))
        self.rate = max_min_rates(len(self.route), entry_flow, entry_channel, capacity)
        self.dirty = False


def run_flow(fabric: Fabric, workload: Workload, config: FlowConfig = FlowConfig()) -> RunResult:
    """Run ``workload`` on ``fabric`` with max-min fair fluid flows; return the engine-neutral result."""
    wall0 = time.perf_counter()
    transfers = workload.transfers
    n = len(transfers)
    plans = _plan(fabric, workload)
    capacity = np.array([c.rate_Bps for c in fabric.channels], dtype=float)
    start = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    waiting = np.array([len(t.deps) for t in transfers], dtype=np.int64)
    children: list[list[int]] = [[] for _ in range(n)]
    for t in transfers:
        for d in t.deps:
            children[d].append(t.id)
    outstanding = np.zeros(n, dtype=np.int64)
    channel_bytes = np.zeros(len(fabric.channels))
    heap: list[tuple[float, int, int, int]] = []
    seq = 0

    def release(tid: int, ready: float) -> None:
        nonlocal seq
        t = transfers[tid]
        if t.bytes == 0:
            start[tid] = ready
            heapq.heappush(heap, (ready + t.delay_s, seq, _FINISH, tid))
        else:
            heapq.heappush(heap, (ready + t.delay_s, seq, _START, tid))
        seq += 1

    for t in transfers:
        if not t.deps:
            release(t.id, 0.0)

    active = _Active()
    now, events, delivered = 0.0, 0, 0
    while heap or active.tid:
        events += 1
        if events > config.max_events:
            raise SimulationError(f"flow engine stopped after {config.max_events} events")
        if active.dirty:
            active.reallocate(capacity)
        t_flow = now + float(np.min(active.left / active.rate)) if active.tid else np.inf
        t_next = min(heap[0][0] if heap else np.inf, t_flow)
        if active.tid:
            active.left -= active.rate * (t_next - now)
            drained = active.left <= config.done_fraction * np.asarray(active.bytes)
            if t_next == t_flow:
                drained[np.argmin(active.left)] = True
            if drained.any():
                for i in np.flatnonzero(drained):
                    tid = active.tid[i]
                    for cid in active.route[i]:
                        channel_bytes[cid] += active.bytes[i]
                    outstanding[tid] -= 1
                    if outstanding[tid] == 0:
                        heapq.heappush(heap, (t_next + plans[tid].latency_s, seq, _FINISH, tid))
                        seq += 1
                active.keep(~drained)
        now = t_next
        while heap and heap[0][0] <= now:
            _, _, kind, tid = heapq.heappop(heap)
            if kind == _START:
                start[tid] = now
                plan = plans[tid]
                if not plan.routes:
                    heapq.heappush(heap, (now, seq, _FINISH, tid))
                    seq += 1
                    continue
                nbytes = transfers[tid].bytes
                for route, share in zip(plan.routes, plan.shares):
                    if share > 0:
                        active.add(tid, nbytes * share, route)
                        outstanding[tid] += 1
            else:
                finish[tid] = now
                delivered += transfers[tid].bytes
                for child in children[tid]:
                    waiting[child] -= 1
                    if waiting[child] == 0:
                        release(child, now)
    injected = sum(t.bytes for t in transfers)
    hop_bytes = sum(t.bytes * _mean_hops(plans[t.id]) for t in transfers if plans[t.id] is not None)
    invariants = {
        "all_transfers_finished": bool(np.all(np.isfinite(finish))),
        "bytes_conserved": delivered == injected,
        "channel_bytes_match_routes": bool(np.isclose(channel_bytes.sum(), hop_bytes, rtol=1e-9)),
        "deps_respected": all(start[t.id] >= finish[d] - 1e-15 for t in transfers for d in t.deps),
    }
    makespan = float(np.nanmax(finish)) if n else 0.0
    return RunResult(engine="flow", makespan_s=makespan, start_s=start, finish_s=finish,
                     bytes_injected=injected, bytes_delivered=delivered, channel_bytes=channel_bytes,
                     channel_busy_s=channel_bytes / capacity,
                     channel_credit_stall_s=np.zeros(len(fabric.channels)), events=events,
                     wall_s=time.perf_counter() - wall0, invariants=invariants)


def _mean_hops(plan: _Plan) -> float:
    return sum(s * len(r) for r, s in zip(plan.routes, plan.shares))
