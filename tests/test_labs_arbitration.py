"""The arbitration lab: shares of one saturated output under each arbiter."""

from __future__ import annotations

import pytest

from simulator.workloads.labs.arbitration import ARBITER_ORDER, arbitration_lab, explain_arbitration


@pytest.fixture(scope="module")
def rows() -> dict[str, dict]:
    return {r["arbiter"]: r for r in arbitration_lab(n_inputs=4, packets_per_input=1500)}


def _shares(row: dict) -> list[float]:
    return [x["share"] for x in row["inputs"]]


def test_every_arbiter_keeps_the_output_busy(rows):
    assert list(rows) == list(ARBITER_ORDER)
    for r in rows.values():
        assert sum(_shares(r)) == pytest.approx(1.0)
        assert r["utilization_pct"] == pytest.approx(100.0, abs=1.0)  # work-conserving under saturation


def test_round_robin_shares_equal_within_1pct(rows):
    shares = _shares(rows["round_robin"])
    assert max(shares) - min(shares) < 0.01 * max(shares)
    assert rows["round_robin"]["jain"] > 0.999


@pytest.mark.parametrize("arbiter", ["islip", "oldest_first"])
def test_other_fair_arbiters_are_fair(rows, arbiter):
    assert rows[arbiter]["jain"] > 0.999


def test_fixed_priority_starves_the_lowest_input(rows):
    r = rows["fixed_priority"]
    assert r["inputs"][0]["weight"] > r["inputs"][-1]["weight"]  # in1 has the top priority
    assert r["inputs"][0]["share"] > 0.99 and r["inputs"][-1]["share"] == 0.0
    assert "in4" in r["starved"]
    assert r["jain"] == pytest.approx(0.25, abs=0.01)  # one of four takes all: Jain = 1/n


def test_weighted_rr_shares_follow_the_weights(rows):
    r = rows["weighted_rr"]
    total = sum(x["weight"] for x in r["inputs"])
    for x in r["inputs"]:
        assert x["share"] == pytest.approx(x["weight"] / total, abs=0.01)


def test_explanation_reports_measured_shares(rows):
    text = explain_arbitration(list(rows.values()))
    assert "starves in2, in3, in4" in text and "4/3/2/1" in text
