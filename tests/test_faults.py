"""Faults: the surviving fabric and what it does to collectives and copies, against closed forms.

Expectations are ratios the physics fixes (16 of 18 switch planes left, 8 of 16 PCIe lanes, one
of five parallel links gone) and the retry closed form of ``hardware.retry``; none is fitted.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from simulator.cli.app import app, main  # noqa: F401  (main registers the commands)
from simulator.engine.flow import run_flow
from simulator.errors import InputError
from simulator.hardware.faults import parse_fault_flag
from simulator.hardware.retry import packet_error, retry_parts, retry_point
from simulator.runner.sweeps import SweepSpec, sweep
from simulator.topology.builder import build_fabric
from simulator.workloads.collectives import build_collective
from simulator.workloads.copies import build_copy

from fault_helpers import fault

GIB = 2**30
NVL72 = "topologies/gb200_nvl72.yaml"
HGX = "topologies/hgx_h100.yaml"
PCIE = "topologies/pcie_server.yaml"


@pytest.fixture(scope="module")
def nvl72():
    return build_fabric(NVL72)


@pytest.fixture(scope="module")
def nvl72_tray_down():
    return build_fabric(NVL72, [fault(kind="switch_down", enclosure="switch_tray0")])


def _busbw(fabric, op, nbytes, gpus, **kw):
    return sweep(fabric, SweepSpec(op=op, gpus=gpus, sizes=(nbytes,), engine="flow", **kw))[0]["busbw_GBps"]


def test_tray_down_leaves_16_of_18_planes(nvl72, nvl72_tray_down):
    assert len(nvl72_tray_down.nodes) == len(nvl72.nodes) - 2
    assert len(nvl72_tray_down.channels) == len(nvl72.channels) * 16 // 18
    assert nvl72_tray_down.faults == ["switch_down enclosure=switch_tray0"]
    assert len(nvl72.faults) == 0 and len(nvl72_tray_down.gpus) == 72


LINK_BOUND_CHANNELS = 64
"""Channels (CTAs) enough that a ring on NVL72 is link-bound, not CTA-bound (64 x 21 GB/s is well
above 18 NVLink 5 links): the case where lost links show one for one."""


def test_ring_all_reduce_with_one_tray_down_runs_at_16_of_18(nvl72, nvl72_tray_down):
    """Ring all_reduce on 72 GPUs with enough channels is link-bound: one tray (2 of 18 planes) down
    leaves 16/18 of the per-GPU bandwidth (within 1%: the fixed launch and hop latencies do not
    scale). With NCCL's default 32 channels the CTAs bind first and the loss is smaller."""
    healthy = _busbw(nvl72, "all_reduce", 4 * GIB, 72, algo="ring", channels=LINK_BOUND_CHANNELS)
    degraded = _busbw(nvl72_tray_down, "all_reduce", 4 * GIB, 72, algo="ring", channels=LINK_BOUND_CHANNELS)
    assert degraded / healthy == pytest.approx(16 / 18, rel=0.01)


def test_nvls_with_one_tray_down_follows_its_closed_forms(nvl72, nvl72_tray_down):
    """NVLS on 4 GPUs is link-bound: 2(n-1)/(n+1) x links x payload rate / (1 + reverse overhead)
    x NVLS efficiency, with 16 links instead of 18. On 72 GPUs it is paced by its staging copies
    (tests/test_gpu_side.py), a GPU-side bound the lost planes do not touch."""
    per_link = 50.0 * 0.855 / 1.116 * 0.74
    for fabric, links in ((nvl72, 18), (nvl72_tray_down, 16)):
        assert _busbw(fabric, "all_reduce", 8 * GIB, 4, algo="nvls") == pytest.approx(
            2 * 3 / 5 * links * per_link, rel=0.02)
    big = [_busbw(f, "all_reduce", 8 * GIB, 72, algo="nvls") for f in (nvl72, nvl72_tray_down)]
    # healthy: staging-bound, below its 18-link bound; degraded: the lower of staging and 16 links
    assert big[0] < 2 * 71 / 73 * 18 * per_link
    assert big[1] == pytest.approx(min(big[0], 2 * 71 / 73 * 16 * per_link), rel=0.02)


def test_one_gpu_link_down_drops_nvls_and_ring_still_runs(nvl72):
    """A GPU without a link to one chip no longer shares every reduction switch with the others:
    NVLS cannot run (as NCCL, which needs all ranks on the same NVLS multicast group), ring can."""
    f = build_fabric(NVL72, [fault(kind="link_down", from_="compute0.gpu0", to="switch_tray0.nvsw0")])
    assert len(f.channels) == len(nvl72.channels) - 2
    with pytest.raises(InputError, match="nvls needs all ranks"):
        build_collective(f, f.gpus, "all_reduce", GIB, "nvls", "Simple")
    healthy = _busbw(nvl72, "all_reduce", 4 * GIB, 72, algo="ring", channels=LINK_BOUND_CHANNELS)
    # the ring is as slow as its slowest GPU: 17 of 18 links out of compute0.gpu0
    assert _busbw(f, "all_reduce", 4 * GIB, 72, algo="ring", channels=LINK_BOUND_CHANNELS) == pytest.approx(
        healthy * 17 / 18, rel=0.01)


def test_hgx_links_down_reroute_and_ring_completes_slower():
    """HGX H100: GPU 0 loses its five links to NVSwitch 0; every route avoids them and the ring
    all_reduce still completes, at 13/18 of healthy (GPU 0, with 13 of 18 links, paces the ring)."""
    healthy = build_fabric(HGX)
    f = build_fabric(HGX, [fault(kind="link_down", from_="hgx.gpu0", to="hgx.nvsw0")])
    assert len(f.channels) == len(healthy.channels) - 10
    w = build_collective(f, f.gpus, "all_reduce", GIB, "ring", "Simple")
    res = run_flow(f, w)
    assert not any({c.src, c.dst} == {"hgx.gpu0", "hgx.nvsw0"} for c in f.channels)
    assert len(res.finish_s) == len(w.transfers)
    h = _busbw(healthy, "all_reduce", GIB, 8, algo="ring")
    d = _busbw(f, "all_reduce", GIB, 8, algo="ring")
    assert d == pytest.approx(h * 13 / 18, rel=0.02)


def test_hgx_one_of_five_parallel_links_down_costs_one_link_of_18():
    """One of GPU 0's five parallel links to NVSwitch 0 down: the five routes through that switch
    now share four links, so two of them are weighted half (``routing.route_weights``) and every
    surviving link carries the same: the ring runs at GPU 0's 17 of 18 links."""
    healthy = build_fabric(HGX)
    f = build_fabric(HGX, [fault(kind="link_down", from_="hgx.gpu0", to="hgx.nvsw0", links=1)])
    assert len(f.channels) == len(healthy.channels) - 2
    h = _busbw(healthy, "all_reduce", GIB, 8, algo="ring")
    assert _busbw(f, "all_reduce", GIB, 8, algo="ring") == pytest.approx(h * 17 / 18, rel=0.01)


def _copy_s(fabric, nbytes):
    w = build_copy(fabric, "h2d", fabric.gpus[:1], nbytes)
    return float(max(run_flow(fabric, w).finish_s))


def test_pcie_x16_at_x8_halves_the_h2d_copy_rate():
    """Beyond the fixed setup cost, the copy rate follows the link: compare two large sizes."""
    healthy = build_fabric(PCIE)
    x8 = build_fabric(PCIE, [fault(kind="degraded_width", from_="server.gpu0", to="server.psw0", lanes=8)])
    ch = next(c for c in x8.channels if c.src == "server.gpu0")
    assert ch.lanes == 8
    rate = [GIB / (_copy_s(f, 2 * GIB) - _copy_s(f, GIB)) for f in (healthy, x8)]
    assert rate[1] / rate[0] == pytest.approx(0.5, rel=0.01)


def test_nvlink5_on_one_pair_runs_at_half_rate(nvl72):
    f = build_fabric(NVL72, [fault(kind="degraded_width", from_="compute0.gpu0", to="switch_tray0.nvsw0", lanes=1)])
    before = next(c for c in nvl72.channels if c.src == "compute0.gpu0")
    after = next(c for c in f.channels if c.src == "compute0.gpu0")
    assert after.rate_Bps == pytest.approx(before.rate_Bps / 2) and after.lanes == 1


def test_retimer_down_isolates_a_gpu_with_a_clear_error():
    f = build_fabric(PCIE, [fault(kind="retimer_down", from_="server.gpu0", to="server.psw0")])
    assert any("no links" in w for w in f.warnings)
    with pytest.raises(InputError, match="cannot run.*retimer_down"):
        build_collective(f, f.gpus, "all_reduce", GIB, "ring", "Simple")


def test_pcie_switch_and_ib_style_switch_down():
    f = build_fabric(HGX, [fault(kind="switch_down", device="hgx.psw0")])
    assert "hgx.psw0" not in f.nodes and all("psw0" not in (c.src + c.dst) for c in f.channels)
    with pytest.raises(InputError, match="is a gpu"):
        build_fabric(HGX, [fault(kind="switch_down", device="hgx.gpu0")])


def test_ber_scales_rate_by_the_retry_closed_form(nvl72):
    f = build_fabric(NVL72, [fault(kind="ber", from_="compute0.gpu0", to="switch_tray0.nvsw0", ber=1e-6)])
    before = next(c for c in nvl72.channels if c.src == "compute0.gpu0")
    after = next(c for c in f.channels if c.src == "compute0.gpu0")
    part = retry_parts()["nvlink"]
    p = 1 - (1 - 1e-6) ** (8 * part.packet_B)
    point = retry_point(1e-6, packet_B=part.packet_B, replay_buffer_B=part.replay_buffer_B,
                        round_trip_s=2 * before.latency_s + part.ack_delay_s, rate_Bps=before.rate_Bps)
    r = point.round_trip_packets
    assert point.packet_error == pytest.approx(p, rel=1e-9)
    assert after.rate_Bps == pytest.approx(before.rate_Bps * (1 - p) / (1 + (r - 1) * p), rel=1e-9)
    assert after.ber == 1e-6


def test_retry_closed_form_limits():
    assert packet_error(0.0, 256) == 0.0
    # R = 1: goodput = 1 - p
    one = retry_point(1e-5, packet_B=256, replay_buffer_B=4096, round_trip_s=0.0, rate_Bps=1e9)
    assert one.round_trip_packets == 1 and one.efficiency == pytest.approx(1 - packet_error(1e-5, 256))
    # no errors, a buffer of half the round trip: the link stalls half the time
    half = retry_point(0.0, packet_B=1000, replay_buffer_B=5000, round_trip_s=9e-6, rate_Bps=1e9)
    assert half.round_trip_packets == 10 and half.efficiency == pytest.approx(0.5)


# --- bad input ---------------------------------------------------------------------------------

def _cli(*args):
    main  # noqa: B018
    from simulator.cli.app import _register

    _register()
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("text, msg", [
    ("switch_down", "exactly one of"),
    ("link_down:from=compute0.gpu0", "needs 'from' and 'to'"),
    ("ber:from=*,to=*", "needs 'ber'"),
    ("ber:from=*,to=*,ber=2", "less than 1"),
    ("melt:device=x", "kind"),
    ("switch_down:enclosure=nope", "no enclosure matches nope"),
    ("degraded_width:from=compute0.gpu0,to=switch_tray0.nvsw0,lanes=2", "must be fewer"),
    ("link_down:from=compute0.gpu0,to=compute1.gpu0", "no surviving link"),
    ("lanes=3", "should be 'link_down'"),
])
def test_bad_fault_flag_exits_2_naming_the_flag(text, msg):
    r = _cli("bench", NVL72, "--sizes", "1M", "--engine", "flow", "--fault", text)
    assert r.exit_code == 2, r.output
    assert "--fault" in r.output and msg in r.output and "Traceback" not in r.output


def test_bad_fault_in_topology_file_points_at_its_line(tmp_path):
    topo = tmp_path / "t.yaml"
    topo.write_text("extends: " + str((__import__("pathlib").Path(NVL72)).resolve()) + "\n"
                    "faults:\n"
                    "  - {kind: link_down, from: compute0.gpu0, to: switch_tray0.nvsw0}\n"
                    "  - kind: switch_down\n"
                    "    enclosure: switch_tray99\n")
    r = _cli("bench", str(topo), "--sizes", "1M", "--engine", "flow")
    assert r.exit_code == 2 and f"{topo}:5: faults[1].enclosure: no enclosure matches" in r.output, r.output


def test_fault_flag_syntax():
    assert parse_fault_flag("degraded_width:from=a|b,to=c,lanes=8") == {
        "kind": "degraded_width", "from": ["a", "b"], "to": "c", "lanes": 8}
    with pytest.raises(ValueError):
        parse_fault_flag("link_down:from")


def test_bench_with_faults_shows_healthy_beside_degraded():
    r = _cli("bench", PCIE, "--op", "h2d", "--gpus", "1", "--sizes", "1G", "--engine", "flow",
             "--fault", "degraded_width:from=server.gpu0,to=server.psw0,lanes=8")
    assert r.exit_code == 0, r.output
    assert "healthy vs degraded" in r.output and "0.500" in r.output


def test_fault_file_flag_and_scenario_variants(tmp_path):
    faults = tmp_path / "f.yaml"
    faults.write_text("faults:\n  - {kind: switch_down, device: hgx.nvsw3}\n")
    from simulator.topology.fault_file import read_faults

    assert [f.describe() for f in read_faults([str(faults)])[0]] == ["switch_down device=hgx.nvsw3"]
    faults.write_text("faults:\n  - {kind: switch_down, device: hgx.nvsw3, lanes: 2}\n")
    r = _cli("bench", HGX, "--sizes", "1M", "--fault", str(faults))
    assert r.exit_code == 2 and f"{faults}:2:" in r.output and "'lanes' does not apply" in r.output, r.output
    faults.write_text("faults:\n  - {kind: switch_down, device: hgx.nvsw3}\n  - {kind: switch_down, device: nope}\n")
    r = _cli("bench", HGX, "--sizes", "1M", "--fault", str(faults))
    assert r.exit_code == 2 and f"{faults}:3: faults[1].device: no switch matches nope" in r.output, r.output
    tray = build_fabric("topologies/faults/nvl72_tray_down.yaml")
    assert tray.faults == ["switch_down enclosure=switch_tray0"]


def test_run_with_fault_runs_each_topology_healthy_and_degraded(tmp_path):
    out = tmp_path / "out.json"
    r = _cli("run", "scenarios/nvl72_allreduce.yaml", "--fault", "switch_down:enclosure=switch_tray0", "--json", str(out))
    assert r.exit_code == 0, r.output
    import json

    systems = json.loads(out.read_text())["systems"]
    assert [s["name"] for s in systems] == ["GB200 NVL72", "GB200 NVL72 (degraded)"]
    r = _cli("run", "scenarios/nvl72_allreduce.yaml", "--fault", "switch_down:enclosure=switch_tray99")
    assert r.exit_code == 2 and "--fault" in r.output


def test_describe_with_fault_counts_the_survivors():
    import json

    r = _cli("describe", NVL72, "--json", "--fault", "switch_down:enclosure=switch_tray0")
    s = json.loads(r.output)
    assert s["switch_chips"] == 16 and s["links"] == 72 * 16 and s["faults"] == ["switch_down enclosure=switch_tray0"]
    assert s["per_gpu_GBps"]["nvlink"]["per_direction"] == pytest.approx(16 * 50.0)


def test_scenario_faults_key_runs_healthy_and_degraded_and_locates_bad_faults(tmp_path):
    import json

    topo = __import__("pathlib").Path(HGX).resolve()
    scen = tmp_path / "s.yaml"
    scen.write_text(f"name: s\ntopologies: [{topo}]\nengine: flow\n"
                    "workloads:\n  - {kind: collective, name: ar, op: all_reduce, gpus: 8, sizes: 1G, algo: ring}\n"
                    "faults:\n  - {kind: switch_down, device: hgx.nvsw0}\n")
    out = tmp_path / "out.json"
    r = _cli("run", str(scen), "--json", str(out))
    assert r.exit_code == 0, r.output
    systems = json.loads(out.read_text())["systems"]
    assert [s["name"] for s in systems] == ["HGX H100", "HGX H100 (degraded)"]
    busbw = [s["rows"][0]["busbw_GBps"] for s in systems]
    assert busbw[1] / busbw[0] == pytest.approx(13 / 18, rel=0.02)
    # a fault in the scenario that matches nothing, and one of the wrong shape: FILE:LINE
    scen.write_text(scen.read_text() + "  - kind: switch_down\n    device: nope\n")
    r = _cli("run", str(scen))
    assert r.exit_code == 2 and f"{scen}:9: faults[1].device: no switch matches nope" in r.output, r.output
    scen.write_text(scen.read_text().replace("device: nope", "lanes: 2"))
    r = _cli("run", str(scen))
    assert r.exit_code == 2 and f"{scen}:8:" in r.output and "Traceback" not in r.output, r.output


def test_compare_with_fault_runs_every_system_healthy_and_degraded(tmp_path):
    import json

    out = tmp_path / "c.json"
    r = _cli("compare", HGX, "topologies/hgx_h200.yaml", "--op", "all_reduce", "--sizes", "1G", "--engine", "flow",
             "--fault", "switch_down:device=hgx.nvsw0", "--json", str(out))
    assert r.exit_code == 0, r.output
    systems = json.loads(out.read_text())["systems"]
    assert [s["name"] for s in systems] == ["HGX H100", "HGX H100 (degraded)", "HGX H200", "HGX H200 (degraded)"]
    r = _cli("compare", HGX, "topologies/hgx_h200.yaml", "--op", "all_reduce", "--fault", "switch_down:device=nope")
    assert r.exit_code == 2 and "--fault" in r.output and "no switch matches nope" in r.output, r.output


def test_route_weights_are_even_on_healthy_fabrics_and_halve_a_shared_link():
    """Healthy bundles of equal width along a path: every route weighs 1 (nothing changes). HGX
    GPU 0 with 4 of 5 links to NVSwitch 0: the two routes that share a link weigh 1/2 each."""
    from simulator.topology.routing import equal_cost_routes, route_weights

    for path in (HGX, "topologies/hopper_ib_rack.yaml"):
        f = build_fabric(path)
        for dst in f.gpus[1::7]:
            assert set(route_weights(equal_cost_routes(f, f.gpus[0], dst)).tolist()) == {1.0}
    f = build_fabric(HGX, [fault(kind="link_down", from_="hgx.gpu0", to="hgx.nvsw0", links=1)])
    routes = equal_cost_routes(f, "hgx.gpu0", "hgx.gpu1")
    weights = route_weights(routes)
    assert sorted(weights.tolist()) == [0.5, 0.5] + [1.0] * 16
    load: dict[int, float] = {}
    for r, w in zip(routes, weights):
        load[r[0]] = load.get(r[0], 0.0) + w
    assert set(load.values()) == {1.0} and len(load) == 17  # each of GPU 0's 17 links carries one route's worth
