"""NCCL's multi-node mechanisms (issue 24, item 3), each against a closed form from NCCL's source.

- Tree latency across nodes is ``ncclTopoTuneModel``'s (src/graph/tuning.cc): base + 2 x ((m - 1)
  intra-node steps + floor(log2 k) network steps), each step at its own link kind's latency.
- The tuner's choice by size follows NCCL's order across nodes (tree for small all_reduce, ring for
  large) where the ring's bandwidth is the larger; inside one NVLink domain it never runs tree or
  hierarchical.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from simulator.hardware.protocols import load_protocols
from simulator.topology.builder import build_fabric
from simulator.workloads.collectives import build_collective
from simulator.workloads.collectives.base import link_kind, route_lat_s
from simulator.workloads.collectives.gpu_side import GpuSide
from simulator.workloads.collectives.registry import ALGORITHMS

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"


@pytest.fixture(scope="module")
def x8():
    return build_fabric(TOPOLOGIES / "gb200_nvl72_x8_ib.yaml")


@pytest.fixture(scope="module")
def hopper():
    return build_fabric(TOPOLOGIES / "hopper_ib_rack.yaml")


def per_node(fabric, nodes: int, per: int) -> tuple[str, ...]:
    """``per`` GPUs of each of the first ``nodes`` nodes (``Node.group``), in rank order."""
    groups: dict[str, list[str]] = {}
    for g in fabric.gpus:
        groups.setdefault(fabric.nodes[g].group, []).append(g)
    return tuple(g for group in list(groups.values())[:nodes] for g in group[:per])


@pytest.mark.parametrize("nodes", [2, 4, 8])
@pytest.mark.parametrize("protocol", ["LL", "LL128", "Simple"])
def test_tree_latency_is_nccl_tune_model_across_nodes(x8, nodes, protocol):
    m = 4
    gpus = per_node(x8, nodes, m)
    table = load_protocols()
    w = build_collective(x8, gpus, "all_reduce", 1 << 10, "tree", protocol, channels=2)
    flag = GpuSide.of(x8, gpus).flag_s
    a, b = gpus[0], gpus[1]  # an NVLink step inside a node
    far = gpus[m]  # a network step: head of node 0 to head of node 1
    assert link_kind(x8, a, b) == "nvlink" and link_kind(x8, a, far) == "network"
    intra = table.hop_s("tree", protocol, "nvlink") + flag + route_lat_s(x8, a, b)
    inter = table.hop_s("tree", protocol, "network") + flag + route_lat_s(x8, a, far)
    levels = int(math.floor(math.log2(nodes)))
    path = table.base_s("tree", protocol) + 2 * ((m - 1) * intra + levels * inter)
    for t in w.transfers:
        # the engines charge the transfer's own route latency; its delay holds the rest of the path
        assert t.delay_s + route_lat_s(x8, t.src, t.dst) == pytest.approx(path, rel=1e-9), t.tag


def test_tree_latency_grows_with_log2_of_the_nodes(x8):
    """From 2 to 8 nodes the tree adds 2 x (3 - 1) network steps; the ring adds 2 (k - 1) more
    steps of every kind (NCCL: nsteps = 2 (nRanks - 1))."""
    table = load_protocols()
    delays = {}
    for k in (2, 8):
        gpus = per_node(x8, k, 4)
        w = build_collective(x8, gpus, "all_reduce", 1 << 10, "tree", "LL", channels=2)
        delays[k] = max(t.delay_s + route_lat_s(x8, t.src, t.dst) for t in w.transfers)
    gpus = per_node(x8, 2, 4)
    step = table.hop_s("tree", "LL", "network") + GpuSide.of(x8, gpus).flag_s + route_lat_s(x8, gpus[0], gpus[4])
    assert delays[8] - delays[2] == pytest.approx(2 * (3 - 1) * step, rel=1e-9)


def test_tree_network_step_latency_is_nccl_net_tree_row():
    """NCCL's NET Tree hwLat (tuning.cc ncclTunerConstantsDefaults) is its own row, not Ring's."""
    table = load_protocols()
    assert [table.hop_s("tree", p, "network") * 1e6 for p in ("LL", "LL128", "Simple")] == pytest.approx(
        [5.0, 8.5, 14.0])
    assert [table.hop_s("ring", p, "network") * 1e6 for p in ("LL", "LL128", "Simple")] == pytest.approx(
        [2.7, 4.0, 14.0])


SIZES = [1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 28, 1 << 30, 1 << 32]


def choices(fabric, gpus):
    return [build_collective(fabric, gpus, "all_reduce", s).meta["algo"] for s in SIZES]


def switches_once(seq: list[str]) -> bool:
    """Tree first, then ring, never back."""
    first_ring = seq.index("ring") if "ring" in seq else len(seq)
    return set(seq[:first_ring]) == {"tree"} and set(seq[first_ring:]) <= {"ring"}


def test_tuner_tree_small_ring_large_on_eight_racks(x8):
    seq = choices(x8, per_node(x8, 8, 8))
    assert switches_once(seq) and seq[0] == "tree" and seq[-1] == "ring", seq


def test_tuner_tree_small_ring_large_on_nine_hopper_nodes(hopper):
    seq = choices(hopper, tuple(hopper.gpus))
    assert switches_once(seq) and seq[0] == "tree" and seq[-1] == "ring", seq


def test_tuner_tree_small_on_two_racks_and_its_network_bytes(x8):
    """On 2 racks the tree wins small sizes by latency, as NCCL's order says. At large sizes it
    keeps winning here: a double binary tree over 2 nodes sends each channel's S/C once each way
    over the head's NIC, a ring 2(n-1)/n x S/C, so per NIC the tree moves n/(2(n-1)) of the ring's
    network bytes (checked on the built workloads)."""
    gpus = per_node(x8, 2, 8)
    seq = choices(x8, gpus)
    assert seq[0] == "tree" and switches_once(seq), seq
    n, S = len(gpus), 1 << 30

    def most_network_bytes(algo):
        w = build_collective(x8, gpus, "all_reduce", S, algo, "Simple")
        out: dict[str, int] = {}
        for t in w.transfers:
            if x8.nodes[t.src].group != x8.nodes[t.dst].group:
                out[t.src] = out.get(t.src, 0) + t.bytes
        return max(out.values())

    assert most_network_bytes("tree") / most_network_bytes("ring") == pytest.approx(n / (2 * (n - 1)), rel=1e-3)


@pytest.mark.parametrize("topology,n", [("gb200_nvl72", 72), ("hgx_h100", 8)])
def test_one_nvlink_domain_never_runs_tree_or_hierarchical(topology, n):
    fabric = build_fabric(TOPOLOGIES / f"{topology}.yaml")
    seq = [build_collective(fabric, tuple(fabric.gpus[:n]), "all_reduce", s).meta["algo"] for s in SIZES[:5]]
    assert set(seq) <= {"ring", "nvls"}, seq


def test_hierarchical_runs_by_name_only(x8):
    """NCCL has no 2D ring algorithm (ncclAlgoStr): auto never picks it; --algo runs it."""
    gpus = per_node(x8, 2, 8)
    assert not ALGORITHMS["hierarchical"].auto_candidate(x8, gpus, "all_reduce")
    assert build_collective(x8, gpus, "all_reduce", 1 << 20, "hierarchical", "Simple").meta["algo"] == "hierarchical"


# ---- NIC parts: ConnectX-7 400G and ConnectX-8 800G, InfiniBand vs RoCE ------------------------------

RS_FEC = 514 / 544 * 256 / 257  # RS(544,514) with 256b/257b transcoding
IB_PACKET = 4096 + 8 + 12 + 4 + 2  # MTU + LRH + BTH + ICRC + VCRC
ROCE_PACKET = 4096 + 8 + 14 + 4 + 12 + 20 + 8 + 12 + 4  # preamble/SFD, Ethernet, FCS, gap, IPv4, UDP, BTH, ICRC


@pytest.mark.parametrize("generation,lane_Gbps,transport", [
    ("ib_ndr", 106.25, IB_PACKET), ("ib_xdr", 212.5, IB_PACKET),
    ("roce_400g", 106.25, ROCE_PACKET), ("roce_800g", 212.5, ROCE_PACKET)])
def test_network_link_rates_are_their_lanes_fec_and_packet_framing(generation, lane_Gbps, transport):
    from simulator.hardware.catalog import load_catalog
    link = load_catalog().link(generation)
    line = 4 * lane_Gbps * 1e9 * RS_FEC / 8
    assert link.fabric == "network"
    assert link.line_rate_Bps == pytest.approx(line, rel=1e-12)
    assert link.payload_rate_Bps == pytest.approx(line * 4096 / transport, rel=1e-12)


def test_ib_and_roce_differ_by_framing_only():
    from simulator.hardware.catalog import load_catalog
    cat = load_catalog()
    for ib, roce in (("ib_ndr", "roce_400g"), ("ib_xdr", "roce_800g")):
        a, b = cat.link(ib), cat.link(roce)
        assert a.line_rate_Bps == b.line_rate_Bps and a.phy_latency_s == b.phy_latency_s
        assert a.payload_rate_Bps / b.payload_rate_Bps == pytest.approx(ROCE_PACKET / IB_PACKET, rel=1e-12)
    assert cat.link("ib_xdr").payload_rate_Bps == pytest.approx(2 * cat.link("ib_ndr").payload_rate_Bps)


def test_cx8_racks_run_xdr_rails_at_twice_the_cx7_rate(tmp_path):
    """The 8-rack system with ConnectX-8 and Quantum-X800 in place of ConnectX-7 and Quantum-2:
    every rail and spine link is XDR, at twice the NDR payload rate; the NIC's PCIe Gen6 port
    trains down to Grace's Gen5 x16."""
    from simulator.hardware.catalog import load_catalog
    text = (TOPOLOGIES / "gb200_nvl72_x8_ib.yaml").read_text()
    text = text.replace("part: cx7", "part: cx8").replace("ib_switch_ndr", "ib_switch_xdr").replace(
        "generation: ib_ndr", "generation: ib_xdr")
    path = tmp_path / "x8_cx8.yaml"
    path.write_text(text)
    fabric = build_fabric(path)
    xdr = load_catalog().link("ib_xdr").payload_rate_Bps
    network = [c for c in fabric.channels if c.fabric == "network"]
    assert network and {c.generation for c in network} == {"ib_xdr"}
    assert all(c.rate_Bps == pytest.approx(xdr) for c in network)
    nic_pcie = {c.generation for c in fabric.channels if c.fabric == "pcie" and "nic" in c.src}
    assert nic_pcie == {"pcie5"}


@pytest.mark.parametrize("protocol,up_threads", [("Simple", 320 / 512), ("LL", 352 / 512), ("LL128", 448 / 640)])
def test_tree_cta_splits_its_threads_between_up_and_down(x8, protocol, up_threads):
    """NCCL's runTreeSplit (src/device/all_reduce.h) gives reduce-up 320 of 512 Simple threads
    (nthreads/2 + 64) and 70% of the LL/LL128 warps; each half moves its share of the CTA's memory
    rate (Hopper's measured 21.0 GB/s x 8 operations per 2 link chunks = 84 GB/s) over 3 memory
    operations per byte (recvReduceSend up, recvCopySend down)."""
    gpus = per_node(x8, 2, 8)
    w = build_collective(x8, gpus, "all_reduce", 1 << 30, "tree", protocol, channels=32)
    memory = 21.0e9 * 8 / 2
    rates = {("down" if t.tag.endswith(".down") else "up"): t.rate_Bps for t in w.transfers}
    assert rates["up"] == pytest.approx(memory * up_threads / 3, rel=1e-9)
    assert rates["down"] == pytest.approx(memory * (1 - up_threads) / 3, rel=1e-9)


# ---- PXN ---------------------------------------------------------------------------------------------

def test_pxn_keeps_alltoall_on_the_rails(hopper):
    """PXN (NCCL src/graph/paths.cc): a GPU sends to a GPU of another node on another rail through
    the NVLink peer whose NIC is on that rail, so a rail-optimized network carries it on one leaf.
    On 9 HGX servers each GPU has 64 remote peers; 16 sit on the rails of the 2 NICs of its own
    PCIe switch (reached without a spine), the other 48 go by a relay: 72 x 48 relayed pairs, and
    no alltoall byte crosses a spine."""
    from simulator.topology.routing import equal_cost_routes, hop_count
    gpus = tuple(hopper.gpus)
    w = build_collective(hopper, gpus, "alltoall", 1 << 26, "direct", "Simple", pxn=True)
    relayed = [t for t in w.transfers if t.tag.endswith(".pxn")]
    assert len(relayed) == 72 * 48
    assert all(link_kind(hopper, t.src, t.dst) == "nvlink" for t in relayed)
    assert sum(t.bytes for t in relayed) == pytest.approx(72 * 48 * (1 << 26) / 72, rel=1e-6)
    for t in w.transfers:
        for route in equal_cost_routes(hopper, t.src, t.dst):
            assert not any("spine" in hopper.channels[c].dst for c in route), (t.src, t.dst)
    # a relayed leg leaves from the relay's NIC and has the hop count of a same-rail route
    groups = {g: hopper.nodes[g].group for g in gpus}
    t = next(t for t in w.transfers if t.tag == "direct.alltoall" and groups[t.src] != groups[t.dst]
             and t.src.split(".")[-1] == t.dst.split(".")[-1])
    assert hop_count(hopper, t.src, t.dst) == 6  # GPU -> PCIe switch -> NIC -> leaf -> NIC -> PCIe switch -> GPU


def test_pxn_relay_is_none_inside_a_node_and_on_the_own_rail(hopper):
    from simulator.workloads.collectives.rails import pxn_relay
    gpus = tuple(hopper.gpus)
    a = gpus[0]
    assert pxn_relay(hopper, gpus, a, gpus[3]) is None  # same server: NVLink
    assert pxn_relay(hopper, gpus, a, gpus[8]) is None  # same rail on the next server
    assert pxn_relay(hopper, gpus, a, gpus[8 + 5]) == gpus[5]  # rail 5: through local GPU 5's NIC


@pytest.mark.parametrize("protocol", ["LL", "LL128", "Simple"])
def test_ring_at_one_gpu_per_node_pays_the_tree_network_latency(hopper, monkeypatch, protocol):
    """ncclTopoTuneModel: "With ppn=1 latencies are fully exposed, use the Tree network latency":
    a ring of 9 GPUs, one per server, pays NET Tree's hwLat on each of its 2 (9 - 1) steps."""
    from simulator.workloads.collectives import ring
    gpus = per_node(hopper, 9, 1)
    table = load_protocols()
    w = build_collective(hopper, gpus, "all_reduce", 1 << 10, "ring", protocol, channels=1)
    monkeypatch.setattr(ring, "one_per_node", lambda spec: False)
    flat = build_collective(hopper, gpus, "all_reduce", 1 << 10, "ring", protocol, channels=1)
    step = table.hop_s("tree", protocol, "network") - table.hop_s("ring", protocol, "network")
    assert {round(a.delay_s - b.delay_s, 12) for a, b in zip(w.transfers, flat.transfers)} == {
        round(2 * (9 - 1) * step, 12)}


def test_pxn_is_off_unless_asked_and_relays_inside_the_host(hopper, x8):
    """Without ``pxn`` (NCCL_PXN_DISABLE=1) every GPU sends from its own NICs. With it, a GB200
    GPU relays only through the GPUs of its own compute tray (NCCL's same-system rule): a
    destination on a rail none of the tray's 4 NICs is on still goes by a spine."""
    from simulator.workloads.collectives.rails import pxn_relay
    gpus = tuple(hopper.gpus)
    w = build_collective(hopper, gpus, "alltoall", 1 << 26, "direct", "Simple")
    assert not [t for t in w.transfers if t.tag.endswith(".pxn")]
    racks = per_node(x8, 2, 72)
    a = racks[0]  # rack 0, tray 0: GPUs 0-3, NICs on rails 0-3
    assert pxn_relay(x8, racks, a, racks[72 + 2]) == racks[2]  # rail 2: the tray's GPU 2
    assert pxn_relay(x8, racks, a, racks[72 + 10]) is None  # rail 10: no GPU of the tray is on it
