"""Flow engine: max-min fairness, closed forms, invariants, determinism."""

import numpy as np
import pytest

from simulator.engine.flow import run_flow
from simulator.engine.flow_maxmin import max_min_rates
from simulator.engine.transfer import Transfer, Workload
from simulator.topology.synthetic import chain, star
from simulator.workloads.collectives import build_collective


def test_two_flows_share_a_link_third_gets_full_rate():
    f = star(4, rate_Bps=100.0, latency_s=0.0)
    w = Workload("fair", (Transfer(0, "gpu0", "gpu1", 100), Transfer(1, "gpu0", "gpu2", 100),
                          Transfer(2, "gpu3", "gpu0", 100)))
    r = run_flow(f, w)
    assert r.finish_s.tolist() == pytest.approx([2.0, 2.0, 1.0])


def test_progressive_filling_parking_lot():
    # channels 0,1 of capacity 1; flow 0 crosses both, flows 1 and 2 one each -> all get 1/2
    rates = max_min_rates(3, np.array([0, 0, 1, 2]), np.array([0, 1, 0, 1]), np.array([1.0, 1.0]))
    assert rates.tolist() == pytest.approx([0.5, 0.5, 0.5])
    # capacity 1 and 3: flow 0 limited to 1/2 on channel 0, flow 2 takes the rest of channel 1
    rates = max_min_rates(3, np.array([0, 0, 1, 2]), np.array([0, 1, 0, 1]), np.array([1.0, 3.0]))
    assert rates.tolist() == pytest.approx([0.5, 0.5, 2.5])


def test_freed_capacity_is_reallocated_when_a_flow_finishes():
    f = star(3, rate_Bps=100.0, latency_s=0.0)
    w = Workload("re", (Transfer(0, "gpu0", "gpu1", 50), Transfer(1, "gpu0", "gpu2", 150)))
    r = run_flow(f, w)
    # both at 50 B/s until t=1 (50 B each), then transfer 1 alone at 100 B/s for its last 100 B
    assert r.finish_s.tolist() == pytest.approx([1.0, 2.0])


@pytest.mark.parametrize("n", [4, 8])
def test_ring_all_reduce_closed_form_on_ideal_star(n):
    S, B = 1 << 26, 50e9
    f = star(n, rate_Bps=B, latency_s=0.0)
    r = run_flow(f, build_collective(f, f.gpus, "all_reduce", S, "ring", "ideal"))
    assert r.makespan_s == pytest.approx(2 * (n - 1) / n * S / B, rel=0.01)


def test_latency_and_delay_add_to_transfer_time():
    f = chain(3, rate_Bps=1e9, latency_s=1e-6, switch_latency_s=2e-6)
    w = Workload("lat", (Transfer(0, "gpu0", "gpu1", 1000, delay_s=5e-6),
                         Transfer(1, "gpu1", "gpu1", 0, (0,), 3e-6)))
    r = run_flow(f, w)
    assert r.start_s[0] == pytest.approx(5e-6)
    assert r.finish_s[0] == pytest.approx(5e-6 + 1e-6 + 3 * 1e-6 + 2 * 2e-6)
    assert r.finish_s[1] == pytest.approx(r.finish_s[0] + 3e-6)


def test_invariants_bytes_and_determinism():
    f = star(6, rate_Bps=25e9, latency_s=50e-9, switch_latency_s=100e-9)
    w = build_collective(f, f.gpus, "all_reduce", 8 << 20, "ring", "LL128", granularity="chunked",
                         chunk_bytes=256 << 10)
    a, b = run_flow(f, w), run_flow(f, w)
    assert all(a.invariants.values()), a.invariants
    assert a.bytes_delivered == w.total_bytes
    assert a.channel_bytes.sum() == pytest.approx(2 * w.total_bytes)  # every route is 2 hops
    assert np.array_equal(a.finish_s, b.finish_s) and np.array_equal(a.channel_bytes, b.channel_bytes)
    assert np.all(a.utilization() <= 1 + 1e-9)


@pytest.mark.parametrize("topology,op,algo,protocol,granularity", [
    ("hgx_h100", "all_reduce", "ring", "Simple", "steady"),
    ("hgx_h100", "all_reduce", "tree", "LL128", "chunked"),
    ("hgx_h100", "alltoall", "direct", "Simple", "steady"),
    ("hopper_ib_rack", "all_reduce", "hierarchical", "Simple", "steady"),
    ("hopper_ib_rack", "all_reduce", "tree", "LL128", "steady"),
])
def test_identical_transfers_run_as_one_class_give_the_same_result(topology, op, algo, protocol, granularity):
    """FlowConfig.aggregate runs identical transfers as one weighted flow: exact, not an approximation."""
    from pathlib import Path

    from simulator.engine.flow import FlowConfig
    from simulator.topology.builder import build_fabric

    fabric = build_fabric(Path(__file__).resolve().parents[1] / "topologies" / f"{topology}.yaml")
    w = build_collective(fabric, fabric.gpus, op, 16 << 20, algo, protocol, granularity=granularity)
    one_each = run_flow(fabric, w, FlowConfig(aggregate=False))
    classes = run_flow(fabric, w)
    assert classes.finish_s == pytest.approx(one_each.finish_s, rel=1e-12)
    assert classes.start_s == pytest.approx(one_each.start_s, rel=1e-12)
    assert classes.channel_bytes == pytest.approx(one_each.channel_bytes, rel=1e-9)
    assert all(classes.invariants.values())
