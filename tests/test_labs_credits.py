"""The credit lab: simulated throughput of one saturated link against min(line rate, buffer / RTT)."""

from __future__ import annotations

import pytest

from simulator.errors import InputError
from simulator.hardware.catalog import load_catalog
from simulator.workloads.labs.catalog_link import catalog_link
from simulator.workloads.labs.credits import (DEFAULT_BUFFERS, DEFAULT_CABLES_M, credit_point, credit_sweep,
                                              explain_credits)

KEYS = {"buffer_bytes", "cable_m", "rtt_ns", "simulated_GBps", "closed_form_GBps", "generation", "error_pct",
        "limited_by"}


@pytest.fixture(scope="module")
def default_rows() -> list[dict]:
    return credit_sweep()


def test_whole_default_sweep_within_3pct_of_closed_form(default_rows):
    assert len(default_rows) == len(DEFAULT_BUFFERS) * len(DEFAULT_CABLES_M)
    for r in default_rows:
        assert KEYS <= set(r)
        assert r["simulated_GBps"] == pytest.approx(r["closed_form_GBps"], rel=0.03), r


def test_default_sweep_shows_both_regimes(default_rows):
    """Credit-limited far below line rate at small buffers on long cables, line rate elsewhere; the
    simulation's own credit-stall time agrees with the regime the closed form names."""
    limited = [r for r in default_rows if r["limited_by"] == "credits"]
    free = [r for r in default_rows if r["limited_by"] == "line rate"]
    assert limited and free
    assert min(r["simulated_GBps"] / r["line_GBps"] for r in limited) < 0.05
    assert all(r["credit_stall_pct"] > 1 for r in limited if r["closed_form_GBps"] < 0.97 * r["line_GBps"])
    assert all(r["credit_stall_pct"] == 0 for r in free)


def test_rtt_grows_with_cable_by_twice_the_propagation(default_rows):
    """The credit loop crosses the cable twice (data out, credit back): d RTT / d length = 2 x ns/m."""
    ns_per_m = load_catalog().cable("optical").ns_per_m
    by_m = {r["cable_m"]: r["rtt_ns"] for r in default_rows if r["cable"] == "optical"}
    (m1, t1), (m2, t2) = min(by_m.items()), max(by_m.items())
    assert (t2 - t1) / (m2 - m1) == pytest.approx(2 * ns_per_m, rel=1e-9)


def test_throughput_scales_with_buffer_when_credit_limited(default_rows):
    """Doubling the buffer doubles a credit-limited link's throughput (RTT does not depend on W)."""
    pts = sorted((r for r in default_rows if r["cable_m"] == 100.0), key=lambda r: r["buffer_bytes"])
    assert pts[1]["simulated_GBps"] == pytest.approx(2 * pts[0]["simulated_GBps"], rel=0.01)


@pytest.mark.parametrize("generation", ["nvlink4", "ib_ndr", "pcie5"])
def test_other_generations_match_closed_form(generation):
    rows = credit_sweep((generation,), buffers=(4096, 65536), cables_m=(1.0, 100.0))
    for r in rows:
        assert r["simulated_GBps"] == pytest.approx(r["closed_form_GBps"], rel=0.03), r
    assert {r["limited_by"] for r in rows} == {"credits", "line rate"}


def test_cable_kind_follows_reach():
    assert [catalog_link("nvlink5", m).cable for m in (1.0, 2.0, 30.0)] == \
        ["copper_passive", "copper_active", "optical"]


def test_explanation_is_computed_from_the_rows():
    rows = [credit_point(catalog_link("nvlink5", m, 4096), packets=400) for m in (1.0, 10.0)]
    text = explain_credits(rows)
    assert f"{rows[0]['rtt_ns']:.0f} ns at 1 m" in text and f"{rows[1]['rtt_ns']:.0f} ns at 10 m" in text


@pytest.mark.parametrize("kwargs, field", [
    ({"generation": "nvlink9", "cable_m": 1.0}, "generation"),
    ({"generation": "nvlink5", "cable_m": 5000.0}, "cables"),
    ({"generation": "ib_ndr", "cable_m": 1.0, "buffer_bytes": 256}, "buffers"),
])
def test_bad_lab_input_names_the_field(kwargs, field):
    with pytest.raises(InputError) as err:
        catalog_link(**kwargs)
    assert err.value.field == field


def test_a_partial_packet_of_buffer_carries_nothing():
    """1000 B holds three whole 256 B packets: the window is 768 B, not 1000 B."""
    row = credit_point(catalog_link("nvlink5", 10.0, 1000))
    assert row["closed_form_GBps"] == pytest.approx(768 / row["rtt_ns"])
    assert row["simulated_GBps"] == pytest.approx(row["closed_form_GBps"], rel=0.03)
