"""Several jobs on one fabric: placement rules, and contention on shared links against the
oversubscription arithmetic of the shipped two-job scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.errors import InputError
from simulator.runner.scenario_run import run_scenario
from simulator.topology.builder import build_fabric
from simulator.workloads.jobs import place
from simulator.workloads.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rack():
    return build_fabric(ROOT / "topologies" / "hopper_ib_rack.yaml")  # 9 servers x 8 GPUs


def test_packed_fills_servers_in_rank_order_and_spread_deals_over_them(rack):
    spread = place(rack, "spread", 18, set())
    per_server = {}
    for g in spread:
        per_server[rack.nodes[g].group] = per_server.get(rack.nodes[g].group, 0) + 1
    assert len(per_server) == 9 and set(per_server.values()) == {2}
    packed = place(rack, "packed", 12, set())
    assert packed == rack.gpus[:12]
    # after 12 packed GPUs filled server 0 and half of server 1, spread deals over the 8 with room
    later = place(rack, "spread", 16, set(packed))
    assert sorted({rack.nodes[g].group for g in later}) == [f"hgx{i}" for i in range(1, 9)]


@pytest.mark.parametrize("rule, count, taken, words", [
    ([0, 1], None, {"hgx0.gpu1"}, "given to two jobs"),
    ("packed", 80, set(), "80 GPUs asked, 72 free"),
    ("diagonal", 4, set(), "unknown placement"),
])
def test_bad_placements_are_input_errors(rack, rule, count, taken, words):
    with pytest.raises(InputError, match=words):
        place(rack, rule, count, taken)


def test_two_jobs_on_shared_uplinks_slow_down_by_the_oversubscription():
    """Shipped scenario: each all-to-all alone needs 4,800 of 6,400 GB/s of leaf uplinks; together
    9,600: each job takes 9,600 / 6,400 = 1.5x as long, and they share exactly the uplinks."""
    scenario, topologies = load_scenario(ROOT / "scenarios" / "two_jobs_multirack.yaml")
    (system,) = run_scenario(scenario, topologies)
    a, b = system.rows
    for row in (a, b):
        assert row["slowdown"] == pytest.approx(1.5, rel=0.02)
        assert row["shared_links"] == 8 * 16  # every uplink of leaves 0-7, none of the NIC links
        assert row["shared_example"].startswith("leaf0-spine0 x2")


def test_overlapping_explicit_jobs_fail_at_their_line(tmp_path):
    path = tmp_path / "jobs.yaml"
    path.write_text(f"name: j\ntopologies: [{ROOT / 'topologies' / 'hgx_h100.yaml'}]\njobs:\n"
                    "  - {name: a, gpus: [0, 1], op: all_reduce, size: 1M}\n"
                    "  - {name: b, gpus: [1, 2], op: all_reduce, size: 1M}\n")
    with pytest.raises(InputError, match=f"{path}:5: jobs\\[1\\].gpus: rank 1 is already GPU of job 'a'"):
        load_scenario(path)
