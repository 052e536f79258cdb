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

import bisect
import heapq
import time
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from simulator.engine.flow_maxmin import max_min_rates
from simulator.engine.result import RunResult
from simulator.engine.transfer import Transfer, Workload
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


def _segments(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Indices of the slices ``[starts[i], starts[i] + lengths[i])`` of a flat array, one after the
    other (a CSR gather)."""
    first = np.cumsum(lengths) - lengths  # where each slice begins in the output
    return np.repeat(starts - first, lengths) + np.arange(int(lengths.sum()))


class _RouteTable:
    """Routes interned to ids, their channels in CSR form (``ptr``/``channels``) for numpy gathers,
    and per route its bottleneck link rate (B/s) and zero-load latency (s), as ``topology.routing``'s
    ``route_rate_Bps`` / ``route_latency_s`` define them, computed for all routes at once."""

    __slots__ = ("id_of", "routes", "ptr", "channels", "length", "rate_Bps", "latency_s", "hops",
                 "use_ptr", "use_channel", "use_coef", "use_length")

    def __init__(self) -> None:
        self.id_of: dict[tuple[int, ...], int] = {}
        self.routes: list[tuple[int, ...]] = []

    def append_new(self, routes: tuple[tuple[int, ...], ...], limit: tuple[int]) -> list[int]:
        """Ids of ``routes``, each with ``limit`` appended: new routes, as the limit is one class's
        own, so added without a look-up (``intern`` indexes them when it is next called)."""
        first = len(self.routes)
        if len(routes) == 1:
            self.routes.append(tuple(routes[0]) + limit)
            return [first]
        position = dict.fromkeys(map(tuple, routes))  # a route listed twice is one route
        self.routes.extend(r + limit for r in position)
        if len(position) == len(routes):
            return list(range(first, first + len(routes)))
        for i, r in enumerate(position, first):
            position[r] = i
        return [position[tuple(r)] for r in routes]

    def intern(self, route: tuple[int, ...]) -> int:
        """Id of ``route``, added if new."""
        if len(self.id_of) < len(self.routes):  # routes added by append_new
            self.id_of.update(zip(self.routes[len(self.id_of):], range(len(self.id_of), len(self.routes))))
        rid = self.id_of.get(route)
        if rid is None:
            rid = self.id_of[route] = len(self.routes)
            self.routes.append(route)
        return rid

    def freeze(self, fabric: Fabric, limits: np.ndarray) -> None:
        """Build the arrays once every route is known (every route has at least one channel).

        Channel ids past the fabric's are rate limits (``limits[id - len(fabric.channels)]`` B/s):
        they cap a route's rate but add no latency and no hop."""
        self.length = np.fromiter(map(len, self.routes), dtype=np.int64, count=len(self.routes))
        self.ptr = np.zeros(len(self.routes) + 1, dtype=np.int64)
        np.cumsum(self.length, out=self.ptr[1:])
        self.channels = np.fromiter(chain.from_iterable(self.routes), dtype=np.int64, count=int(self.ptr[-1]))
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
        reverse, overhead = fabric.response_uses()
        ch = self.channels
        real = np.where(ch < n_real, ch, n_real)  # limit channels look up the dummy last entry
        extra = overhead[real] > 0
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
        at = _segments(self.use_ptr[rids], lengths)
        return entry_flow, self.use_channel[at], self.use_coef[at]


class _Plans:
    """Per class, the routing decided before the run, in flat arrays: its sub-flows' routes
    (interned ids) ``route_ids[at[k]:at[k] + count[k]]`` and their shares of its bytes, the
    zero-load latency of its slowest route (s) and its mean hops per byte. A class with no route
    (a pure delay, or a local copy that crosses no channel) has ``count`` 0. A plan made again
    during the run (a fault) is appended and ``at`` points to it."""

    __slots__ = ("at", "count", "route_ids", "shares", "latency_s", "mean_hops")

    def __init__(self, at: np.ndarray, count: np.ndarray, route_ids: np.ndarray, shares: np.ndarray,
                 latency_s: list[float], mean_hops: list[float]) -> None:
        self.at = at
        self.count = count
        self.route_ids = route_ids
        self.shares = shares
        self.latency_s = latency_s
        """Per class (a list: read one at a time in the event loop)."""
        self.mean_hops = mean_hops
        """Per class (a list, as ``latency_s``)."""

    def routes(self, k: int) -> np.ndarray:
        """Route ids of class ``k``'s sub-flows."""
        return self.route_ids[self.at[k]:self.at[k] + self.count[k]]

    def entries(self, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index into ``route_ids``/``shares`` of every sub-flow of the classes ``ks``, one class
        after the other; sub-flows per class)."""
        counts = self.count[ks]
        return _segments(self.at[ks], counts), counts

    def replace(self, k: int, route_ids: np.ndarray, shares: np.ndarray, latency_s: float, mean_hops: float) -> None:
        """Give class ``k`` a new plan."""
        self.at[k] = len(self.route_ids)
        self.count[k] = len(route_ids)
        self.route_ids = np.concatenate((self.route_ids, route_ids))
        self.shares = np.concatenate((self.shares, shares))
        self.latency_s[k] = latency_s
        self.mean_hops[k] = mean_hops


def _paths_ids(paths: Iterable[tuple | None]) -> list[int]:
    """A number per entry of ``paths``: equal paths, equal numbers (in order of first appearance)."""
    of: dict[tuple | None, int] = {}
    return [of.setdefault(p, len(of)) for p in paths]


_PATHS = attrgetter("paths")
_SAME_CLASS = attrgetter("src", "dst", "bytes", "delay_s", "rate_Bps", "deps")
"""What identical transfers share, with their paths (``_classes``)."""


def _classes(transfers: tuple[Transfer, ...], aggregate: bool) -> tuple[np.ndarray, list[int], list[int], list[int]]:
    """Transfers grouped into classes of identical ones (``FlowConfig.aggregate``): each
    transfer's class, each class's first transfer (its representative), its multiplicity and the
    number of its paths (``_paths_ids``). Classes are numbered in the order of their first transfer."""
    n = len(transfers)
    if not aggregate:
        return np.arange(n), list(range(n)), [1] * n, _paths_ids(map(_PATHS, transfers))
    # a collective hands one paths object to many transfers: group by the object first, so that a
    # transfer costs no hash of its nested paths; then merge classes whose paths are equal objects apart
    of: dict[tuple, int] = {}
    keys = zip(map(_SAME_CLASS, transfers), map(id, map(_PATHS, transfers)))
    klass = np.array([of.setdefault(key, len(of)) for key in keys], dtype=np.int64)
    reps = np.unique(klass, return_index=True)[1]
    paths = [transfers[r].paths for r in reps.tolist()]
    paths_ids = _paths_ids(paths)
    if len(set(paths_ids)) < len(set(map(id, paths))):  # equal paths in separate objects
        merged: dict[tuple, int] = {}
        into = np.array([merged.setdefault(key, len(merged)) for key in
                         zip(map(_SAME_CLASS, (transfers[r] for r in reps.tolist())), paths_ids)], dtype=np.int64)
        klass = into[klass]
        first = np.unique(into, return_index=True)[1]  # of the classes merged, the one of the first transfer
        reps, paths_ids = reps[first], np.array(paths_ids)[first].tolist()
    return klass, reps.tolist(), np.bincount(klass).tolist(), paths_ids


def _plan(fabric: Fabric, transfers: tuple[Transfer, ...], reps: list[int], mult: list[int],
          paths_ids: list[int], table: _RouteTable) -> tuple[_Plans, np.ndarray]:
    """One plan per class (``_classes``), the same for classes with the same paths (or src and dst,
    when they leave the routes to the engine); sub-flow bytes in proportion to each route's
    bottleneck rate. A rate-limited class gets a limit channel of its own (id
    ``len(fabric.channels) + k``) appended to each of its routes, of its members' rates together
    (each member's sub-flows are held to its own rate). Returns the plans and the limits (B/s)."""
    n_real = len(fabric.channels)
    set_of: dict[int | tuple[str, str], int] = {}  # paths number, or (src, dst) -> index in route_sets
    # per index its routes, channel ids (None: a local copy, no channel); 0: a paced local copy's,
    # of its limit alone
    route_sets: list[tuple[tuple[int, ...], ...] | None] = [((),)]
    unlimited: dict[int, list[int]] = {}  # route set -> its route ids without a limit
    class_set: list[int] = []  # -1: a pure delay
    class_routes: list[int] = []  # the route ids of every class, one class after the other
    class_count: list[int] = []  # per class: how many
    limits: list[float] = []
    for k, tid in enumerate(reps):
        t = transfers[tid]
        if t.bytes == 0:
            class_set.append(-1)
            class_count.append(0)
            continue
        if t.rate_Bps and t.src == t.dst:  # a local copy at the pace of its CTAs: the limit is its route
            s = 0
        else:
            s = set_of.get(key := paths_ids[k] if t.paths is not None else (t.src, t.dst))
            if s is None:
                routes = t.paths if t.paths is not None else equal_cost_routes(fabric, t.src, t.dst)
                if not routes:
                    raise SimulationError(f"transfer {t.id} ({t.src}->{t.dst}) has no route")
                s = set_of[key] = len(route_sets)
                route_sets.append(None if tuple(routes) == ((),) else routes)
        class_set.append(s)
        if t.rate_Bps:  # routes of its own
            limit = (n_real + len(limits),)
            limits.append(t.rate_Bps * mult[k])
            rids = table.append_new(route_sets[s], limit) if route_sets[s] else []
        else:
            rids = unlimited.get(s)
            if rids is None:
                rids = unlimited[s] = [table.intern(tuple(r)) for r in route_sets[s] or ()]
        class_routes.extend(rids)
        class_count.append(len(rids))
    limits_Bps = np.array(limits, dtype=float)
    table.freeze(fabric, limits_Bps)
    return _plans_of(table, np.array(class_routes, dtype=np.int64), np.array(class_count, dtype=np.int64),
                     class_set, route_sets), limits_Bps


def _plans_of(table: _RouteTable, class_routes: np.ndarray, count: np.ndarray, class_set: list[int],
              route_sets: list[tuple[tuple[int, ...], ...] | None]) -> _Plans:
    """The plans of ``_plan`` given the route ids of each class (``count[k]`` of them, one class
    after the other in ``class_routes``) and its route set (see there)."""
    given = np.cumsum(count) - count  # where each class's route ids are in class_routes
    single = count == 1  # one route: all bytes on it (a paced local copy has no hop and no latency)
    rid = np.where(single, class_routes[np.where(single, given, 0)] if len(class_routes) else 0, 0)
    latency_s = np.where(single, table.latency_s[rid] if len(table.routes) else 0.0, 0.0)
    mean_hops = np.where(single, table.hops[rid] if len(table.routes) else 0, 0).astype(float)
    multi: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, float, float]] = {}  # route ids -> plan
    weights_of: dict[int, np.ndarray] = {}  # route set -> weights (the same with or without a limit)
    several = np.flatnonzero(count > 1).tolist()
    kept = count.copy()  # routes with a share of the bytes
    plan_of: dict[int, tuple[np.ndarray, np.ndarray, float, float]] = {}  # class -> its plan
    for k in several:
        rids = tuple(class_routes[given[k]:given[k] + count[k]].tolist())
        plan = multi.get(rids)
        if plan is None:
            ids = np.array(rids, dtype=np.int64)
            weights = weights_of.get(class_set[k])
            if weights is None:
                weights = weights_of[class_set[k]] = route_weights(route_sets[class_set[k]])
            rates = table.rate_Bps[ids] * weights
            share = rates / rates.sum()
            keep = share > 0
            plan = multi[rids] = (ids[keep], share[keep], float(table.latency_s[ids].max()),
                                  float(np.dot(share, table.hops[ids])))
        plan_of[k] = plan
        kept[k] = len(plan[0])
        latency_s[k], mean_hops[k] = plan[2], plan[3]
    at = np.cumsum(kept) - kept
    route_ids = np.empty(int(kept.sum()), dtype=np.int64)
    shares = np.empty(len(route_ids))
    route_ids[at[single]] = rid[single]
    shares[at[single]] = 1.0
    for k in several:
        ids, share, _, _ = plan_of[k]
        route_ids[at[k]:at[k] + kept[k]] = ids
        shares[at[k]:at[k] + kept[k]] = share
    return _Plans(at, kept, route_ids, shares, latency_s.tolist(), mean_hops.tolist())


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
    """The active sub-flows as parallel numpy arrays, and per class how many of them it has.
    Additions are queued and concatenated once per event (``flush``), so adding k sub-flows costs
    O(k), not O(k x active)."""

    __slots__ = ("plans", "tid", "bytes", "left", "rid", "weight", "rate", "outstanding", "dirty", "_pending")

    def __init__(self, plans: _Plans, n_classes: int) -> None:
        self.plans = plans
        """Where each class's sub-flows go (``flush`` reads the plan of the moment)."""
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
        self.outstanding = np.zeros(n_classes, dtype=np.int64)
        """Per class: its sub-flows still active."""
        self.dirty = False
        self._pending: tuple[list[int], list[float], list[int]] = ([], [], [])
        """Queued classes, bytes of each of their transfers, their transfers."""

    def __len__(self) -> int:
        return len(self.tid)

    def add(self, k: int, nbytes: float, weight: int = 1) -> None:
        """Queue the sub-flows of class ``k`` (``nbytes`` of each of its ``weight`` transfers
        spread over its plan's routes)."""
        ks, each, weights = self._pending
        ks.append(k)
        each.append(nbytes)
        weights.append(weight)
        self.dirty = True

    def flush(self) -> None:
        if not self._pending[0]:
            return
        ks = np.array(self._pending[0], dtype=np.int64)
        at, counts = self.plans.entries(ks)
        nbytes = np.repeat(np.array(self._pending[1], dtype=float), counts) * self.plans.shares[at]
        weight = np.repeat(np.array(self._pending[2], dtype=float), counts)
        np.add.at(self.outstanding, ks, counts)
        self.tid = np.concatenate((self.tid, np.repeat(ks, counts)))
        self.weight = np.concatenate((self.weight, weight))
        self.bytes = np.concatenate((self.bytes, nbytes))
        self.left = np.concatenate((self.left, nbytes))
        self.rid = np.concatenate((self.rid, self.plans.route_ids[at]))
        for queue in self._pending:
            queue.clear()

    def remove(self, mask: np.ndarray) -> np.ndarray:
        """Drop the sub-flows ``mask``; return the classes that have none left (ascending)."""
        ks = self.tid[mask]
        np.subtract.at(self.outstanding, ks, 1)
        self.tid = self.tid[~mask]
        self.weight = self.weight[~mask]
        self.bytes = self.bytes[~mask]
        self.left = self.left[~mask]
        self.rid = self.rid[~mask]
        self.dirty = True
        return np.unique(ks[self.outstanding[ks] == 0])

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


class _Agenda:
    """Starts and finishes to come, as (kind, class) at a time: taken in time order and, at equal
    times, in the order they were scheduled (as one heap of (time, order of scheduling) would).
    Entries scheduled together (the classes with no deps; the finishes of the classes drained at
    one event) are sorted once into a run, which the heap holds as one entry, ``(time of its next
    entry, order of scheduling of its first, run)``; a single entry is ``(time, order, kind, k)``.
    Orders never repeat, so the heap never compares past them."""

    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple] = []
        self._seq = 0

    def __bool__(self) -> bool:
        return bool(self._heap)

    def schedule(self, time: float, kind: int, k: int) -> None:
        heapq.heappush(self._heap, (time, self._seq, kind, k))
        self._seq += 1

    def schedule_all(self, entries: list[tuple[float, int, int]]) -> None:
        """Schedule the entries (time, kind, class) in this order."""
        if len(entries) <= 1:
            for entry in entries:
                self.schedule(*entry)
            return
        run = _Run(entries)
        heapq.heappush(self._heap, (run.times[0], self._seq, run))
        self._seq += len(entries)

    def next_time(self) -> float:
        """Time of the next entry (inf: none)."""
        return self._heap[0][0] if self._heap else np.inf

    def due(self, now: float) -> tuple[list[int], list[int]]:
        """Take the entries due at ``now`` (none is earlier: ``now`` is never past the next
        entry), in order, as their kinds and classes. Entries scheduled for ``now`` while they
        are handled come after them, at the next call."""
        heap, kinds, ks = self._heap, [], []
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            if len(entry) == 4:
                kinds.append(entry[2])
                ks.append(entry[3])
                continue
            run = entry[2]
            end = bisect.bisect_right(run.times, now, run.next)
            kinds.extend(run.kinds[run.next:end])
            ks.extend(run.ks[run.next:end])
            run.next = end
            if end < len(run.times):  # its next entries keep their place among equal times
                heapq.heappush(heap, (run.times[end], entry[1], run))
        return kinds, ks


class _Run:
    """Entries of an ``_Agenda`` scheduled together, sorted by time (stable), in parallel lists."""

    __slots__ = ("times", "kinds", "ks", "next")

    def __init__(self, entries: list[tuple[float, int, int]]) -> None:
        order = np.argsort(np.array([time for time, _, _ in entries]), kind="stable").tolist()
        self.times = [entries[i][0] for i in order]
        self.kinds = [entries[i][1] for i in order]
        self.ks = [entries[i][2] for i in order]
        self.next = 0
        """The first entry not taken yet."""


def _strike(change: FabricChange, fabric: Fabric, workload: Workload, table: _RouteTable, plans: _Plans,
            started: np.ndarray, active: _Active, capacity: np.ndarray, limits: np.ndarray,
            route_bytes: np.ndarray) -> tuple[np.ndarray, float, dict]:
    """Switch the run to ``change``: new capacities, sub-flows and plans off the lost channels
    (module docstring). Runs with changes have no classes: class ``k`` is transfer ``k``. Returns
    the grown ``route_bytes``, the change in hop-bytes (for the invariant) and the event for the
    result."""
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
        active.remove(on_lost)
    to_start = np.flatnonzero((plans.count > 0) & ~started)
    at, counts = plans.entries(to_start)
    pending = np.unique(np.repeat(to_start, counts)[route_lost[plans.route_ids[at]]]).tolist()
    new_routes: dict[int, tuple[list[int], np.ndarray]] = {}
    for tid in [*moved, *pending]:
        t = workload.transfers[tid]
        last = table.routes[int(plans.routes(tid)[0])][-1]
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
        latency_s = max(float(table.latency_s[ids].max()), plans.latency_s[tid] if tid in moved else 0.0)
        plans.replace(tid, ids, shares, latency_s, float(np.dot(shares, table.hops[ids])))
        if tid in moved:
            active.add(tid, moved[tid])
            hop_delta += moved[tid] * plans.mean_hops[tid]
    active.flush()
    active.dirty = True
    event = {"at_s": change.at_s, "faults": list(change.faults), "bytes_rerouted": float(sum(moved.values())),
             "transfers_rerouted": len(new_routes)}
    return route_bytes, hop_delta, event


def _dep_edges(deps: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """(waiting index, dep) for every dep of every entry of ``deps``, in order."""
    lengths = np.fromiter(map(len, deps), dtype=np.int64, count=len(deps))
    waiting = np.repeat(np.arange(len(deps)), lengths)
    return waiting, np.fromiter(chain.from_iterable(deps), dtype=np.int64, count=len(waiting))


def _children(deps: list[tuple[int, ...]], klass: np.ndarray) -> tuple[list[int], list[int]]:
    """Given each class's deps (its representative's), per class ``k`` the classes waiting on its
    members, ``children[at[k]:at[k + 1]]``: member
    by member (ascending ids), the classes whose representative depends on that member, ascending,
    once per such dep. A class is released by the last of its deps to finish, so this order is the
    order of release."""
    child, dep = _dep_edges(deps)
    parent = klass[dep]
    order = np.lexsort((child, dep, parent))
    at = np.zeros(len(deps) + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent, minlength=len(deps)), out=at[1:])
    return child[order].tolist(), at.tolist()


def run_flow(fabric: Fabric, workload: Workload, config: FlowConfig = FlowConfig()) -> RunResult:
    """Run ``workload`` on ``fabric`` with max-min fair fluid flows; return the engine-neutral result.

    The run moves classes of identical transfers (``FlowConfig.aggregate``): a class starts when
    its representative's deps are done (its members share them) and all its members finish together."""
    wall0 = time.perf_counter()
    transfers = workload.transfers
    n = len(transfers)
    # faults at a time reroute single transfers: no classes then (each transfer its own)
    klass, reps, mult, paths_ids = _classes(transfers, config.aggregate and not fabric.changes)
    table = _RouteTable()
    plans, limits = _plan(fabric, transfers, reps, mult, paths_ids, table)
    capacity = np.concatenate((channel_capacity_Bps(fabric), limits))
    n_real = len(fabric.channels)
    firsts = list(map(transfers.__getitem__, reps))  # each class's representative
    nbytes = list(map(attrgetter("bytes"), firsts))  # per class: bytes of each of its transfers
    delay_s = list(map(attrgetter("delay_s"), firsts))
    deps = list(map(attrgetter("deps"), firsts))
    waiting = list(map(len, deps))  # per class: its deps not finished yet
    children, children_at = _children(deps, klass)
    start = [np.nan] * len(reps)  # per class: when it started (its transfers start together)
    finish = [np.nan] * len(reps)  # per class: when it finished (its transfers finish together)
    route_bytes = np.zeros(len(table.routes))

    def release(k: int, ready: float) -> tuple[float, int, int]:
        """The entry of class ``k`` once its deps are done at ``ready``: its start after its delay
        (a pure delay starts at ``ready``: its finish then)."""
        if nbytes[k] == 0:
            start[k] = ready
            return ready + delay_s[k], _FINISH, k
        return ready + delay_s[k], _START, k

    agenda = _Agenda()
    agenda.schedule_all([release(k, 0.0) for k, deps in enumerate(waiting) if not deps])
    active = _Active(plans, len(reps))
    now, events, delivered = 0.0, 0, 0
    changes, fault_events, hop_delta, planned_hop_bytes = list(fabric.changes), [], 0.0, 0.0
    while agenda or len(active):
        events += 1
        if events > config.max_events:
            raise SimulationError(f"flow engine stopped after {config.max_events} events")
        if active.dirty:
            active.reallocate(capacity, table)
        t_flow = now + float(np.min(active.left / active.rate)) if len(active) else np.inf
        t_change = changes[len(fault_events)].at_s if len(fault_events) < len(changes) else np.inf
        t_next = min(agenda.next_time(), t_flow, t_change)
        if len(active):
            active.left -= active.rate * (t_next - now)
            drained = active.left <= config.done_fraction * active.bytes
            if t_next == t_flow:
                drained[np.argmin(active.left)] = True
            if drained.any():
                route_bytes += np.bincount(active.rid[drained], weights=active.bytes[drained] * active.weight[drained],
                                           minlength=len(route_bytes))
                finished = active.remove(drained).tolist()
                agenda.schedule_all([(t_next + plans.latency_s[k], _FINISH, k) for k in finished])
        now = t_next
        if t_change <= now:  # a fault strikes: before anything starts at this time
            route_bytes, delta, event = _strike(changes[len(fault_events)], fabric, workload, table, plans,
                                                np.isfinite(start), active, capacity, limits, route_bytes)
            hop_delta += delta
            fault_events.append(event)
        while (due := agenda.due(now))[0]:
            for kind, k in zip(*due):
                if kind == _START:
                    start[k] = now
                    if not plans.count[k]:
                        agenda.schedule(now, _FINISH, k)
                        continue
                    active.add(k, float(nbytes[k]), mult[k])
                    planned_hop_bytes += nbytes[k] * mult[k] * plans.mean_hops[k]
                else:
                    finish[k] = now
                    delivered += nbytes[k] * mult[k]
                    for child in children[children_at[k]:children_at[k + 1]]:
                        waiting[child] -= 1
                        if waiting[child] == 0:
                            agenda.schedule(*release(child, now))
        active.flush()
    channel_bytes = np.zeros(len(capacity))
    if len(table.routes):
        np.add.at(channel_bytes, table.channels, np.repeat(route_bytes, table.length))
    channel_bytes, capacity = channel_bytes[:n_real], capacity[:n_real]
    injected = sum(map(attrgetter("bytes"), transfers))
    hop_bytes = sum(b * m * h for b, m, h in zip(nbytes, mult, plans.mean_hops) if b)
    if fault_events:  # rerouted transfers: their bytes before the fault went over their old routes
        hop_bytes = planned_hop_bytes + hop_delta
    start_s, finish_s = np.array(start)[klass], np.array(finish)[klass]
    invariants = {
        "all_transfers_finished": bool(np.all(np.isfinite(finish_s))),
        "bytes_conserved": delivered == injected,
        "channel_bytes_match_routes": bool(np.isclose(channel_bytes.sum(), hop_bytes, rtol=1e-9)),
        "deps_respected": _deps_respected(transfers, start_s, finish_s),
    }
    makespan = float(np.nanmax(finish_s)) if n else 0.0
    return RunResult(engine="flow", makespan_s=makespan, start_s=start_s, finish_s=finish_s,
                     bytes_injected=injected, bytes_delivered=delivered, channel_bytes=channel_bytes,
                     channel_busy_s=channel_bytes / np.array([c.rate_Bps for c in fabric.channels]),
                     channel_credit_stall_s=np.zeros(len(fabric.channels)), events=events,
                     wall_s=time.perf_counter() - wall0, invariants=invariants, fault_events=fault_events)


def _deps_respected(transfers: tuple[Transfer, ...], start: np.ndarray, finish: np.ndarray) -> bool:
    """Every transfer started no earlier than each of its deps finished (one numpy comparison)."""
    child, dep = _dep_edges(list(map(attrgetter("deps"), transfers)))
    return bool(np.all(start[child] >= finish[dep] - 1e-15))
