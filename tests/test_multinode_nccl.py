"""NCCL's multi-node mechanisms (issue 24, item 3), each against a closed form from NCCL's source.

- Tree latency across nodes is ``ncclTopoTuneModel``'s (src/graph/tuning.cc): base + 2 x ((m - 1)
  intra-node steps + floor(log2 k) network steps), each step at its own link kind's latency.
- The tuner's choice by size follows NCCL's order across nodes (tree for small all_reduce, ring for
  large) where the ring's bandwidth is the larger and NVLS is off (NCCL_NVLS_ENABLE=0); with NVLS
  inside the nodes, NVLSTree takes the sizes from the tree's on; inside one NVLink domain it never
  runs tree, NVLSTree or hierarchical.
- NVLSTree (nvls_tree.py): NVLS's bytes inside each node, S / h each way per head between 2 nodes,
  NCCL's double binary trees between nodes (src/graph/trees.cc), NCCL's latency, and the staging
  pace of the copy warps a channel with a parent between nodes keeps (src/device/all_reduce.h).
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


NVLS_OFF = "^nvls,nvls_tree"
"""The tuner's choice with NCCL_NVLS_ENABLE=0 (``runner.nccl_tests_validation.settings_for``)."""


def choices(fabric, gpus, algo: str = "auto"):
    return [build_collective(fabric, gpus, "all_reduce", s, algo).meta["algo"] for s in SIZES]


def switches_once(seq: list[str]) -> bool:
    """Tree first, then ring, never back."""
    first_ring = seq.index("ring") if "ring" in seq else len(seq)
    return set(seq[:first_ring]) == {"tree"} and set(seq[first_ring:]) <= {"ring"}


def test_tuner_tree_small_ring_large_on_eight_racks(x8):
    seq = choices(x8, per_node(x8, 8, 8), NVLS_OFF)
    assert switches_once(seq) and seq[0] == "tree" and seq[-1] == "ring", seq


def test_tuner_tree_small_ring_large_on_nine_hopper_nodes(hopper):
    seq = choices(hopper, tuple(hopper.gpus), NVLS_OFF)
    assert switches_once(seq) and seq[0] == "tree" and seq[-1] == "ring", seq


def test_tuner_tree_small_on_two_racks_and_its_network_bytes(x8):
    """On 2 racks the tree wins small sizes by latency, as NCCL's order says. At large sizes it
    keeps winning here: a double binary tree over 2 nodes sends each channel's S/C once each way
    over the head's NIC, a ring 2(n-1)/n x S/C, so per NIC the tree moves n/(2(n-1)) of the ring's
    network bytes (checked on the built workloads)."""
    gpus = per_node(x8, 2, 8)
    seq = choices(x8, gpus, NVLS_OFF)
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


def test_tree_runs_each_search_channel_on_both_trees_and_balances_three_nodes(x8):
    """NCCL connectTrees: channel c on tree 0 and c + nChannels on tree 1, one chain and NIC.
    Over 3 nodes NCCL's trees are chains (1 -> 2 -> 0 and 2 -> 0 -> 1), so a node sends at most
    1.5 S over its NICs: with 8 heads per node every NIC carries 1.5 S / 8 each way (ideal)."""
    from simulator.engine.flow import run_flow
    from simulator.workloads.collectives.dtree import dtree_parents
    from simulator.workloads.collectives.tree import tree_of

    assert [tree_of(c, 4) for c in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert tree_of(0, 1) == (0, 0) and [tree_of(c, 3) for c in range(3)] == [(0, 0), (0, 1), (1, 0)]
    assert dtree_parents(3) == ((-1, 2, 0), (1, -1, 0))
    gpus = per_node(x8, 3, 8)
    S = 1 << 30
    w = build_collective(x8, gpus, "all_reduce", S, "tree", "ideal", channels=32)
    out: dict[str, float] = {}
    for t in w.transfers:
        if x8.nodes[t.src].group != x8.nodes[t.dst].group:
            out[t.src] = out.get(t.src, 0) + t.bytes
    by_node: dict[str, float] = {}
    for g, b in out.items():
        by_node[x8.nodes[g].group] = by_node.get(x8.nodes[g].group, 0) + b
    assert sorted(by_node.values()) == pytest.approx([1.0 * S, 1.5 * S, 1.5 * S], rel=1e-6)
    r = run_flow(x8, w)
    sent = [r.channel_bytes[c.id] for c in x8.channels if x8.nodes[c.src].kind == "nic" and c.fabric == "network"]
    assert max(sent) == pytest.approx(1.5 * S / 8, rel=1e-6)


def test_tuner_rates_tree_as_nccl_across_more_than_two_nodes(x8):
    """NCCL's tuner rates Tree across > 2 nodes at 0.92 x 0.5 of the network bandwidth where Ring
    gets n / (2(n-1)) (src/graph/tuning.cc): on 3 racks of 8 GPUs (NVLS off, as NVIDIA/nccl issue
    1801 ran) auto picks ring at 16 GiB, as NCCL did, though the tree's estimate is lower (the run
    forced to Tree was faster: 485.68 against 393.66 GB/s); small sizes stay on the tree; on two
    nodes nothing is rated (NCCL takes the intra-node bandwidth for the tree there)."""
    from simulator.hardware.protocols import load_protocols as table
    from simulator.workloads.collectives.tuner import choose, predict_s

    gpus = per_node(x8, 3, 8)
    big = 16 << 30
    algo, protocol, t, _ = choose(x8, gpus, "all_reduce", big, NVLS_OFF, "auto", table())
    tree = predict_s(x8, build_collective(x8, gpus, "all_reduce", big, "tree", "Simple"))
    assert (algo, protocol) == ("ring", "Simple") and tree < 0.85 * t
    assert choose(x8, gpus, "all_reduce", 1 << 20, NVLS_OFF, "auto", table())[0] == "tree"
    two = per_node(x8, 2, 8)
    assert choose(x8, two, "all_reduce", big, NVLS_OFF, "auto", table())[0] == "tree"


# ---- NVLSTree: NVLS inside each node, NCCL's trees between the heads --------------------------------

def _nccl_btree(nranks: int, rank: int) -> tuple[int, int, int]:
    """NCCL src/graph/trees.cc ncclGetBtree, transcribed line by line: (up, down0, down1)."""
    bit = 1
    while bit < nranks:
        if bit & rank:
            break
        bit <<= 1
    if rank == 0:
        return -1, -1, (bit >> 1 if nranks > 1 else -1)
    up = (rank ^ bit) | (bit << 1)
    if up >= nranks:
        up = rank ^ bit
    lowbit = bit >> 1
    down0 = -1 if lowbit == 0 else rank - lowbit
    down1 = -1 if lowbit == 0 else rank + lowbit
    while down1 >= nranks:
        down1 = -1 if lowbit == 0 else rank + lowbit
        lowbit >>= 1
    return up, down0, down1


@pytest.mark.parametrize("k", range(1, 40))
def test_dtree_is_nccl_get_dtree_and_every_child_knows_its_parent(k):
    from simulator.workloads.collectives.dtree import dtree_parents

    tree0, tree1 = dtree_parents(k)
    assert tree0 == tuple(_nccl_btree(k, r)[0] for r in range(k))
    if k % 2:
        want = tuple(-1 if (u := _nccl_btree(k, (r - 1) % k)[0]) == -1 else (u + 1) % k for r in range(k))
    else:
        want = tuple(-1 if (u := _nccl_btree(k, k - 1 - r)[0]) == -1 else k - 1 - u for r in range(k))
    assert tree1 == want
    for tree in (tree0, tree1):
        assert tree.count(-1) == 1  # one root; every other node's parent names it among its children
        for r, p in enumerate(tree):
            if p >= 0:
                kids = _nccl_btree(k, p)[1:] if tree is tree0 else None
                if kids is not None:
                    assert r in kids
                seen, q = set(), r
                while q >= 0:  # no cycle: every path ends at the root
                    assert q not in seen
                    seen.add(q)
                    q = tree[q]


def _nvls_tree(fabric, gpus, nbytes, protocol="Simple", channels=None):
    return build_collective(fabric, gpus, "all_reduce", nbytes, "nvls_tree", protocol, channels=channels)


def test_nvls_tree_bytes_two_nodes_s_over_h_each_way_per_head(hopper):
    """2 HGX H100 nodes (8 heads each): inside a node NVLS's S(1 + 1/h) each way per head GPU (in
    wire bytes, over NVLS's efficiency);
    between the nodes every head sends S/h and receives S/h (tree 0 and tree 1 have opposite
    roots: NCCL's interBw x 2 on 2 nodes), all of it on its own rail."""
    from simulator.engine.flow import run_flow

    gpus = per_node(hopper, 2, 8)
    S, h = 1 << 28, 8
    w = _nvls_tree(hopper, gpus, S, "ideal")
    r = run_flow(hopper, w)
    sent: dict[str, float] = {}
    got: dict[str, float] = {}
    for t in w.transfers:
        if hopper.nodes[t.src].group != hopper.nodes[t.dst].group:
            assert gpus.index(t.dst) % 8 == gpus.index(t.src) % 8  # head j joins head j: one rail
            sent[t.src] = sent.get(t.src, 0) + t.bytes
            got[t.dst] = got.get(t.dst, 0) + t.bytes
    assert set(sent) == set(got) == set(gpus)
    assert all(v == pytest.approx(S / h, rel=1e-6) for v in [*sent.values(), *got.values()])
    eff = load_protocols().nvls_efficiency_for("nvlink4")  # NVLS wire bytes carry NCCL's NVLS efficiency
    for g in gpus:
        up = sum(c.bytes for c in w.transfers if c.src == g and hopper.nodes[c.dst].kind == "switch")
        assert up == pytest.approx(S * (1 + 1 / h) / eff, rel=1e-6)
    assert all(r.invariants.values())


def test_nvls_tree_latency_is_nccl_tune_model(x8):
    """NCCL's NVLSTree latency (tuning.cc): baseLat + intraLat + 2 log2i(nNodes) interLat on every
    transfer of a call, the NVLink and NET rows of NVLSTree."""
    table = load_protocols()
    for k in (2, 4, 8):
        gpus = per_node(x8, k, 4)
        w = _nvls_tree(x8, gpus, 1 << 20)
        flag = GpuSide.of(x8, gpus).flag_s
        sw = next(t.dst for t in w.transfers if x8.nodes[t.dst].kind == "switch")
        want = (table.base_s("nvls_tree", "Simple") + table.hop_s("nvls_tree", "Simple", "nvlink") + flag
                + 2 * int(math.log2(k)) * (table.hop_s("nvls_tree", "Simple", "network") + flag))
        assert link_kind(x8, gpus[0], sw) == "nvlink"
        delays = [t.delay_s for t in w.transfers if t.src != t.dst]
        assert all(d == pytest.approx(want, rel=1e-12) for d in delays), k


def test_nvls_tree_stages_at_the_copy_warps_a_parent_leaves(hopper):
    """A channel whose rank sends up the tree between nodes keeps 6 + 5 of its 20 warps to copy in
    and out where NVLS has 8 + 7 (src/device/all_reduce.h): on 2 nodes every head has a parent in
    one of the trees, so every GPU stages S at 11/15 of NVLS's per-channel rate."""
    gpus = per_node(hopper, 2, 8)
    side = GpuSide.of(hopper, gpus)
    lib = side.library
    assert (lib.nvls_copy_warps(16), lib.nvls_copy_warps(16, tree_up=True), lib.nvls_copy_warps(4)) == (15, 11, 13)
    w = _nvls_tree(hopper, gpus, 1 << 30)
    staging = [t for t in w.transfers if t.src == t.dst]
    per_channel = side.channel_Bps("nvls_staging")
    assert len(staging) == 16 and w.meta["channels"] == side.arch.nvls_tree_channels == 16
    assert all(t.rate_Bps == pytest.approx(16 * per_channel * 11 / 15, rel=1e-12) for t in staging)


def test_tuner_runs_nvls_tree_across_nvls_nodes_from_mid_sizes(hopper, x8):
    """With NVLS inside the nodes (NCCL_NVLS_ENABLE's default) the tree keeps the small sizes and
    NVLSTree takes over from the sizes where bandwidth counts; on 2 nodes it beats the NIC-bound
    ring (it sends S/h per head each way, the ring 2(n-1)/n S/h), on 9 it stays within 1% of it."""
    seq = choices(hopper, per_node(hopper, 2, 8))
    assert seq[0] == "tree" and seq[-1] == "nvls_tree", seq
    assert set(seq[seq.index("nvls_tree"):]) == {"nvls_tree"}, seq
    # two racks of 64: the tree's 63-deep chain in each node costs more latency (NCCL: 2 x 63 intraLat)
    # than NVLSTree's fixed steps, so NVLSTree runs every size, as NCCL's model also says
    assert set(choices(x8, per_node(x8, 2, 64))) == {"nvls_tree"}
    gpus = tuple(hopper.gpus)
    ring, nvls_tree = (build_collective(hopper, gpus, "all_reduce", 1 << 33, a, "Simple").meta for a in
                       ("ring", "nvls_tree"))
    from simulator.engine.flow import run_flow
    t_ring = run_flow(hopper, build_collective(hopper, gpus, "all_reduce", 1 << 33, "ring", "Simple")).makespan_s
    t_nt = run_flow(hopper, build_collective(hopper, gpus, "all_reduce", 1 << 33, "nvls_tree", "Simple")).makespan_s
    assert abs(t_nt / t_ring - 1) < 0.01 and ring["channels"] == 24 and nvls_tree["channels"] == 16


def test_nvls_tree_needs_nvls_inside_every_node_and_alike_nodes(x8, hopper):
    from simulator.errors import InputError

    record = ALGORITHMS["nvls_tree"]
    assert "one node" in record.applicable(x8, per_node(x8, 1, 8))
    assert "different numbers" in record.applicable(x8, per_node(x8, 2, 8)[:12])
    assert "NVLS needs more than 2 GPUs" in record.applicable(x8, per_node(x8, 3, 2))
    with pytest.raises(InputError):
        build_collective(x8, per_node(x8, 3, 2), "all_reduce", 1 << 20, "nvls_tree", "Simple")
    assert not record.auto_candidate(x8, per_node(x8, 1, 8), "all_reduce")


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
    On 9 HGX servers each GPU has 64 remote peers; 8 sit on the rail of its own NIC (one of the 2 of
    its PCIe switch, NCCL's ``ncclTopoGetLocalNet``: reached without a spine), the other 56 go by a
    relay: 72 x 56 relayed pairs, and no alltoall byte crosses a spine."""
    from simulator.topology.routing import equal_cost_routes, hop_count
    gpus = tuple(hopper.gpus)
    w = build_collective(hopper, gpus, "alltoall", 1 << 26, "direct", "Simple", pxn=True)
    relayed = [t for t in w.transfers if t.tag.endswith(".pxn")]
    assert len(relayed) == 72 * 56
    assert all(link_kind(hopper, t.src, t.dst) == "nvlink" for t in relayed)
    assert sum(t.bytes for t in relayed) == pytest.approx(72 * 56 * (1 << 26) / 72, rel=1e-6)
    for t in w.transfers:
        for route in t.paths or equal_cost_routes(hopper, t.src, t.dst):
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


def test_an_algo_list_chooses_as_auto_does_and_runs_by_name_what_auto_would_not():
    """A list lets the tuner choose among its algorithms by auto's rules (inside one node Ring, not
    Tree, as NCCL's own choice there: measured 2x H200); a list of which auto would try none here runs
    them by name, as NCCL_ALGO=Tree,NVLSTree runs Tree inside one node."""
    fabric = build_fabric(TOPOLOGIES / "hgx_h100.yaml")
    gpus = tuple(fabric.gpus)
    assert build_collective(fabric, gpus, "all_reduce", 1 << 20, "ring,tree").meta["algo"] == "ring"
    assert build_collective(fabric, gpus, "all_reduce", 1 << 20, "tree,nvls_tree").meta["algo"] == "tree"
    assert build_collective(fabric, gpus, "all_reduce", 1 << 30, "^nvls").meta["algo"] == "ring"
    assert build_collective(fabric, gpus, "all_reduce", 1 << 30).meta["algo"] == "nvls"


# ---- CollNetChain: each node's chain, reduced across nodes in the switch (SHARP) ---------------------

@pytest.mark.parametrize("nodes", [2, 4])
def test_collnet_chain_sends_s_over_the_nics_per_node_whatever_the_node_count(hopper, nodes):
    """The chain's head sends its node's S / C of each channel to its NIC's leaf (SHARP reduces
    there) and gets S / C back: 24 channels over 8 heads put S/8 on every NIC each way, on 2 nodes
    as on 4 (a ring's 2(n-1)/n x S/8 grows towards 2S/8); head j's leaf is rail j's."""
    gpus = per_node(hopper, nodes, 8)
    S = 1 << 30
    w = build_collective(hopper, gpus, "all_reduce", S, "collnet_chain", "Simple", channels=24)
    up: dict[str, int] = {}
    down: dict[str, int] = {}
    for t in w.transfers:
        if hopper.nodes[t.dst].kind == "switch" and hopper.nodes[t.dst].group == "network":
            assert t.dst == f"leaf{gpus.index(t.src) % 8}"
            up[t.src] = up.get(t.src, 0) + t.bytes
        if hopper.nodes[t.src].kind == "switch" and hopper.nodes[t.src].group == "network":
            down[t.dst] = down.get(t.dst, 0) + t.bytes
    assert set(up) == set(down) == set(gpus)
    assert all(v == pytest.approx(S / 8, abs=24) for v in [*up.values(), *down.values()])


def test_collnet_chain_latency_is_nccl_tune_model(hopper):
    """NCCL's CollNetChain latency (tuning.cc): baseLat + 2 (nRanks/nNodes - 1) intraLat + interLat,
    the switch's round trip counted once; each step here also pays its flag handoff and route."""
    table = load_protocols()
    gpus = per_node(hopper, 2, 8)
    w = build_collective(hopper, gpus, "all_reduce", 1 << 20, "collnet_chain", "Simple", channels=1)
    flag = GpuSide.of(hopper, gpus).flag_s
    a, b = gpus[0], gpus[1]
    intra = table.hop_s("collnet_chain", "Simple", "nvlink") + flag + route_lat_s(hopper, a, b)
    inter = table.hop_s("collnet_chain", "Simple", "network") + flag + route_lat_s(hopper, a, "leaf0")
    path = table.base_s("collnet_chain", "Simple") + 2 * 7 * intra + inter
    assert table.hop_s("collnet_chain", "Simple", "network") == pytest.approx(30e-6)
    for t in w.transfers:
        assert t.delay_s + route_lat_s(hopper, t.src, t.dst) == pytest.approx(path, rel=1e-9), t.tag


def test_collnet_chain_needs_sharp_switches_and_runs_by_name_only(hopper, tmp_path):
    from simulator.errors import InputError

    record = ALGORITHMS["collnet_chain"]
    assert record.applicable(hopper, per_node(hopper, 2, 8)) is None
    assert "one node" in record.applicable(hopper, per_node(hopper, 1, 8))
    assert not record.auto_candidate(hopper, per_node(hopper, 2, 8), "all_reduce")
    text = (TOPOLOGIES / "hopper_ib_rack.yaml").read_text().replace("ib_switch_ndr", "eth_switch_400g").replace(
        "part: cx7", "part: cx7_roce").replace("generation: ib_ndr", "generation: roce_400g")
    (tmp_path / "hgx_h100.yaml").write_text((TOPOLOGIES / "hgx_h100.yaml").read_text())
    (tmp_path / "roce.yaml").write_text(text)
    roce = build_fabric(tmp_path / "roce.yaml")
    assert "no in-network reduction" in record.applicable(roce, per_node(roce, 2, 8))
    with pytest.raises(InputError):
        build_collective(roce, per_node(roce, 2, 8), "all_reduce", 1 << 20, "collnet_chain", "Simple")


@pytest.mark.parametrize("algo", ["nvls_tree", "collnet_chain"])
def test_packet_and_flow_engines_agree_on_nccls_multi_node_algorithms(hopper, algo):
    """The same DAG on both engines (4 MiB over two HGX servers, the packet engine at the packet size
    ``bench`` picks): within 5%."""
    from simulator.runner.sweeps import SweepSpec, sweep

    rows = {e: sweep(hopper, SweepSpec(op="all_reduce", gpus=16, sizes=(4 << 20,), engine=e, algo=algo,
                                       protocol="Simple"))[0] for e in ("flow", "packet")}
    assert rows["packet"]["engine"] == "packet" and rows["flow"]["algo"] == rows["packet"]["algo"] == algo
    assert rows["packet"]["time_us"] == pytest.approx(rows["flow"]["time_us"], rel=0.05)


# ---- PAT ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 5, 8, 9, 16, 31])
def test_pat_dimensions_bring_every_block_to_every_rank_in_log2_steps(n):
    """PAT's binomial trees over distances 2^d: ceil(log2 n) steps, n - 1 blocks sent per rank (as
    the ring), and after the last step every rank holds every block exactly once."""
    from simulator.workloads.collectives.pat import dimensions
    steps = dimensions(n)
    assert len(steps) == math.ceil(math.log2(n)) and sum(b for _, b in steps) == n - 1
    held = [[r] for r in range(n)]
    for distance, blocks in steps:
        sent = [held[r][:blocks] for r in range(n)]
        for r in range(n):
            held[(r - distance) % n] = held[(r - distance) % n] + sent[r]
    assert all(sorted(h) == list(range(n)) for h in held)


def test_pat_runs_at_one_gpu_per_node_with_nccls_latency(hopper):
    """ncclPatEnable: nNodes == nRanks. Latency (ncclTopoTuneModel): 8 us + 2.8 us per rank before
    the first step, then each of the log2 n steps at interLat / 3.5 (NET Tree Simple 14 us / 3.5)
    plus the flag handoff."""
    from simulator.workloads.collectives.registry import why_not
    table = load_protocols()
    assert "one GPU per node" in why_not(hopper, per_node(hopper, 2, 4), "all_gather", "pat", "Simple", table)
    gpus = per_node(hopper, 8, 1)
    w = build_collective(hopper, gpus, "all_gather", 1 << 20, "pat", "Simple")
    first = [t for t in w.transfers if t.tag.endswith(".d1")]
    later = [t for t in w.transfers if not t.tag.endswith(".d1")]
    side = GpuSide.of(hopper, gpus)
    assert len(first) == len(later) / 2 == 8 and {t.tag for t in later} == {"pat.all_gather.d2", "pat.all_gather.d4"}
    assert {round(t.delay_s * 1e6, 6) for t in first} == {round(8 + 8 * 2.8 + 4.0 + side.flag_s * 1e6, 6)}
    assert {round(t.delay_s * 1e6, 6) for t in later} == {round(4.0 + side.flag_s * 1e6, 6)}
    assert all(t.deps for t in later)  # a step sends what the step before brought


def test_tuner_runs_pat_small_and_ring_large_at_one_gpu_per_node(hopper):
    """NCCL rates PAT at 0.75 of its channels' bus bandwidth where Ring takes n / (n - 1): PAT's
    log2 n steps win small calls, Ring large ones; both move the same bytes, so the large-call
    rates agree."""
    from simulator.engine.flow import run_flow
    from simulator.metrics.collective_stats import row
    gpus = per_node(hopper, 8, 1)
    for op in ("all_gather", "reduce_scatter"):
        assert [_algo(hopper, gpus, op, s) for s in (1 << 10, 1 << 20, 1 << 28, 1 << 31)] == [
            "pat", "pat", "ring", "ring"]
    rates = []
    for algo in ("pat", "ring"):
        w = build_collective(hopper, gpus, "all_gather", 1 << 31, algo, "Simple")
        rates.append(row(w, run_flow(hopper, w)).busbw_GBps)
    assert rates[0] == pytest.approx(rates[1], rel=0.02)


def _algo(fabric, gpus, op, nbytes) -> str:
    return build_collective(fabric, gpus, op, nbytes).meta["algo"]


def test_one_gpu_per_node_is_multi_node_tree_small_ring_large(hopper):
    """One GPU on each of 8 HGX servers is 8 NCCL nodes: the tree joins the GPUs by NCCL's double
    binary trees over node indices (ncclGetDtree), 2 x 3 network steps against the ring's 2 x 7, so
    the tuner runs it for small all_reduce; from 64 MiB NCCL's bandwidth rating puts Ring first."""
    from simulator.workloads.collectives.dtree import dtree_parents
    from simulator.workloads.collectives.rails import tree_parents
    gpus = per_node(hopper, 8, 1)
    expected = [{gpus[i]: gpus[p] for i, p in enumerate(tree) if p >= 0} for tree in dtree_parents(8)]
    assert tree_parents(hopper, gpus, 0) == expected
    assert [_algo(hopper, gpus, "all_reduce", s) for s in (1 << 10, 1 << 22, 1 << 26, 1 << 30)] == [
        "tree", "tree", "ring", "ring"]
