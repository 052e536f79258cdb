"""Collective DAGs: bytes moved, bus-bandwidth factors, tuner choices, granularity equivalence."""

import pytest

from simulator.engine.flow import run_flow
from simulator.errors import InputError
from simulator.metrics.collective_stats import busbw_GBps, row
from simulator.topology.synthetic import star
from simulator.workloads.collectives import ALGORITHMS, build_collective, busbw_factor

_STAR = star(4, reduction=True)
OPS_BY_ALGO = [(a, op) for a, alg in ALGORITHMS.items() if not alg.auto_multi_node_only
               and alg.applicable(_STAR, tuple(_STAR.gpus)) is None for op in sorted(alg.ops)]
"""Every algorithm that runs on one star of GPUs (tree, nvls_tree, collnet_chain and hierarchical
join nodes)."""


def test_busbw_factors_are_nccl_tests():
    assert busbw_factor("all_reduce", 8) == pytest.approx(1.75)
    for op in ("all_gather", "reduce_scatter", "alltoall"):
        assert busbw_factor(op, 8) == pytest.approx(7 / 8)
    assert busbw_factor("broadcast", 8) == busbw_factor("sendrecv", 8) == 1.0
    assert busbw_GBps("all_reduce", 4, 1e9, 1.0) == pytest.approx(1.5)


@pytest.mark.parametrize("algo,op", OPS_BY_ALGO)
def test_every_algorithm_and_op_runs_and_conserves_bytes(algo, op):
    f = star(4, rate_Bps=50e9, latency_s=20e-9, switch_latency_s=100e-9, reduction=True)
    for gran in ("steady", "chunked"):
        w = build_collective(f, f.gpus, op, 4 << 20, algo, "Simple", granularity=gran, chunk_bytes=256 << 10)
        r = run_flow(f, w)
        assert all(r.invariants.values()), (algo, op, gran, r.invariants)
        assert r.makespan_s > 0 and w.meta["busbw_factor"] == busbw_factor(op, 4)


@pytest.mark.parametrize("op,expected", [("all_reduce", 1.0), ("all_gather", 7 / 8), ("alltoall", 7 / 8)])
def test_ring_and_direct_bytes_per_gpu(op, expected):
    S, n = 1 << 24, 8
    f = star(n, latency_s=0.0)
    algo = "direct" if op == "alltoall" else "ring"
    w = build_collective(f, f.gpus, op, S, algo, "ideal")
    r = run_flow(f, w)
    up = r.channel_bytes[0]  # gpu0 -> switch
    factor = 2 * (n - 1) / n if op == "all_reduce" else expected
    assert up == pytest.approx(factor * S, rel=1e-6)


def test_nvls_moves_s_times_one_plus_one_over_n_each_way():
    S, n = 1 << 26, 8
    f = star(n, rate_Bps=100e9, latency_s=0.0, reduction=True)
    r = run_flow(f, build_collective(f, f.gpus, "all_reduce", S, "nvls", "ideal"))
    for g in range(n):
        assert r.channel_bytes[2 * g] == pytest.approx(S * (1 + 1 / n), rel=1e-6)      # GPU -> switch
        assert r.channel_bytes[2 * g + 1] == pytest.approx(S * (1 + 1 / n), rel=1e-6)  # switch -> GPU
    assert r.makespan_s == pytest.approx(S * (1 + 1 / n) / 100e9, rel=0.01)


def test_nvls_refused_without_reduction_switch():
    f = star(4)
    with pytest.raises(InputError):
        build_collective(f, f.gpus, "all_reduce", 1 << 20, "nvls", "Simple")


def test_protocol_efficiency_inflates_wire_bytes():
    f = star(4)
    simple = build_collective(f, f.gpus, "all_gather", 1 << 20, "ring", "Simple")
    ll = build_collective(f, f.gpus, "all_gather", 1 << 20, "ring", "LL")
    assert ll.total_bytes == pytest.approx(2 * simple.total_bytes, rel=1e-6)


def test_tuner_picks_ll_for_tiny_and_bandwidth_protocols_for_huge():
    f = star(8, rate_Bps=25e9, latency_s=100e-9, switch_latency_s=300e-9)
    assert build_collective(f, f.gpus, "all_reduce", 1024).meta["protocol"] == "LL"
    assert build_collective(f, f.gpus, "all_reduce", 1 << 30).meta["protocol"] in ("Simple", "LL128")


def test_tuner_prediction_tracks_the_flow_engine():
    f = star(8, rate_Bps=25e9, latency_s=100e-9, switch_latency_s=300e-9)
    w = build_collective(f, f.gpus, "all_reduce", 64 << 20, "ring", "auto")
    assert run_flow(f, w).makespan_s == pytest.approx(w.meta["predicted_s"], rel=0.02)


@pytest.mark.parametrize("algo,op", [("ring", "all_reduce"), ("ring", "reduce_scatter"), ("nvls", "all_reduce")])
def test_steady_and_chunked_granularities_agree(algo, op):
    f = star(8, rate_Bps=50e9, latency_s=50e-9, switch_latency_s=200e-9, reduction=True)
    times = [run_flow(f, build_collective(f, f.gpus, op, 64 << 20, algo, "Simple", granularity=g,
                                          chunk_bytes=512 << 10)).makespan_s
             for g in ("steady", "chunked")]
    assert times[1] == pytest.approx(times[0], rel=0.05)


def test_nccl_tests_row():
    f = star(4, rate_Bps=10e9, latency_s=0.0)
    w = build_collective(f, f.gpus, "all_reduce", 1 << 20, "ring", "ideal")
    rw = row(w, run_flow(f, w))
    assert rw.count == (1 << 20) // 4 and rw.busbw_GBps == pytest.approx(10.0, rel=0.01)


def test_bad_inputs_are_input_errors():
    f = star(4)
    for kwargs in ({"op": "allreduce"}, {"algo": "butterfly"}, {"granularity": "fine"}):
        args = {"op": "all_reduce", "algo": "ring", "granularity": "steady", **kwargs}
        with pytest.raises(InputError):
            build_collective(f, f.gpus, args["op"], 1024, args["algo"], "Simple", granularity=args["granularity"])
    with pytest.raises(InputError):
        build_collective(f, ["gpu0", "sw0"], "all_reduce", 1024, "ring", "Simple")
