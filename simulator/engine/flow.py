"""Flow-level engine: transfers as fluid flows sharing channel capacity max-min fairly.

Each transfer, once its dependencies have finished and its ``delay_s`` has passed, is spread over
its routes as sub-flows (bytes split in proportion to each route's bottleneck rate, as striping
over parallel links does, times its ``route_weights`` share when some links serve more routes than
others). Rates are the max-min fair allocation of ``Channel.rate_Bps`` among
all active sub-flows, recomputed whenever a sub-flow starts or finishes (progressive filling).
A transfer finishes when its last sub-flow drains plus the zero-load latency of its slowest
route (links + transit switches). Pure delays (``bytes == 0``) finish ``delay_s`` after their
deps. A transfer with a rate limit (``Transfer.rate_Bps``: the CTA or copy engine driving it)
crosses one more channel of its own, of that capacity, shared by its sub-flows: the max-min
allocation then gives it min(its fair share of the links, its own rate). No randomness: the same
workload gives the same result.

Faults during a run (``Fabric.changes``, from faults with ``at:``): at each change's time every
channel takes its capacity on the surviving fabric (0 when it is gone). Sub-flows on a route that
lost a channel stop; the bytes they still had to move continue from there on every equal-cost
route of the surviving fabric (the model of a transport that retransmits what was lost in flight
on the links that are left: NCCL itself would abort the collective, see docs/faults.md), and
transfers still to start that were planned over a lost channel are planned again on the
surviving fabric. A transfer whose two ends no longer connect is an input error.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from simulator.engine.flow_maxmin import max_min_rates
from simulator.engine.result import RunResult
from simulator.engine.transfer import Workload
from simulator.errors import InputError, SimulationError
from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes, route_shares, route_weights
from simulator.units import format_seconds

if TYPE_CHECKING:
    from simulator.topology.faults import FabricChange

_START, _FINISH = 0, 1


@dataclass(frozen=True, slots=True)
class FlowConfig:
    """Knobs of the flow engine."""

    done_fraction: float = 1e-9
    """A sub-flow with less than this fraction of its bytes left counts as drained (float slack)."""
    max_events: int = 50_000_000
    """Safety stop: more events than this is reported as a SimulationError."""
    aggregate: bool = True
    """Run identical transfers (same ends, paths, bytes, delay, rate limit and deps) as one flow of
    their multiplicity: they start together and get equal max-min rates, so this is exact (a
    collective's channels often repeat one transfer on the same routes). False: one flow each."""


@dataclass(slots=True)
class _Plan:
    """Per-transfer routing decided before the run: sub-flow routes (interned ids) and byte shares,
    latency of the slowest route, mean hops per byte."""

    route_ids: np.ndarray
    shares: np.ndarray
    latency_s: float
    mean_hops: float


class _RouteTable:
    """Routes interned to ids, their channels in CSR form (``ptr``/``channels``) for numpy gathers,
    and per route its bottleneck link rate (B/s) and zero-load latency (s), as ``topology.routing``'s
    ``route_rate_Bps`` / ``route_latency_s`` define them, computed for all routes at once."""

    __slots__ = ("id_of", "routes", "ptr", "channels", "length", "rate_Bps", "latency_s", "hops",
                 "use_ptr", "use_channel", "use_coef", "use_length")

    def __init__(self) -> None:
        self.id_of: dict[tuple[int, ...], int] = {}
        self.routes: list[tuple[int, ...]] = []

    def intern(self, route: tuple[int, ...]) -> int:
        rid = self.id_of.get(route)
        if rid is None:
            rid = self.id_of[route] = len(self.routes)
            self.routes.append(route)
        return rid

    def freeze(self, fabric: Fabric, limits: np.ndarray) -> None:
        """Build the arrays once every route is known (every route has at least one channel).

        Channel ids past the fabric's are rate limits (``limits[id - len(fabric.channels)]`` B/s):
        they cap a route's rate but add no latency and no hop."""
        self.length = np.fromiter((len(r) for r in self.routes), dtype=np.int64, count=len(self.routes))
        self.ptr = np.zeros(len(self.routes) + 1, dtype=np.int64)
        np.cumsum(self.length, out=self.ptr[1:])
        self.channels = np.array(list(chain.from_iterable(self.routes)), dtype=np.int64)
        if not self.routes:
            self.rate_Bps = self.latency_s = self.hops = np.zeros(0)
            return
        chans, nodes = fabric.channels, fabric.nodes
        zeros = np.zeros(len(limits))
        real = (self.channels < len(chans)).astype(np.int64)
        rate = np.concatenate(([c.rate_Bps for c in chans], limits))[self.channels]
        link = np.concatenate(([c.latency_s for c in chans], zeros))[self.channels]
        forward = np.concatenate(([nodes[c.dst].latency_s for c in chans], zeros))[self.channels]
        starts = self.ptr[:-1]
        last = starts + np.add.reduceat(real, starts) - 1  # a route's limit comes after its channels
        self._uses(fabric)
        self.rate_Bps = np.minimum.reduceat(np.where(real > 0, rate, np.inf), starts)  # links only
        self.hops = np.add.reduceat(real, starts)
        # links, plus the forwarding latency of every node entered except the destination
        self.latency_s = np.add.reduceat(link, starts) + np.add.reduceat(forward, starts) - forward[last]
        self.latency_s[self.hops == 0] = 0.0  # a route of its rate limit alone (a paced local copy)

    def _uses(self, fabric: Fabric) -> None:
        """Per route, every capacity it uses and how much per byte (CSR ``use_*``): each channel
        it crosses (1), the reverse direction of each link it crosses (``reverse_overhead``:
        responses and credits) and its rate limit, if any (1)."""
        n_real = len(fabric.channels)
        overhead = np.array([c.reverse_overhead for c in fabric.channels] + [0.0])
        reverse = np.array(fabric.reverse_ids() + [-1], dtype=np.int64)
        ch = self.channels
        real = np.where(ch < n_real, ch, n_real)  # limit channels look up the dummy last entry
        extra = (overhead[real] > 0) & (reverse[real] >= 0)
        per_entry = 1 + extra.astype(np.int64)
        first = np.cumsum(per_entry) - per_entry  # where each entry's forward use goes
        total = int(per_entry.sum())
        self.use_channel = np.empty(total, dtype=np.int64)
        self.use_coef = np.ones(total)
        self.use_channel[first] = ch
        self.use_channel[first[extra] + 1] = reverse[real[extra]]
        self.use_coef[first[extra] + 1] = overhead[real[extra]]
        entry_route = np.repeat(np.arange(len(self.routes)), self.length)
        self.use_length = np.bincount(entry_route, weights=per_entry, minlength=len(self.routes)).astype(np.int64)
        self.use_ptr = np.zeros(len(self.routes) + 1, dtype=np.int64)
        np.cumsum(self.use_length, out=self.use_ptr[1:])

    def entries(self, rids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(entry -> index in ``rids``, entry -> channel, entry -> bytes used per byte) for the
        routes ``rids``."""
        lengths = self.use_length[rids]
        entry_flow = np.repeat(np.arange(len(rids)), lengths)
        first = np.cumsum(lengths) - lengths
        at = np.repeat(self.use_ptr[rids] - first, lengths) + np.arange(int(lengths.sum()))
        return entry_flow, self.use_channel[at], self.use_coef[at]


_LOCAL = _Plan(np.zeros(0, dtype=np.int64), np.zeros(0), 0.0, 0.0)
"""Plan of a local copy (src == dst): no channel crossed."""


def _classes(workload: Workload, aggregate: bool) -> tuple[list[int], list[int], list[int]]:
    """Transfers grouped into classes of identical ones (``FlowConfig.aggregate``): each
    transfer's class, each class's first transfer (its representative) and its multiplicity."""
    transfers = workload.transfers
    if not aggregate:
        n = len(transfers)
        return list(range(n)), list(range(n)), [1] * n
    of: dict[tuple, int] = {}
    klass, reps, mult = [], [], []
    for t in transfers:
        key = (t.src, t.dst, t.bytes, t.delay_s, t.rate_Bps, t.deps, t.paths)
        k = of.get(key)
        if k is None:
            k = of[key] = len(reps)
            reps.append(t.id)
            mult.append(0)
        mult[k] += 1
        klass.append(k)
    return klass, reps, mult


def _plan(fabric: Fabric, workload: Workload, table: _RouteTable, reps: list[int],
          mult: list[int]) -> tuple[list[_Plan | None], np.ndarray]:
    """One plan per class (None for pure delays), shared by classes with the same src, dst and
    paths; sub-flow bytes in proportion to each route's bottleneck rate. A rate-limited class
    gets a limit channel of its own (id ``len(fabric.channels) + k``) appended to each of its
    routes, of its members' rates together (each member's sub-flows are held to its own rate).
    Returns the plans and the limits (B/s)."""
    route_ids: dict[tuple, list[int] | None] = {}
    keys: list[tuple | None] = []
    limits: list[float] = []
    n_real = len(fabric.channels)
    for k, tid in enumerate(reps):
        t = workload.transfers[tid]
        if t.bytes == 0:
            keys.append(None)
            continue
        limit = ()
        if t.rate_Bps:
            limit = (n_real + len(limits),)
            limits.append(t.rate_Bps * mult[k])
        key = (t.src, t.dst, t.paths, limit)
        keys.append(key)
        if t.src == t.dst and limit:  # a local copy at the pace of its CTAs: the limit is its route
            route_ids[key] = [table.intern(limit)]
        elif key not in route_ids:
            routes = t.paths if t.paths is not None else equal_cost_routes(fabric, t.src, t.dst)
            if not routes:
                raise SimulationError(f"transfer {t.id} ({t.src}->{t.dst}) has no route")
            route_ids[key] = None if tuple(routes) == ((),) else [table.intern(tuple(r) + limit) for r in routes]
    limits_Bps = np.array(limits, dtype=float)
    table.freeze(fabric, limits_Bps)
    plans: dict[tuple, _Plan] = {}
    weights_of: dict[tuple, np.ndarray] = {}
    latency, hops = table.latency_s.tolist(), table.hops.tolist()
    one = np.ones(1)
    for key, rids in route_ids.items():
        if rids is None:
            plans[key] = _LOCAL
            continue
        ids = np.array(rids, dtype=np.int64)
        if len(rids) == 1:  # one route (a paced local copy has no hop and no latency)
            plans[key] = _Plan(ids, one, float(latency[rids[0]]), float(hops[rids[0]]))
            continue
        weights = weights_of.get(key[:3])  # the same routes but for a transfer's own rate limit
        if weights is None:
            weights = weights_of[key[:3]] = route_weights([table.routes[r][:int(table.hops[r])] for r in rids])
        rates = table.rate_Bps[ids] * weights
        shares = rates / rates.sum()
        keep = shares > 0
        plans[key] = _Plan(ids[keep], shares[keep], float(table.latency_s[ids].max()),
                           float(np.dot(shares, table.hops[ids])))
    return [None if key is None else plans[key] for key in keys], limits_Bps


def channel_capacity_Bps(fabric: Fabric) -> np.ndarray:
    """What each channel can carry as a fluid (B/s): its payload rate, or less when its receive
    buffer cannot cover the credit loop. The loop of a fluid (packets of vanishing size): data
    crosses the link (L), a transit receiver (switch, root complex) forwards it (its latency), the
    receiver waits ``return_delay_s`` and the credit crosses back (reverse L); the buffer sustains
    ``buffer / loop``. The packet engine simulates the same loop packet by packet (plus one packet's
    serialization per hop, ``credit_loop_rtt_s``)."""
    key = ("flow.channel_capacity",)
    cached = fabric.route_cache.get(key)
    if cached is not None:
        return cached
    chans, nodes = fabric.channels, fabric.nodes
    latency = np.array([c.latency_s for c in chans])
    back = np.array([fabric.reverse_latency_s(c) for c in chans])
    forward = np.array([nodes[c.dst].latency_s if fabric.forwards(c.dst) else 0.0 for c in chans])
    loop = latency + forward + np.array([c.credit.return_delay_s for c in chans]) + back
    rate = np.array([c.rate_Bps for c in chans])
    buffer = np.array([c.credit.buffer_bytes for c in chans], dtype=float)
    with np.errstate(divide="ignore"):
        out = np.where(loop > 0, np.minimum(rate, buffer / np.where(loop > 0, loop, 1.0)), rate)
    out.flags.writeable = False
    fabric.route_cache[key] = out
    return out


class _Active:
    """The active sub-flows as parallel numpy arrays. Additions are queued and concatenated once
    per event (``flush``), so adding k sub-flows costs O(k), not O(k x active)."""

    __slots__ = ("tid", "bytes", "left", "rid", "weight", "rate", "dirty", "_pending")

    def __init__(self) -> None:
        self.tid = np.zeros(0, dtype=np.int64)
        """Class of each sub-flow (``_classes``)."""
        self.weight = np.zeros(0)
        """Identical transfers the sub-flow stands for (each moves ``bytes`` at ``rate``)."""
        self.bytes = np.zeros(0)
        """Bytes of each sub-flow (B)."""
        self.left = np.zeros(0)
        """Bytes still to move (B)."""
        self.rid = np.zeros(0, dtype=np.int64)
        """Interned route id of each sub-flow."""
        self.rate = np.zeros(0)
        """Current max-min rate (B/s)."""
        self.dirty = False
        self._pending: list[tuple[int, float, _Plan, int]] = []

    def __len__(self) -> int:
        return len(self.tid)

    def add(self, tid: int, nbytes: float, plan: _Plan, weight: int = 1) -> None:
        """Queue the sub-flows of class ``tid`` (``nbytes`` of each of its ``weight`` transfers
        spread over ``plan``'s routes)."""
        self._pending.append((tid, nbytes, plan, weight))
        self.dirty = True

    def flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        counts = [len(p.route_ids) for _, _, p, _ in pending]
        tid = np.repeat(np.fromiter((t for t, _, _, _ in pending), dtype=np.int64, count=len(pending)), counts)
        weight = np.repeat(np.fromiter((w for _, _, _, w in pending), dtype=float, count=len(pending)), counts)
        nbytes = np.concatenate([b * p.shares for _, b, p, _ in pending])
        rid = np.concatenate([p.route_ids for _, _, p, _ in pending])
        self.tid = np.concatenate((self.tid, tid))
        self.weight = np.concatenate((self.weight, weight))
        self.bytes = np.concatenate((self.bytes, nbytes))
        self.left = np.concatenate((self.left, nbytes))
        self.rid = np.concatenate((self.rid, rid))
        pending.clear()

    def keep(self, mask: np.ndarray) -> None:
        self.tid = self.tid[mask]
        self.weight = self.weight[mask]
        self.bytes = self.bytes[mask]
        self.left = self.left[mask]
        self.rid = self.rid[mask]
        self.dirty = True

    def reallocate(self, capacity: np.ndarray, table: _RouteTable) -> None:
        """Max-min rates. Sub-flows on the same route get the same max-min rate, so the allocation
        is solved over distinct routes weighted by how many transfers' sub-flows use each."""
        mult = np.bincount(self.rid, weights=self.weight, minlength=len(table.routes))
        used = np.flatnonzero(mult)
        entry_flow, entry_channel, entry_coef = table.entries(used)
        per_route = np.zeros(len(table.routes))
        per_route[used] = max_min_rates(len(used), entry_flow, entry_channel, capacity,
                                        weight=mult[used], coef=entry_coef)
        self.rate = per_route[self.rid]
        self.dirty = False


def _strike(change: FabricChange, fabric: Fabric, workload: Workload, table: _RouteTable, plans: list[_Plan | None],
            started: np.ndarray, active: _Active, capacity: np.ndarray, limits: np.ndarray,
            route_bytes: np.ndarray, outstanding: np.ndarray) -> tuple[np.ndarray, float, dict]:
    """Switch the run to ``change``: new capacities, sub-flows
    and plans off the lost channels (module docstring). Returns the grown ``route_bytes``, the
    change in hop-bytes (for the invariant) and the event for the result."""
    n_real = len(fabric.channels)
    capacity[:n_real] = 0.0
    capacity[change.original_id] = channel_capacity_Bps(change.fabric)
    lost = np.ones(len(capacity), dtype=bool)
    lost[change.original_id] = False
    lost[n_real:] = False
    route_lost = np.add.reduceat(lost[table.channels], table.ptr[:-1]) > 0 if len(table.routes) else np.zeros(0, bool)
    active.flush()
    on_lost = route_lost[active.rid] if len(active) else np.zeros(0, dtype=bool)
    moved = {}  # tid -> bytes still to move off lost routes
    hop_delta = 0.0
    if on_lost.any():
        np.add.at(route_bytes, active.rid[on_lost], active.bytes[on_lost] - active.left[on_lost])
        hop_delta -= float(np.dot(active.left[on_lost], table.hops[active.rid[on_lost]]))
        for tid, left in zip(active.tid[on_lost].tolist(), active.left[on_lost].tolist()):
            moved[tid] = moved.get(tid, 0.0) + left
        np.subtract.at(outstanding, active.tid[on_lost], 1)
        active.keep(~on_lost)
    pending = [t.id for t in workload.transfers if plans[t.id] is not None and not started[t.id]
               and len(plans[t.id].route_ids) and route_lost[plans[t.id].route_ids].any()]
    new_routes: dict[int, tuple[list[int], np.ndarray]] = {}
    for tid in [*moved, *pending]:
        t = workload.transfers[tid]
        last = table.routes[int(plans[tid].route_ids[0])][-1]
        limit = (last,) if last >= n_real else ()
        when = f"from {format_seconds(change.at_s)} on ({'; '.join(change.faults)})"
        in_switch = "" if {fabric.nodes[t.src].kind, fabric.nodes[t.dst].kind} <= {"gpu", "host"} else \
            " (a reduction in a switch, as NVLS does, cannot move mid-call); use an algorithm that does not " \
            "reduce in the switches, e.g. ring"
        gone = [n for n in (t.src, t.dst) if n not in change.fabric.nodes]
        if gone:
            raise InputError(f"{when} {gone[0]} is gone but transfer {t.tag or t.id} ({t.src} -> {t.dst}) ends there: "
                             f"the run cannot complete{in_switch}")
        try:
            routes = equal_cost_routes(change.fabric, t.src, t.dst)
        except nx.NetworkXNoPath:
            raise InputError(f"{when} {t.src} has no route to {t.dst} (transfer {t.tag or t.id}): the run cannot "
                             f"complete{in_switch}") from None
        new_routes[tid] = ([table.intern(tuple(change.original_id[list(r)].tolist()) + limit) for r in routes],
                           route_shares(change.fabric, routes))
    if new_routes:
        table.freeze(fabric, limits)
        route_bytes = np.concatenate((route_bytes, np.zeros(len(table.routes) - len(route_bytes))))
    for tid, (rids, shares) in new_routes.items():
        ids = np.array(rids, dtype=np.int64)
        old = plans[tid]
        plans[tid] = _Plan(ids, shares, max(float(table.latency_s[ids].max()), old.latency_s if tid in moved else 0.0),
                           float(np.dot(shares, table.hops[ids])))
        if tid in moved:
            active.add(tid, moved[tid], plans[tid])
            outstanding[tid] += len(ids)
            hop_delta += moved[tid] * plans[tid].mean_hops
    active.flush()
    active.dirty = True
    event = {"at_s": change.at_s, "faults": list(change.faults), "bytes_rerouted": float(sum(moved.values())),
             "transfers_rerouted": len(new_routes)}
    return route_bytes, hop_delta, event


def run_flow(fabric: Fabric, workload: Workload, config: FlowConfig = FlowConfig()) -> RunResult:
    """Run ``workload`` on ``fabric`` with max-min fair fluid flows; return the engine-neutral result.

    The run moves classes of identical transfers (``FlowConfig.aggregate``): a class starts when
    its representative's deps are done (its members share them) and all its members finish together."""
    wall0 = time.perf_counter()
    transfers = workload.transfers
    n = len(transfers)
    # faults at a time reroute single transfers: no classes then (each transfer its own)
    klass, reps, mult = _classes(workload, config.aggregate and not fabric.changes)
    members: list[list[int]] = [[] for _ in reps]
    for tid, k in enumerate(klass):
        members[k].append(tid)
    table = _RouteTable()
    plans, limits = _plan(fabric, workload, table, reps, mult)
    capacity = np.concatenate((channel_capacity_Bps(fabric), limits))
    n_real = len(fabric.channels)
    start = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    waiting = [len(transfers[r].deps) for r in reps]
    children: list[list[int]] = [[] for _ in range(n)]  # transfer -> classes waiting on it
    for k, r in enumerate(reps):
        for d in transfers[r].deps:
            children[d].append(k)
    outstanding = np.zeros(len(reps), dtype=np.int64)
    route_bytes = np.zeros(len(table.routes))
    heap: list[tuple[float, int, int, int]] = []
    seq = 0

    def release(k: int, ready: float) -> None:
        nonlocal seq
        t = transfers[reps[k]]
        if t.bytes == 0:
            start[members[k]] = ready
            heapq.heappush(heap, (ready + t.delay_s, seq, _FINISH, k))
        else:
            heapq.heappush(heap, (ready + t.delay_s, seq, _START, k))
        seq += 1

    for k, r in enumerate(reps):
        if not transfers[r].deps:
            release(k, 0.0)

    active = _Active()
    now, events, delivered = 0.0, 0, 0
    changes, fault_events, hop_delta, planned_hop_bytes = list(fabric.changes), [], 0.0, 0.0
    while heap or len(active):
        events += 1
        if events > config.max_events:
            raise SimulationError(f"flow engine stopped after {config.max_events} events")
        if active.dirty:
            active.reallocate(capacity, table)
        t_flow = now + float(np.min(active.left / active.rate)) if len(active) else np.inf
        t_change = changes[len(fault_events)].at_s if len(fault_events) < len(changes) else np.inf
        t_next = min(heap[0][0] if heap else np.inf, t_flow, t_change)
        if len(active):
            active.left -= active.rate * (t_next - now)
            drained = active.left <= config.done_fraction * active.bytes
            if t_next == t_flow:
                drained[np.argmin(active.left)] = True
            if drained.any():
                route_bytes += np.bincount(active.rid[drained], weights=active.bytes[drained] * active.weight[drained],
                                           minlength=len(route_bytes))
                ks = active.tid[drained]
                np.subtract.at(outstanding, ks, 1)
                for k in np.unique(ks[outstanding[ks] == 0]).tolist():
                    heapq.heappush(heap, (t_next + plans[k].latency_s, seq, _FINISH, k))
                    seq += 1
                active.keep(~drained)
        now = t_next
        if t_change <= now:  # a fault strikes: before anything starts at this time
            route_bytes, delta, event = _strike(changes[len(fault_events)], fabric, workload, table, plans,
                                                np.isfinite(start), active, capacity, limits, route_bytes,
                                                outstanding)
            hop_delta += delta
            fault_events.append(event)
        while heap and heap[0][0] <= now:
            _, _, kind, k = heapq.heappop(heap)
            if kind == _START:
                start[members[k]] = now
                plan = plans[k]
                if not len(plan.route_ids):
                    heapq.heappush(heap, (now, seq, _FINISH, k))
                    seq += 1
                    continue
                active.add(k, float(transfers[reps[k]].bytes), plan, mult[k])
                outstanding[k] += len(plan.route_ids)
                planned_hop_bytes += transfers[reps[k]].bytes * mult[k] * plan.mean_hops
            else:
                finish[members[k]] = now
                delivered += transfers[reps[k]].bytes * mult[k]
                for tid in members[k]:
                    for child in children[tid]:
                        waiting[child] -= 1
                        if waiting[child] == 0:
                            release(child, now)
        active.flush()
    channel_bytes = np.zeros(len(capacity))
    if len(table.routes):
        np.add.at(channel_bytes, table.channels, np.repeat(route_bytes, table.length))
    channel_bytes, capacity = channel_bytes[:n_real], capacity[:n_real]
    injected = sum(t.bytes for t in transfers)
    hop_bytes = sum(transfers[r].bytes * mult[k] * plans[k].mean_hops
                    for k, r in enumerate(reps) if plans[k] is not None)
    if fault_events:  # rerouted transfers: their bytes before the fault went over their old routes
        hop_bytes = planned_hop_bytes + hop_delta
    invariants = {
        "all_transfers_finished": bool(np.all(np.isfinite(finish))),
        "bytes_conserved": delivered == injected,
        "channel_bytes_match_routes": bool(np.isclose(channel_bytes.sum(), hop_bytes, rtol=1e-9)),
        "deps_respected": _deps_respected(transfers, start, finish),
    }
    makespan = float(np.nanmax(finish)) if n else 0.0
    return RunResult(engine="flow", makespan_s=makespan, start_s=start, finish_s=finish,
                     bytes_injected=injected, bytes_delivered=delivered, channel_bytes=channel_bytes,
                     channel_busy_s=channel_bytes / np.array([c.rate_Bps for c in fabric.channels]),
                     channel_credit_stall_s=np.zeros(len(fabric.channels)), events=events,
                     wall_s=time.perf_counter() - wall0, invariants=invariants, fault_events=fault_events)


def _deps_respected(transfers, start: np.ndarray, finish: np.ndarray) -> bool:
    """Every transfer started no earlier than each of its deps finished (one numpy comparison)."""
    child = np.fromiter((t.id for t in transfers for _ in t.deps), dtype=np.int64)
    dep = np.fromiter((d for t in transfers for d in t.deps), dtype=np.int64, count=len(child))
    return bool(np.all(start[child] >= finish[dep] - 1e-15))
