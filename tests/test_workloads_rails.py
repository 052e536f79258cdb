"""Rail-aware rings and trees on a multi-node rack: every NIC carries the same share, and the ring
reaches the first-principles bus bandwidth min(R x B_nic, B_nvlink x m / (m - 1))."""

from pathlib import Path

import pytest

from simulator.hardware.nccl_gpu import load_gpu_side
from simulator.workloads.collectives.gpu_side import GpuSide

from simulator.engine.flow import run_flow
from simulator.metrics.collective_stats import row
from simulator.topology.builder import build_fabric
from simulator.workloads.collectives import build_collective
from simulator.workloads.collectives.rails import exit_entry, rail_nodes, ring_orders

RACK = Path(__file__).resolve().parent.parent / "topologies" / "hopper_ib_rack.yaml"


@pytest.fixture(scope="module")
def rack():
    return build_fabric(str(RACK))


def _nic_channels(f):
    return [c for c in f.channels if f.nodes[c.src].kind == "nic" and c.fabric == "network"]


def test_each_channel_leaves_and_enters_every_node_through_a_different_gpu(rack):
    nodes = rail_nodes(rack, rack.gpus)
    m = len(nodes[0])
    pairs = exit_entry(rack, nodes)
    assert sorted(e for e, _ in pairs) == sorted(x for _, x in pairs) == list(range(m))
    for order in ring_orders(rack, tuple(rack.gpus), m):
        assert sorted(order) == sorted(rack.gpus)
        # one node after another: m consecutive GPUs of the same group
        groups = [rack.nodes[g].group for g in order]
        assert all(len(set(groups[i:i + m])) == 1 for i in range(0, len(order), m))


def test_flat_fabric_keeps_rank_order():
    f = build_fabric(str(RACK.parent / "gb200_nvl72.yaml"))
    assert rail_nodes(f, f.gpus) is None  # trays talk over NVLink, not the network
    assert ring_orders(f, tuple(f.gpus), 2) == [tuple(f.gpus)] * 2


def test_ring_all_gather_uses_every_rail_at_the_closed_form_busbw(rack):
    S = 64 << 30  # large enough that the 71 step latencies are < 0.5% of the time
    w = build_collective(rack, rack.gpus, "all_gather", S, "ring", "Simple")
    r = run_flow(rack, w)
    nics = _nic_channels(rack)
    sent = [r.channel_bytes[c.id] for c in nics]
    assert min(sent) == pytest.approx(max(sent), rel=1e-6)  # every NIC the same share
    nodes = rail_nodes(rack, rack.gpus)
    m = len(nodes[0])
    rails = sum(1 for n in rack.nodes.values() if n.kind == "nic" and n.group == rack.nodes[nodes[0][0]].group)
    # each rail carries channels / m rings, each driven by one copy CTA (the GPU side): while it
    # runs its n-1 link primitives the CTA moves at most its link-primitive rate and its share of
    # the NIC, then it closes the loop with a local recv that leaves the NIC idle
    table = load_gpu_side()
    side = GpuSide(table.architecture("hopper"), table.library)
    n, rings = len(rack.gpus), w.meta["channels"] / m
    during = min(side.ring_link_Bps("all_gather", n), nics[0].rate_Bps / rings)
    per_cta = (n - 1) / ((n - 1) / during + side.ring_local_s_per_B("all_gather", n))
    b_nv = sum(c.rate_Bps for c in rack.out_channels(nodes[0][0]) if c.fabric == "nvlink")
    expected = min(rails * rings * per_cta, b_nv * m / (m - 1)) / 1e9
    assert row(w, r).busbw_GBps == pytest.approx(expected, rel=0.01)


def test_tree_heads_spread_over_nics(rack):
    w = build_collective(rack, rack.gpus, "all_reduce", 1 << 30, "tree", "Simple")
    r = run_flow(rack, w)
    assert all(r.invariants.values())
    sent = [r.channel_bytes[c.id] for c in _nic_channels(rack)]
    assert min(sent) > 0  # every NIC carries part of the inter-node tree
