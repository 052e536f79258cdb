"""The switch lab against the classic results of switch scheduling (uniform i.i.d. traffic).

Published values: Karol, Hluchyj, Morgan 1987 (FIFO input queueing, Table I; output queueing
delay); Anderson et al. 1993 / McKeown 1999 (PIM one iteration 1 - (1 - 1/N)^N); McKeown 1999
(iSLIP: 100 % under uniform saturation, no starvation).
"""

from __future__ import annotations

import math

import pytest

from simulator.workloads.labs.switch import KAROL_1987, KAROL_LIMIT, design, load_point, saturation


@pytest.mark.parametrize("n", [2, 4, 8])
def test_fifo_saturation_matches_karol_1987(n):
    r = saturation(design("FIFO"), n, slots=2500)
    assert r["throughput"] == pytest.approx(KAROL_1987[n], rel=0.015)


def test_karol_limit_is_two_minus_root_two():
    assert KAROL_LIMIT == pytest.approx(0.5858, abs=1e-4) and KAROL_1987[8] > KAROL_LIMIT


@pytest.mark.parametrize("n", [4, 8])
def test_pim_one_iteration_matches_closed_form(n):
    r = saturation(design("VOQ + PIM k=1"), n)
    assert r["throughput"] == pytest.approx(1 - (1 - 1 / n) ** n, rel=0.02)


@pytest.mark.parametrize("n,seed", [(4, 0), (8, 0), (8, 1), (8, 2)])
def test_islip_one_iteration_is_full_throughput_without_starvation(n, seed):
    r = saturation(design("VOQ + iSLIP k=1"), n, seed=seed)
    assert r["throughput"] >= 0.99
    # every VOQ of an input gets its 1/N share of that input's cells, within a few %
    assert 0.95 <= r["min_voq_share"] and r["max_voq_share"] <= 1.05


def test_rrm_pointers_synchronize_and_lose_throughput():
    """Round-robin matching moves grant pointers on every grant, so outputs grant the same input."""
    rrm = saturation(design("VOQ + RRM k=1"), 8)["throughput"]
    assert rrm < 1 - (1 - 1 / 8) ** 8  # worse even than one random PIM round


@pytest.mark.parametrize("n", [4, 8])
def test_speedup_n_is_output_queueing(n):
    r = saturation(design("Output queued (S=N)"), n)
    assert r["throughput"] >= 0.995


def test_output_queueing_delay_matches_karol_closed_form():
    """Output queueing, Bernoulli load p: mean wait (N-1)/N * p / (2 (1-p)) cell times (Karol 1987)."""
    n, p = 8, 0.8
    r = load_point(design("Output queued (S=N)"), n, p, slots=6000)
    assert r["mean_delay"] == pytest.approx((n - 1) / n * p / (2 * (1 - p)), rel=0.06)


def test_islip_delay_grows_with_load_and_fifo_is_worse():
    low = load_point(design("VOQ + iSLIP k=1"), 8, 0.3)
    high = load_point(design("VOQ + iSLIP k=1"), 8, 0.55)
    fifo = load_point(design("FIFO"), 8, 0.55)
    assert low["mean_delay"] < high["mean_delay"] < fifo["mean_delay"]
    assert math.isfinite(high["p99_delay"]) and high["p99_delay"] >= high["mean_delay"]


def test_shared_output_buffer_beats_the_same_memory_split_per_output():
    """Speedup N with small output queues: back-pressure into FIFO inputs costs throughput; the same
    memory as one shared pool absorbs the uneven output occupancy (statistical multiplexing).

    The 4 x 4 lab switch has 8 output ports (4 lead back to the sources, unused). Dedicated: 3 cells
    per used output queue = 12. Shared with 2 per output: each used queue's own cell (4) + a pool of
    (2 - 1) x 8 ports = 12.
    """
    from simulator.workloads.labs.switch import Design

    def run(cells: int, shared: bool) -> float:
        d = Design("S=N, small output queues", queueing="fifo", arbiter="pim", speedup=0, output_queue_packets=cells,
                   shared_buffer=shared)
        return saturation(d, 4, slots=1500)["throughput"]

    dedicated, shared = run(3, False), run(2, True)
    assert dedicated < 0.9 and shared > dedicated + 0.02
