"""Flow engine set-up (classes, plans, release order, agenda) against plain per-transfer references.

The engine builds its set-up in flat arrays for speed (issue 11); each test here rebuilds the same
thing the straightforward way, one transfer at a time, and requires equality, floats bit for bit.
"""

from __future__ import annotations

import heapq
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.engine import flow
from simulator.engine.flow import FlowConfig, run_flow
from simulator.engine.transfer import Transfer, Workload
from simulator.topology.builder import build_fabric
from simulator.topology.routing import equal_cost_routes, route_weights
from simulator.topology.synthetic import star
from simulator.workloads.collectives import build_collective

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"

CASES = [  # rate limits, pinned multi-path routes, deps, pure delays, local copies, routed transfers
    ("hgx_h100", "all_reduce", "ring", "LL128"),
    ("hgx_h100", "alltoall", "direct", "Simple"),
    ("hopper_ib_rack", "all_reduce", "hierarchical", "Simple"),
    ("hopper_ib_rack", "all_reduce", "tree", "LL128"),
    ("gb200_nvl72", "all_reduce", "nvls", "Simple"),
]


@pytest.fixture(scope="module", params=CASES, ids=["-".join(c) for c in CASES])
def case(request):
    topology, op, algo, protocol = request.param
    fabric = build_fabric(TOPOLOGIES / f"{topology}.yaml")
    return fabric, build_collective(fabric, fabric.gpus, op, 4 << 20, algo, protocol)


def plain_classes(transfers):
    """Reference grouping: one dict lookup per transfer on everything but its id and tag."""
    of, klass, reps, mult = {}, [], [], []
    for t in transfers:
        key = (t.src, t.dst, t.bytes, t.delay_s, t.rate_Bps, t.deps, t.paths)
        if key not in of:
            of[key] = len(reps)
            reps.append(t.id)
            mult.append(0)
        mult[of[key]] += 1
        klass.append(of[key])
    return klass, reps, mult


def plain_plans(fabric, transfers, reps, mult):
    """Reference plans, class by class: (routes as channel tuples, shares, latency, mean hops),
    None for a pure delay. Limit channels are numbered as the engine numbers them."""
    n_real, n_limits, out = len(fabric.channels), 0, []
    table = flow._RouteTable()
    keyed = []
    for k, tid in enumerate(reps):
        t = transfers[tid]
        if t.bytes == 0:
            keyed.append(None)
            continue
        limit = ()
        if t.rate_Bps:
            limit = (n_real + n_limits,)
            n_limits += 1
        if t.src == t.dst and limit:
            keyed.append([limit])
            continue
        routes = t.paths if t.paths is not None else equal_cost_routes(fabric, t.src, t.dst)
        keyed.append([] if tuple(routes) == ((),) else [tuple(r) + limit for r in routes])
    for routes in keyed:
        for r in routes or ():
            table.intern(r)
    table.freeze(fabric, np.array([transfers[r].rate_Bps * m for r, m in zip(reps, mult) if
                                   transfers[r].bytes and transfers[r].rate_Bps], dtype=float))
    for routes in keyed:
        if routes is None:
            out.append(None)
        elif not routes:
            out.append(((), (), 0.0, 0.0))
        else:
            ids = np.array([table.id_of[r] for r in routes])
            weights = route_weights([r[:int(table.hops[i])] for r, i in zip(routes, ids)]) if len(routes) > 1 \
                else np.ones(1)
            rates = table.rate_Bps[ids] * weights
            shares = rates / rates.sum() if len(routes) > 1 else np.ones(1)
            keep = shares > 0
            mean_hops = float(np.dot(shares, table.hops[ids])) if len(routes) > 1 else float(table.hops[ids[0]])
            out.append((tuple(table.routes[i] for i in ids[keep]), tuple(shares[keep].tolist()),
                        float(table.latency_s[ids].max()), mean_hops))
    return out


def test_classes_match_a_plain_grouping(case):
    _, w = case
    klass, reps, mult, paths_ids = flow._classes(w.transfers, True)
    assert (klass.tolist(), reps, mult) == plain_classes(w.transfers)
    assert paths_ids == flow._paths_ids(w.transfers[r].paths for r in reps)
    # the same transfers with every paths tuple rebuilt (equal values, separate objects): same classes
    rebuilt = tuple(t._replace(paths=None if t.paths is None else tuple(list(t.paths)))  # noqa: C414 (a new object)
                    for t in w.transfers)
    again, again_reps, again_mult, _ = flow._classes(rebuilt, True)
    assert (again.tolist(), again_reps, again_mult) == plain_classes(w.transfers)


def test_plans_match_plain_per_class_plans(case):
    fabric, w = case
    _, reps, mult, paths_ids = flow._classes(w.transfers, True)
    table = flow._RouteTable()
    plans, _ = flow._plan(fabric, w.transfers, reps, mult, paths_ids, table)
    for k, expected in enumerate(plain_plans(fabric, w.transfers, reps, mult)):
        if expected is None:
            assert plans.count[k] == 0
            continue
        routes = plans.routes(k).tolist()
        shares = plans.shares[plans.at[k]:plans.at[k] + plans.count[k]].tolist()
        got = (tuple(table.routes[r] for r in routes), tuple(shares), plans.latency_s[k], plans.mean_hops[k])
        assert got == expected, k


def test_plans_of_a_route_listed_twice_match_plain_plans():
    """Paths that list a route twice (and another once), with and without a rate limit: the
    repeated route is one route carrying two shares, as interning makes it."""
    f = star(3, rate_Bps=100.0, latency_s=1e-6, switch_latency_s=1e-6)
    (a,), (b,) = equal_cost_routes(f, "gpu0", "gpu1"), equal_cost_routes(f, "gpu0", "gpu2")
    twice = (a, a, b)
    ts = (Transfer(0, "gpu0", "gpu1", 300, paths=twice, rate_Bps=50.0),
          Transfer(1, "gpu0", "gpu1", 300, paths=twice),
          Transfer(2, "gpu0", "gpu1", 300, paths=(a, b, a), rate_Bps=70.0))
    _, reps, mult, paths_ids = flow._classes(ts, True)
    table = flow._RouteTable()
    plans, _ = flow._plan(f, ts, reps, mult, paths_ids, table)
    for k, expected in enumerate(plain_plans(f, ts, reps, mult)):
        shares = plans.shares[plans.at[k]:plans.at[k] + plans.count[k]].tolist()
        got = (tuple(table.routes[r] for r in plans.routes(k).tolist()), tuple(shares), plans.latency_s[k],
               plans.mean_hops[k])
        assert got == expected, k
    assert len(table.routes) == 2 + 2 + 2  # a and b, once each per limit and once without


def test_children_are_released_in_the_order_of_per_transfer_lists(case):
    """Reference: a list per transfer of the classes waiting on it; a finishing class walks its
    members in id order."""
    _, w = case
    klass, reps, _, _ = flow._classes(w.transfers, True)
    per_transfer = [[] for _ in w.transfers]
    for k, r in enumerate(reps):
        for d in w.transfers[r].deps:
            per_transfer[d].append(k)
    children, at = flow._children([w.transfers[r].deps for r in reps], klass)
    for k in range(len(reps)):
        members = np.flatnonzero(klass == k).tolist()
        assert children[at[k]:at[k + 1]] == [c for tid in members for c in per_transfer[tid]]


def test_equal_paths_in_separate_objects_make_one_class():
    """Paths are compared by value: a tuple rebuilt per transfer groups like a shared one."""
    f = star(3, rate_Bps=100.0, latency_s=0.0)
    route = equal_cost_routes(f, "gpu0", "gpu1")
    shared = tuple(Transfer(i, "gpu0", "gpu1", 100, paths=route) for i in range(4))
    rebuilt = tuple(Transfer(i, "gpu0", "gpu1", 100, paths=tuple(list(route))) for i in range(4))  # noqa: C414
    assert rebuilt[0].paths is not rebuilt[1].paths
    for ts in (shared, rebuilt):
        klass, reps, mult, _ = flow._classes(ts, True)
        assert (klass.tolist(), reps, mult) == ([0, 0, 0, 0], [0], [4])
        r = run_flow(f, Workload("same", ts))
        assert r.finish_s.tolist() == [4.0] * 4  # four share the 100 B/s link: 400 B in 4 s


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1e-6, 2e-6, 3.5e-6]), max_size=30),
       st.lists(st.lists(st.sampled_from([0.0, 1e-6, 2e-6, 5e-6]), max_size=4), max_size=30))
def test_agenda_takes_entries_in_time_then_scheduling_order(first_times, later):
    """Reference: one heap of (time, order of scheduling), popped one entry at a time. Entries
    are scheduled while others are taken, as the engine does: one, several at once (a run), or
    none per entry taken, some due at once."""
    agenda = flow._Agenda()
    agenda.schedule_all([(t, flow._START, k) for k, t in enumerate(first_times)])
    heap = [(t, k, flow._START, k) for k, t in enumerate(first_times)]
    heapq.heapify(heap)
    seq, got, want = len(first_times), [], []
    more_for_agenda, more_for_heap = list(later), list(later)
    while agenda:
        now = agenda.next_time()
        assert now == heap[0][0]
        while (due := agenda.due(now))[0]:
            for entry in zip(*due):
                got.append(entry)
                if more_for_agenda:
                    delays = more_for_agenda.pop()
                    if len(delays) == 1:
                        agenda.schedule(now + delays[0], flow._FINISH, len(got))
                    else:
                        agenda.schedule_all([(now + d, flow._FINISH, len(got)) for d in delays])
        while heap and heap[0][0] <= now:
            _, _, kind, k = heapq.heappop(heap)
            want.append((kind, k))
            if more_for_heap:
                for d in more_for_heap.pop():
                    heapq.heappush(heap, (now + d, seq, flow._FINISH, len(want)))
                    seq += 1
    assert got == want and not heap


def test_classes_run_as_one_flow_give_bit_identical_times_on_a_star():
    """Aggregation is exact here: identical transfers in classes or one flow each, equal bits."""
    f = star(5, rate_Bps=50e9, latency_s=100e-9, switch_latency_s=300e-9)
    w = build_collective(f, f.gpus, "all_reduce", 8 << 20, "ring", "LL128", granularity="chunked",
                         chunk_bytes=512 << 10)
    a, b = run_flow(f, w), run_flow(f, w, FlowConfig(aggregate=False))
    assert a.start_s.tobytes() == b.start_s.tobytes() and a.finish_s.tobytes() == b.finish_s.tobytes()
    assert all(a.invariants.values())
