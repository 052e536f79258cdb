"""PCIe: x16 rates per generation, TLP efficiency vs max payload size, flit mode, credits."""

import pytest

from simulator.hardware.catalog import load_catalog
from simulator.hardware.errors import HardwareError
from simulator.hardware.pcie import PAYLOAD_SIZES, WIDTHS, tlp_efficiency
from simulator.units import GB

CAT = load_catalog()


@pytest.mark.parametrize("gen, x16_GBps", [("pcie3", 15.75), ("pcie4", 31.5), ("pcie5", 63.0),
                                           ("pcie6", 121.0)])
def test_x16_per_direction_rate(gen, x16_GBps):
    link = CAT.link(gen, width=16)
    assert link.fabric == "pcie"
    assert link.line_rate_Bps / GB == pytest.approx(x16_GBps, abs=0.02)
    assert link.bidir_line_rate_Bps == pytest.approx(2 * link.line_rate_Bps)


@pytest.mark.parametrize("gen", ["pcie3", "pcie4", "pcie5", "pcie6"])
def test_rate_scales_with_width(gen):
    x1 = CAT.link(gen, width=1).line_rate_Bps
    for w in WIDTHS:
        link = CAT.link(gen, width=w)
        assert link.pairs_per_direction == w
        assert link.line_rate_Bps == pytest.approx(w * x1)


def test_gen6_flit_carries_236_tlp_bytes_of_256():
    link = CAT.link("pcie6", width=16)
    raw_Bps = 16 * 64e9 / 8
    assert link.raw_rate_Bps == pytest.approx(raw_Bps)
    assert link.line_rate_Bps == pytest.approx(raw_Bps * 242 / 256)      # after FEC + CRC
    tlp_bytes_Bps = link.line_rate_Bps * CAT.pcie["pcie6"].link_efficiency
    assert tlp_bytes_Bps == pytest.approx(raw_Bps * 236 / 256)           # 118 GB/s of TLP bytes
    assert tlp_bytes_Bps / GB == pytest.approx(118, abs=0.1)


@pytest.mark.parametrize("mps, expected", [(128, 0.84), (256, 0.91), (512, 0.955)])
def test_tlp_efficiency_matches_published_figures(mps, expected):
    gen = CAT.pcie["pcie5"]
    assert tlp_efficiency(mps, gen.tlp_overhead_B) == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize("gen", ["pcie3", "pcie4", "pcie5", "pcie6"])
def test_efficiency_rises_with_payload_size_and_stays_below_one(gen):
    effs = [CAT.link(gen, max_payload_B=m).protocol_efficiency for m in PAYLOAD_SIZES]
    assert all(a < b for a, b in zip(effs, effs[1:]))
    assert 0 < effs[0] and effs[-1] < 1


def test_flit_mode_has_less_per_tlp_overhead_than_128b130b():
    assert CAT.pcie["pcie6"].flit_mode and not CAT.pcie["pcie5"].flit_mode
    assert CAT.pcie["pcie6"].tlp_overhead_B < CAT.pcie["pcie5"].tlp_overhead_B


def test_payload_rate_is_line_rate_times_efficiency():
    link = CAT.link("pcie5", width=16, max_payload_B=256)
    assert link.max_payload_B == 256
    assert link.payload_rate_Bps == pytest.approx(63.015e9 * 256 / 280 * 0.9973, rel=1e-3)
    assert "256/(256+24)" in link.sources["protocol_efficiency"]


def test_write_credit_cost():
    credits = CAT.link("pcie5").pcie_credits
    assert credits.unit_B == 16
    assert credits.write_cost(256) == (1, 16)
    assert credits.write_cost(1) == (1, 1)
    assert credits.write_cost(17) == (1, 2)
    assert credits.completion_cost(64) == (1, 4)
    link = CAT.link("pcie5")
    assert link.credit_unit_B == 16 and link.credit_buffer_B == credits.pd * 16


@pytest.mark.parametrize("kwargs, message", [({"width": 3}, "x3 does not exist; choose one of x1"),
                                             ({"max_payload_B": 100}, "100 B does not exist")])
def test_bad_width_or_payload_is_an_error(kwargs, message):
    with pytest.raises(HardwareError, match=message):
        CAT.link("pcie5", **kwargs)
