"""Every fault kind on GB200 NVL72, HGX H100 and the PCIe server, each against its closed form.

One test per (kind, topology), flow engine, sizes large enough that fixed latencies are below the
tolerance. The expected figures are ratios the physics fixes: links or planes left out of those a
GPU had, lanes left out of the link's width, the go-back-N retry efficiency of
``hardware.retry`` for the link's own round trip, or an input error when nothing can carry the
traffic (GPUs do not forward, so a tree that lost a branch cannot reroute). The larger 72-GPU
figures of docs/faults.md are in ``tests/test_faults.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.engine.flow import run_flow
from simulator.errors import InputError
from simulator.hardware.retry import retry_parts, retry_point
from simulator.topology.builder import build_fabric
from simulator.topology.fabric import Fabric
from simulator.workloads.collectives import build_collective
from simulator.workloads.copies import build_copy

from fault_helpers import fault

GIB = 2**30
NVL72 = "topologies/gb200_nvl72.yaml"
HGX = "topologies/hgx_h100.yaml"
PCIE = "topologies/pcie_server.yaml"
NVL72_GPUS = tuple(f"compute{c}.gpu{g}" for c in (0, 1) for g in range(4))
"""Eight GPUs of two compute trays: every NVL72 ring below runs on them."""
LINK_BOUND_CHANNELS = 64
"""Enough channels that the NVL72 ring is bound by its 18 links, not by CTAs (tests/test_faults.py)."""


def ring_s(fabric: Fabric, gpus, nbytes: int = GIB, **kw) -> float:
    """Time of one ring all_reduce (s)."""
    w = build_collective(fabric, tuple(gpus), "all_reduce", nbytes, "ring", "Simple", **kw)
    res = run_flow(fabric, w)
    assert len(res.finish_s) == len(w.transfers) and res.bytes_delivered == w.total_bytes
    return float(max(res.finish_s))


def copy_rate(fabric: Fabric, kind: str, gpu: str) -> float:
    """Copy rate beyond the fixed setup cost (bytes/s): two sizes, the difference."""
    t = [float(max(run_flow(fabric, build_copy(fabric, kind, (gpu,), n)).finish_s)) for n in (GIB, 2 * GIB)]
    return GIB / (t[1] - t[0])


def retry_efficiency(fabric: Fabric, src: str, dst: str, ber: float) -> float:
    """The retry closed form for the channel ``src`` -> ``dst`` of the healthy ``fabric``."""
    c = next(c for c in fabric.channels if c.src == src and c.dst == dst)
    part = retry_parts()[c.fabric]
    return retry_point(ber, packet_B=part.packet_B, replay_buffer_B=part.replay_buffer_B,
                       round_trip_s=2 * c.latency_s + part.ack_delay_s, rate_Bps=c.rate_Bps).efficiency


@pytest.fixture(scope="module")
def nvl72() -> Fabric:
    return build_fabric(NVL72)


@pytest.fixture(scope="module")
def nvl72_ring_s(nvl72) -> float:
    return ring_s(nvl72, NVL72_GPUS, channels=LINK_BOUND_CHANNELS)


@pytest.fixture(scope="module")
def hgx() -> Fabric:
    return build_fabric(HGX)


@pytest.fixture(scope="module")
def hgx_ring_s(hgx) -> float:
    return ring_s(hgx, hgx.gpus)


@pytest.fixture(scope="module")
def pcie() -> Fabric:
    return build_fabric(PCIE)


# --- GB200 NVL72: 18 NVLink 5 links per GPU, one to each NVSwitch chip ---------------------------

def test_nvl72_link_down_ring_reroutes_at_17_of_18(nvl72, nvl72_ring_s):
    """compute0.gpu0 loses its link to one chip: its routes avoid the chip, the ring completes and
    runs at its slowest GPU's 17 of 18 links."""
    f = build_fabric(NVL72, [fault(kind="link_down", from_="compute0.gpu0", to="switch_tray0.nvsw0")])
    assert nvl72_ring_s / ring_s(f, NVL72_GPUS, channels=LINK_BOUND_CHANNELS) == pytest.approx(17 / 18, rel=0.01)


def test_nvl72_degraded_width_one_pair_ring_at_17_5_of_18(nvl72, nvl72_ring_s):
    """One of compute0.gpu0's links trains on one of its two pairs: 17 full links and a half."""
    f = build_fabric(NVL72, [fault(kind="degraded_width", from_="compute0.gpu0", to="switch_tray0.nvsw0", lanes=1)])
    assert nvl72_ring_s / ring_s(f, NVL72_GPUS, channels=LINK_BOUND_CHANNELS) == pytest.approx(17.5 / 18, rel=0.01)


def test_nvl72_switch_down_tray_ring_at_16_of_18(nvl72, nvl72_ring_s):
    """A whole switch tray (2 of 18 planes) down: every GPU keeps 16 links."""
    f = build_fabric(NVL72, [fault(kind="switch_down", enclosure="switch_tray0")])
    assert nvl72_ring_s / ring_s(f, NVL72_GPUS, channels=LINK_BOUND_CHANNELS) == pytest.approx(16 / 18, rel=0.01)


def test_nvl72_retimer_down_is_an_error_the_copper_spine_has_no_retimers():
    """The NVL72 spine is 1 m passive copper without retimers (that is what copper buys): a
    retimer that does not exist cannot fail, and the error says to use link_down."""
    with pytest.raises(InputError, match="has no retimers; use link_down"):
        build_fabric(NVL72, [fault(kind="retimer_down", from_="compute0.gpu0", to="switch_tray0.nvsw0")])


def test_nvl72_ber_on_the_spine_scales_the_ring_by_the_retry_efficiency(nvl72, nvl72_ring_s):
    """Every spine link at BER 1e-6: every link loses the same share, so the ring does too."""
    f = build_fabric(NVL72, [fault(kind="ber", from_="compute*.gpu*", to="switch_tray*.nvsw*", ber=1e-6)])
    eff = retry_efficiency(nvl72, "compute0.gpu0", "switch_tray0.nvsw0", 1e-6)
    assert 0.9 < eff < 0.95  # 272 B packets, 37 packets round trip: about 7.5 % lost
    assert nvl72_ring_s / ring_s(f, NVL72_GPUS, channels=LINK_BOUND_CHANNELS) == pytest.approx(eff, rel=0.01)


# --- HGX H100: 18 NVLink 4 links per GPU split 5/4/4/5 over four NVSwitch chips ---------------

def test_hgx_link_down_bundle_ring_reroutes_at_13_of_18(hgx, hgx_ring_s):
    """Within 2 %, as tests/test_faults.py: the ring's GPU-side per-step costs do not scale with links."""
    f = build_fabric(HGX, [fault(kind="link_down", from_="hgx.gpu0", to="hgx.nvsw0")])
    assert hgx_ring_s / ring_s(f, f.gpus) == pytest.approx(13 / 18, rel=0.02)


def test_hgx_link_down_one_of_a_bundle_ring_at_17_of_18(hgx, hgx_ring_s):
    f = build_fabric(HGX, [fault(kind="link_down", from_="hgx.gpu0", to="hgx.nvsw0", links=1)])
    assert hgx_ring_s / ring_s(f, f.gpus) == pytest.approx(17 / 18, rel=0.01)


def test_hgx_degraded_width_bundle_ring_at_15_5_of_18(hgx, hgx_ring_s):
    """GPU 0's five links to NVSwitch 0 on one of two pairs each: 13 + 5/2 links' worth."""
    f = build_fabric(HGX, [fault(kind="degraded_width", from_="hgx.gpu0", to="hgx.nvsw0", lanes=1)])
    assert hgx_ring_s / ring_s(f, f.gpus) == pytest.approx(15.5 / 18, rel=0.01)


def test_hgx_switch_down_nvswitch_ring_at_13_of_18(hgx, hgx_ring_s):
    """NVSwitch 0 down: every GPU loses its 5 links to it."""
    f = build_fabric(HGX, [fault(kind="switch_down", device="hgx.nvsw0")])
    assert hgx_ring_s / ring_s(f, f.gpus) == pytest.approx(13 / 18, rel=0.02)


def test_hgx_switch_down_pcie_switch_cuts_its_gpus_off_the_host(hgx):
    """PCIe switch 0 down: GPUs 0 and 1 have no way to the host (an error naming the fault), GPU 2's
    copy does not change, and NVLink collectives do not notice."""
    f = build_fabric(HGX, [fault(kind="switch_down", device="hgx.psw0")])
    with pytest.raises(InputError, match="switch_down device=hgx.psw0"):
        build_copy(f, "h2d", ("hgx.gpu0",), GIB)
    assert copy_rate(f, "h2d", "hgx.gpu2") == pytest.approx(copy_rate(hgx, "h2d", "hgx.gpu2"), rel=1e-6)


def test_hgx_retimer_down_on_a_gpu_riser_cuts_only_that_gpu(tmp_path):
    """HGX boards put PCIe retimers between the GPUs and the host switches (here added by a file
    that extends hgx_h100.yaml). GPU 0's retimer fails: its host copies are an error that names the
    fault; GPU 1 on the same switch copies as before; the NVLink ring does not change."""
    variant = tmp_path / "hgx_retimers.yaml"
    variant.write_text(f"extends: {Path(HGX).resolve()}\nname: HGX H100 with GPU retimers\n"
                       "enclosures:\n  - name: hgx\n    links:\n      - {name: gpu_pcie, retimers: 1}\n")
    healthy = build_fabric(variant)
    assert all(c.retimers for c in healthy.channels if c.src == "hgx.gpu0" and c.fabric == "pcie")
    f = build_fabric(variant, [fault(kind="retimer_down", from_="hgx.gpu0", to="hgx.psw*")])
    with pytest.raises(InputError, match="retimer_down"):
        build_copy(f, "h2d", ("hgx.gpu0",), GIB)
    assert copy_rate(f, "h2d", "hgx.gpu1") == pytest.approx(copy_rate(healthy, "h2d", "hgx.gpu1"), rel=1e-6)
    assert ring_s(f, f.gpus) == pytest.approx(ring_s(healthy, healthy.gpus), rel=1e-9)


def test_hgx_ber_on_nvlink_scales_the_ring_by_the_retry_efficiency(hgx, hgx_ring_s):
    f = build_fabric(HGX, [fault(kind="ber", from_="hgx.gpu*", to="hgx.nvsw*", ber=1e-6)])
    eff = retry_efficiency(hgx, "hgx.gpu0", "hgx.nvsw0", 1e-6)
    assert 0.9 < eff < 0.99
    assert hgx_ring_s / ring_s(f, f.gpus) == pytest.approx(eff, rel=0.01)


# --- PCIe server: a tree of four Gen5 switches under one CPU, a retimer on every link -----------

def test_pcie_link_down_uplink_keeps_peer_traffic_below_the_switch(pcie):
    """psw0's uplink down: GPUs 0 and 1 cannot reach the host (an error naming the fault) but
    still reach each other through psw0, as fast as before; GPU 2 is untouched."""
    f = build_fabric(PCIE, [fault(kind="link_down", from_="server.psw0", to="server.cpu")])
    with pytest.raises(InputError, match="link_down"):
        build_copy(f, "h2d", ("server.gpu0",), GIB)
    pair = ("server.gpu0", "server.gpu1")
    assert ring_s(f, pair) == pytest.approx(ring_s(pcie, pair), rel=1e-9)
    assert copy_rate(f, "h2d", "server.gpu2") == pytest.approx(copy_rate(pcie, "h2d", "server.gpu2"), rel=1e-6)


def test_pcie_degraded_width_x8_halves_the_copy_rate(pcie):
    """x16 trained at x8: host copies run at 8/16 of the x16 payload rate (h2d is link-bound
    healthy too, so it halves; d2h is below the link when healthy, so it drops by less)."""
    f = build_fabric(PCIE, [fault(kind="degraded_width", from_="server.gpu0", to="server.psw0", lanes=8)])
    x16 = next(c for c in pcie.channels if c.src == "server.gpu0").rate_Bps
    for kind in ("h2d", "d2h"):
        assert copy_rate(f, kind, "server.gpu0") == pytest.approx(x16 * 8 / 16, rel=1e-3)
    assert copy_rate(f, "h2d", "server.gpu0") / copy_rate(pcie, "h2d", "server.gpu0") == pytest.approx(0.5, rel=1e-3)


def test_pcie_switch_down_leaves_the_other_switches_as_they_were(pcie):
    """psw1 down: a collective over all eight GPUs cannot run (a clear error naming the fault);
    the six GPUs left run their ring as the same six did on the healthy server."""
    f = build_fabric(PCIE, [fault(kind="switch_down", device="server.psw1")])
    assert any("no links" in w for w in f.warnings)
    with pytest.raises(InputError, match="cannot run.*switch_down"):
        build_collective(f, f.gpus, "all_reduce", GIB, "ring", "Simple")
    six = tuple(g for g in f.gpus if g not in ("server.gpu2", "server.gpu3"))
    assert ring_s(f, six) == pytest.approx(ring_s(pcie, six), rel=1e-9)


def test_pcie_retimer_down_on_an_uplink_is_a_link_down(pcie):
    """A failed retimer takes its link down: the same fabric as link_down on that link."""
    by_retimer = build_fabric(PCIE, [fault(kind="retimer_down", from_="server.psw0", to="server.cpu")])
    by_link = build_fabric(PCIE, [fault(kind="link_down", from_="server.psw0", to="server.cpu")])
    assert [(c.src, c.dst, c.rate_Bps) for c in by_retimer.channels] == \
        [(c.src, c.dst, c.rate_Bps) for c in by_link.channels]
    assert len(by_retimer.channels) == len(pcie.channels) - 2
    with pytest.raises(InputError, match="retimer_down"):
        build_copy(by_retimer, "d2h", ("server.gpu1",), GIB)


def test_pcie_ber_scales_the_copy_rate_by_the_retry_efficiency(pcie):
    """GPU 0's x16 link at BER 1e-7: the copy rate is the link's times the PCIe retry efficiency
    (TLP size, replay buffer and ACK turnaround from parts/retry.yaml)."""
    f = build_fabric(PCIE, [fault(kind="ber", from_="server.gpu0", to="server.psw0", ber=1e-7)])
    eff = retry_efficiency(pcie, "server.gpu0", "server.psw0", 1e-7)
    assert 0.9 < eff < 0.999
    assert copy_rate(f, "h2d", "server.gpu0") / copy_rate(pcie, "h2d", "server.gpu0") == pytest.approx(eff, rel=0.005)


LONGEST_HOPS = ("gb200_nvl72_optical", "gb200_nvl72_x8_ib", "hopper_ib_rack", "pcie_server", "hgx_h100", "dgx_a100")
"""Shipped topologies that hold the longest hop of every link kind (optical NVLink, C2C, the IB
leaf-spine cables, retimed PCIe); the x16 and 2:1 variants repeat the x8 cables and take 4 s each
to build."""


@pytest.mark.parametrize("name", LONGEST_HOPS)
def test_shipped_links_have_replay_buffers_that_cover_their_round_trip(name):
    """A healthy link runs at its payload rate, which needs the replay buffer to cover the
    link's round trip x rate (else the retry closed form stalls it at window / round trip even
    without errors, and a ``ber`` fault would charge that stall to the bit errors)."""
    for c in build_fabric(f"topologies/{name}.yaml").channels:
        part = retry_parts()[c.fabric]
        point = retry_point(0.0, packet_B=part.packet_B, replay_buffer_B=part.replay_buffer_B,
                            round_trip_s=2 * c.latency_s + part.ack_delay_s, rate_Bps=c.rate_Bps)
        assert point.efficiency == 1.0, (c.src, c.dst, c.fabric, point)
