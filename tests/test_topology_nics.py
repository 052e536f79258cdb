"""The NIC a GPU's p2p traffic uses across nodes, as NCCL picks it (``topology.nics``), and the ops
that cross nodes on it: point-to-point sends (one NIC each) and broadcast/reduce (each channel's
rail-aware ring, so every NIC carries its share)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.engine.flow import run_flow
from simulator.metrics.collective_stats import row
from simulator.topology.builder import build_fabric
from simulator.topology.nics import _mirror, local_nics, net_nics, net_routes
from simulator.topology.placement import Placement
from simulator.workloads.collectives import build_collective

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"


@pytest.fixture(scope="module")
def hopper():
    return build_fabric(TOPOLOGIES / "hopper_ib_rack.yaml")


def _uplinks(fabric, group: str) -> list:
    """The network channels out of ``group``'s NICs, in NIC order."""
    return [c for c in fabric.channels if c.fabric == "network" and fabric.nodes[c.src].kind == "nic"
            and fabric.nodes[c.src].group == group]


def test_mirror_bits_is_nccls():
    """src/graph/topo.h mirrorBits: the low log2(pow2) bits reversed."""
    assert [_mirror(v, 2) for v in range(2)] == [0, 1]
    assert [_mirror(v, 4) for v in range(4)] == [0, 2, 1, 3]
    assert [_mirror(v, 8) for v in range(8)] == [0, 4, 2, 6, 1, 5, 3, 7]


def test_each_gpu_uses_one_of_the_two_nics_it_shares_with_its_partner(hopper):
    """HGX H100 (two GPUs and two NICs a PCIe switch) and a GB200 tray (two GPUs and two NICs a
    Grace): DIVUP(2 NICs, 2 GPUs) = 1 NIC each, GPU i on NIC i (ncclTopoGetLocalNet)."""
    for i in range(8):
        assert len(local_nics(hopper, f"hgx0.gpu{i}")) == 2
        assert net_nics(hopper, f"hgx0.gpu{i}") == (f"hgx0.nic{i}",)
    x8 = build_fabric(TOPOLOGIES / "gb200_nvl72_x8_ib.yaml")
    assert [net_nics(x8, f"rack1.gpu{i}") for i in range(68, 72)] == [(f"rack1.nic{i}",) for i in range(68, 72)]


def test_a_nic_is_shared_by_the_jobs_gpus_only(hopper):
    """NCCL's topology holds the communicator's GPUs: with one GPU of each server in the job, GPU 0
    has both NICs of its PCIe switch to itself (DIVUP(2, 1) = 2), its channels alternating; with
    its partner in the job too, one each."""
    alone = {"hgx0.gpu0", "hgx1.gpu0"}
    assert net_nics(hopper, "hgx0.gpu0", alone) == ("hgx0.nic0", "hgx0.nic1")
    assert net_nics(hopper, "hgx0.gpu0", alone | {"hgx0.gpu1"}) == ("hgx0.nic0",)
    assert len({r[1] for r in net_routes(hopper, "hgx0.gpu0", "hgx1.gpu0", alone)}) == 2  # out of both NICs


def test_more_nics_than_gpus_are_dealt_over_channels(tmp_path):
    """Four NICs on a PCIe switch of two GPUs: two NICs each (DIVUP(4, 2)), GPU 1 starting at
    mirrorBits(1, 4) = 2, as NCCL's channels take them in turn."""
    path = tmp_path / "four_nics.yaml"
    text = (TOPOLOGIES / "hopper_ib_rack.yaml").read_text().replace("{name: nic, part: cx7, count: 8}",
                                                                  "{name: nic, part: cx7, count: 16}")
    path.write_text(text.replace("extends: hgx_h100.yaml", f"extends: {TOPOLOGIES / 'hgx_h100.yaml'}"))
    f = build_fabric(path)
    assert local_nics(f, "hgx0.gpu1") == ("hgx0.nic0", "hgx0.nic1", "hgx0.nic2", "hgx0.nic3")
    assert net_nics(f, "hgx0.gpu0") == ("hgx0.nic0", "hgx0.nic1")
    assert net_nics(f, "hgx0.gpu1") == ("hgx0.nic2", "hgx0.nic3")


def test_p2p_routes_leave_by_the_senders_nic_and_stay_in_the_network(hopper):
    routes = net_routes(hopper, "hgx0.gpu7", "hgx1.gpu0")
    for route in routes:
        names = [hopper.channels[c].dst for c in route]
        assert names[:2] == ["hgx0.psw3", "hgx0.nic7"] and names[-3:] == ["hgx1.nic0", "hgx1.psw0", "hgx1.gpu0"]
        assert sum(hopper.channels[c].fabric == "pcie" for c in route) == 4  # no detour back into a host


def test_sendrecv_across_two_servers_is_bound_by_one_nic(hopper):
    """nccl-tests sendrecv on 16 GPUs: rank 7 -> 8 and 15 -> 0 cross servers, each on its own 400G
    port (49.7 GB/s of payload), where spreading over both NICs of the PCIe switch (as shortest
    routes alone would) made it PCIe-bound at 57 GB/s."""
    gpus = tuple(hopper.gpus[:16])
    S = 1 << 30
    w = build_collective(hopper, gpus, "sendrecv", S, "direct", "Simple")
    r = run_flow(hopper, w)
    nic = _uplinks(hopper, "hgx0")
    sent = {hopper.channels[c.id].src: r.channel_bytes[c.id] for c in nic}
    assert sent["hgx0.nic7"] == pytest.approx(S, rel=1e-3) and sent["hgx0.nic6"] == 0
    assert row(w, r).busbw_GBps == pytest.approx(nic[7].rate_Bps / 1e9, rel=0.01)


@pytest.mark.parametrize("op", ["broadcast", "reduce"])
def test_broadcast_and_reduce_cross_nodes_on_every_rail(hopper, op):
    """Each channel runs its own rail-aware ring cut open at the root: every NIC of a server sends
    the same share (once a chain from every channel), where one chain for all channels put the
    whole message through one GPU's PCIe link. So the op runs at the ring's rail-bound rate, as
    all_gather does on the same GPUs."""
    gpus = tuple(hopper.gpus[:16])
    S = 1 << 30
    w = build_collective(hopper, gpus, op, S, "ring", "Simple")
    r = run_flow(hopper, w)
    sent = [r.channel_bytes[c.id] for c in _uplinks(hopper, "hgx0" if op == "broadcast" else "hgx1")]
    assert min(sent) == pytest.approx(max(sent), rel=1e-6)
    assert sum(sent) == pytest.approx(S, rel=1e-3)
    gather = build_collective(hopper, gpus, "all_gather", S, "ring", "Simple")
    assert row(w, r).busbw_GBps >= 0.95 * row(gather, run_flow(hopper, gather)).busbw_GBps


# ---- MNNVL off: NVLink per compute tray -------------------------------------------------------

def test_per_tray_keeps_nvlink_inside_each_tray_and_the_rest_on_the_network():
    """NCCL_MNNVL_ENABLE=0 on NVL72 racks: a tray's 4 GPUs still meet over NVLink (the same links,
    through their own copies of the 18 switch chips), every other pair only over the network; each
    tray is a node (``Node.group``) with its Graces and NICs; the rack's power is unchanged."""
    from simulator.topology.partitions import per_tray
    from simulator.workloads.collectives.base import link_kind
    from simulator.workloads.collectives.rails import nodes_of

    x8 = build_fabric(TOPOLOGIES / "gb200_nvl72_x8_ib.yaml")
    view = per_tray(x8)
    assert per_tray(x8) is view and len(view.channels) == len(x8.channels)
    assert view.static_power_W == x8.static_power_W
    assert link_kind(view, "rack0.gpu4", "rack0.gpu7") == "nvlink"
    assert link_kind(view, "rack0.gpu3", "rack0.gpu4") == "network"
    assert {view.nodes[n].group for n in ("rack0.gpu5", "rack0.grace2", "rack0.nic5")} == {"rack0-tray1"}
    assert len(nodes_of(view, tuple(view.gpus[:72]))) == 18
    hgx = build_fabric(TOPOLOGIES / "hopper_ib_rack.yaml")
    assert per_tray(hgx) is hgx  # a server is one tray already


def test_validate_with_mnnvl_off_runs_trays_as_nodes_bound_by_their_four_nics():
    """The two-rack log with NCCL_MNNVL_ENABLE=0 given: 32 nodes of 4 GPUs, each node's traffic
    through its 4 400G NICs (49.7 GB/s of payload each), so busbw at 8-16 GiB is at most
    4 x 49.7 GB/s and within 3% of it, the rings and trees of NVL72 racks as NCCL would run them
    without MNNVL."""
    import json

    from typer.testing import CliRunner

    from simulator.cli.app import _register, app
    _register()
    log = Path(__file__).resolve().parents[1] / "validation" / "nccl-tests" / "multinode" / \
        "gb200_nvl72_x2_all_reduce_128gpu.log"
    result = CliRunner().invoke(app, ["validate", "--nccl-tests", str(log), "--topology", "gb200_nvl72_x8_ib",
                                      "--engine", "flow", "--json", "--threshold", "1000", "--op", "all_reduce",
                                      "--gpus", "128", "--per-rack", "64", "--env", "NCCL_MNNVL_ENABLE=0"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["logs"]
    assert any(n.startswith("NCCL_MNNVL_ENABLE=0 (--env): MNNVL off") for n in run["settings_from_log"])
    nic = next(c for c in build_fabric(TOPOLOGIES / "gb200_nvl72_x8_ib.yaml").channels
               if c.src == "rack0.nic0" and c.fabric == "network").rate_Bps / 1e9
    for r in run["rows"][-2:]:
        assert 0.97 * 4 * nic <= r["predicted_busbw_GBps"] <= 4 * nic, r


def test_mnnvl_off_on_a_rack_without_nics_is_one_error_naming_the_setting():
    from typer.testing import CliRunner

    from simulator.cli.app import _register, app
    _register()
    log = Path(__file__).resolve().parents[1] / "validation" / "nccl-tests" / "gb200_nvl72_all_reduce_72gpu.log"
    result = CliRunner().invoke(app, ["validate", "--nccl-tests", str(log), "--topology", "gb200_nvl72",
                                      "--env", "NCCL_MNNVL_ENABLE=0"])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "NCCL_MNNVL_ENABLE=0 (--env) makes every compute tray its own node, and GB200 NVL72 joins" in line
    assert "pick a topology with NICs" in line


def test_bench_no_mnnvl_is_validates_mnnvl_off_and_the_api_returns_it(tmp_path):
    """``bench --no-mnnvl`` places the job on the racks as asked, then runs it with every tray a node:
    the figure validate gives with NCCL_MNNVL_ENABLE=0, bound by each tray's 4 NICs; the API's
    ``mnnvl=False`` returns the same rows; on a rack without NICs one error names the flag."""
    import json

    from typer.testing import CliRunner

    from simulator import api
    from simulator.cli.app import _register, app
    _register()
    args = ["bench", "gb200_nvl72_x8_ib", "--gpus", "128", "--per-rack", "64", "--sizes", "8G", "--engine", "flow"]
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, [*args, "--no-mnnvl", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["system"].endswith("NVLink per tray (MNNVL off)") and data["nodes"] == {
        f"rack{r}-tray{t}": 4 for r in range(2) for t in range(16)}
    (row,) = data["rows"]
    nic = next(c for c in build_fabric(TOPOLOGIES / "gb200_nvl72_x8_ib.yaml").channels
               if c.src == "rack0.nic0" and c.fabric == "network").rate_Bps / 1e9
    assert 0.97 * 4 * nic <= row["busbw_GBps"] <= 4 * nic
    outcome = api.bench("gb200_nvl72_x8_ib", gpus=128, placement=Placement(per_rack=64), sizes="8G", engine="flow",
                        mnnvl=False)
    assert outcome.rows[0]["busbw_GBps"] == row["busbw_GBps"]
    bad = CliRunner().invoke(app, ["bench", "gb200_nvl72", "--sizes", "1G", "--no-mnnvl"])
    assert bad.exit_code == 2 and "--no-mnnvl: NCCL_MNNVL_ENABLE=0 makes every compute tray its own node" in bad.output


def test_per_tray_keeps_channel_ids_and_partitions_faults_that_strike_later():
    """Channel ids stay those of the built fabric (switch-to-switch links included), so a fault's
    channel map holds; a fault striking during a run leaves a fabric partitioned the same way."""
    from simulator.runner.fabrics import load_fabric
    from simulator.topology.partitions import per_tray

    fabric = load_fabric("gb200_nvl72_x8_ib", ("switch_down:device=rack0.nvsw0,at=100us",))
    view = per_tray(fabric)
    assert [c.id for c in view.channels] == [c.id for c in fabric.channels]
    assert [c.link for c in view.channels] == [c.link for c in fabric.channels]
    (change,) = view.changes
    assert change.fabric.name.endswith("NVLink per tray (MNNVL off)")
    assert "rack0.nvsw0@rack0-tray0" not in {c.dst for c in change.fabric.channels}
    assert "rack0.nvsw1@rack0-tray0" in {c.dst for c in change.fabric.channels}
