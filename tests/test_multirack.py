"""The shipped multi-rack GB200 systems: how racks, Grace CPUs, NICs and rails are wired, and what
copies and collectives across racks take, against closed forms from the sourced link rates."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from simulator.engine.flow import run_flow
from simulator.topology.builder import build_fabric
from simulator.topology.routing import equal_cost_routes
from simulator.workloads.collectives import build_collective
from simulator.workloads.copies import build_copy, nearest_host

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"
GiB = 1 << 30


@pytest.fixture(scope="module")
def x8():
    return build_fabric(TOPOLOGIES / "gb200_nvl72_x8_ib.yaml")


@pytest.fixture(scope="module")
def x8_2to1():
    return build_fabric(TOPOLOGIES / "gb200_nvl72_x8_ib_2to1.yaml")


def _neighbours(fabric, node, kind):
    return sorted({d for d in fabric.graph.succ[node] if fabric.nodes[d].kind == kind})


def test_each_grace_serves_two_gpus_and_their_two_nics(x8):
    for g, gpu in enumerate(x8.gpus[:72]):
        (grace,) = _neighbours(x8, gpu, "host")
        assert grace == f"rack0.grace{g // 2}"
        assert _neighbours(x8, grace, "nic") == [f"rack0.nic{2 * (g // 2)}", f"rack0.nic{2 * (g // 2) + 1}"]
    c2c = [c for c in x8.channels if c.fabric == "c2c"]
    assert len(c2c) == 2 * 576
    assert [c.line_rate_Bps for c in c2c] == pytest.approx([450e9] * len(c2c))  # 900 GB/s both ways


def test_rails_put_equal_local_indices_on_one_leaf(x8):
    leaf_of = {}
    for ch in x8.channels:
        if x8.nodes[ch.src].kind == "nic" and ch.fabric == "network":
            leaf_of[ch.src] = ch.dst
    per_leaf = Counter(leaf_of.values())
    assert len(per_leaf) == 18 and set(per_leaf.values()) == {32}
    for nic, leaf in leaf_of.items():
        local = int(nic.split(".nic")[1])
        assert leaf == f"leaf{local % 18}"


@pytest.mark.parametrize("name, up_per_leaf", [("x8", 32), ("x8_2to1", 16)])
def test_spines_are_non_blocking_or_half(name, up_per_leaf, request):
    fabric = request.getfixturevalue(name)
    for leaf in (n for n in fabric.nodes if n.startswith("leaf")):
        kinds = Counter(fabric.nodes[c.dst].kind == "nic" for c in fabric.out_channels(leaf))
        assert kinds[True] == 32 and kinds[False] == up_per_leaf


def test_superchip_partners_talk_over_nvlink_not_through_grace(x8):
    routes = equal_cost_routes(x8, "rack0.gpu0", "rack0.gpu1")
    assert len(routes) == 18
    assert {x8.channels[c].fabric for r in routes for c in r} == {"nvlink"}


def test_same_rail_across_racks_crosses_one_leaf(x8):
    """Both NICs of a Grace are equally close to both its GPUs (GB200 trays show GPU-NIC relation
    NODE), so a GPU reaches the same local index in another rack over either rail of its Grace,
    each through one leaf and no spine."""
    routes = equal_cost_routes(x8, "rack0.gpu5", "rack3.gpu5")
    hops = sorted([x8.channels[c].dst for c in r] for r in routes)
    assert hops == [["rack0.grace2", f"rack0.nic{i}", f"leaf{i}", f"rack3.nic{i}", "rack3.grace2", "rack3.gpu5"]
                    for i in (4, 5)]


def test_h2d_runs_at_the_c2c_payload_rate(x8):
    assert nearest_host(x8, "rack2.gpu7") == "rack2.grace3"
    S = GiB
    w = build_copy(x8, "h2d", x8.gpus[:4], S)
    r = run_flow(x8, w)
    c2c = next(c for c in x8.channels if c.fabric == "c2c")
    assert c2c.rate_Bps == pytest.approx(450e9 * 0.9)
    latency = c2c.latency_s
    assert r.makespan_s == pytest.approx(S / c2c.rate_Bps + latency, rel=1e-3)


def test_hierarchical_all_reduce_across_racks_matches_its_phases(x8):
    """Two racks, 8 GPUs each: reduce-scatter over NVLink, all-reduce of S/8 over the NICs (one
    leaf, same rail), all-gather over NVLink; the ideal protocol has no step latency."""
    gpus = [f"rack{r}.gpu{i}" for r in (0, 1) for i in range(8)]
    S, m = GiB, 8
    w = build_collective(x8, gpus, "all_reduce", S, "hierarchical", "ideal")
    r = run_flow(x8, w)
    # a ring loads each NVLink both ways: each direction also carries the other's responses
    b_nv = sum(c.rate_Bps / (1 + c.reverse_overhead) for c in x8.out_channels(gpus[0]) if c.fabric == "nvlink")
    b_nic = next(c.rate_Bps for c in x8.channels if x8.nodes[c.src].kind == "nic" and c.fabric == "network")
    expected = 2 * (m - 1) / m * S / b_nv + S / m / b_nic
    assert r.makespan_s == pytest.approx(expected, rel=0.02)


def test_bench_cli_runs_hierarchical_across_two_racks(tmp_path, x8):
    """``fabricsim bench`` on 144 GPUs (2 racks): reduce-scatter and all-gather over each rack's
    NVLink (m = 72), a 2-GPU all-reduce of S/72 per rail over the NICs."""
    import json
    import subprocess
    import sys

    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, "-m", "simulator", "bench", str(TOPOLOGIES / "gb200_nvl72_x8_ib.yaml"),
                           "--engine", "flow", "--sizes", "1G", "--gpus", "144", "--algo", "hierarchical",
                           "--protocol", "ideal", "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(out.read_text())["rows"]
    S, m = GiB, 72
    b_nv = sum(c.rate_Bps / (1 + c.reverse_overhead) for c in x8.out_channels(x8.gpus[0]) if c.fabric == "nvlink")
    b_nic = next(c.rate_Bps for c in x8.channels if x8.nodes[c.src].kind == "nic" and c.fabric == "network")
    assert row["time_us"] * 1e-6 == pytest.approx(2 * (m - 1) / m * S / b_nv + S / m / b_nic, rel=0.02)
