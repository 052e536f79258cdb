"""Cables and retimers: reach by lane rate, latency per metre, module power, the retimer rule."""

import pytest

from simulator.hardware.catalog import MAX_RETIMERS_PER_LINK, check_retimers, load_catalog
from simulator.hardware.errors import HardwareError

CAT = load_catalog()


@pytest.mark.parametrize("gen, reach_m", [("nvlink3", 3.0), ("nvlink4", 2.0), ("ib_ndr", 2.0),
                                          ("nvlink5", 1.5), ("pcie5", 3.0)])
def test_passive_copper_reach_depends_on_lane_rate(gen, reach_m):
    cable, link = CAT.cable("copper_passive"), CAT.link(gen)
    assert cable.reach_m(link.lane.data_rate_bps) == pytest.approx(reach_m)
    cable.check_link_reach(link, reach_m)                 # at the limit: fine
    with pytest.raises(HardwareError, match=f"reaches {reach_m:g} m, got {reach_m + 0.5:g} m"):
        cable.check_link_reach(link, reach_m + 0.5)


def test_reach_error_names_kind_rate_and_reach():
    with pytest.raises(HardwareError) as err:
        CAT.cable("copper_passive").check_reach(200e9, 3.0)
    assert str(err.value) == "passive copper at 200 Gb/s per lane reaches 1.5 m, got 3 m"


def test_raw_line_rate_falls_in_its_nominal_class():
    cable = CAT.cable("copper_passive")
    assert cable.lane_class(212.5e9).lane_rate_bps == 200e9
    assert cable.lane_class(106.25e9).lane_rate_bps == 100e9


def test_faster_lanes_never_reach_further():
    for cable in CAT.cables.values():
        reaches = [c.reach_m for c in cable.classes if c.reach_m is not None]
        assert reaches == sorted(reaches, reverse=True) or cable.kind == "optical", cable.name


def test_active_copper_reaches_further_than_passive_and_costs_power():
    passive, active = CAT.cable("copper_passive"), CAT.cable("copper_active")
    link = CAT.link("nvlink5")
    assert active.reach_m(200e9) > passive.reach_m(200e9)
    active.check_link_reach(link, 2.5)
    assert active.power_W_per_end(link) > 0 == passive.power_W_per_end(link)


def test_lane_rate_beyond_every_class_is_an_error():
    with pytest.raises(HardwareError, match="not rated for 400 Gb/s per lane"):
        CAT.cable("copper_passive").check_reach(400e9, 0.5)


def test_retimers_multiply_reach():
    cable = CAT.cable("copper_passive")
    factor = CAT.retimer("pcie6_retimer").reach_factor
    cable.check_reach(100e9, 5.0, retimers=1, reach_factor=factor)
    with pytest.raises(HardwareError, match="reaches 6 m with 1 retimer"):
        cable.check_reach(100e9, 7.0, retimers=1, reach_factor=factor)


def test_latency_is_propagation_plus_dsp_at_both_ends():
    link = CAT.link("nvlink5")
    copper, optical = CAT.cable("copper_passive"), CAT.cable("optical")
    assert copper.latency_s(2.0) == pytest.approx(9e-9)            # <= 4.5 ns/m
    assert optical.latency_s(10.0) == pytest.approx(50e-9)         # ~5 ns/m, no link: no DSP
    dsp = optical.lane_class(200e9).dsp_latency_s
    assert optical.latency_s(10.0, link) == pytest.approx(50e-9 + 2 * dsp)
    assert copper.latency_s(0.0, link) == 0.0


def test_modules_per_end_counts_lanes():
    optical = CAT.cable("optical")
    assert optical.modules_per_end(CAT.link("nvlink5")) == pytest.approx(2 / 8)   # quarter of a 1.6T
    assert optical.modules_per_end(CAT.link("ib_ndr")) == pytest.approx(4 / 8)    # half an 800G
    assert CAT.cable("trace").modules_per_end(CAT.link("nvlink5")) == 0


def test_optical_pj_per_bit_matches_module_figures():
    optical = CAT.cable("optical")
    assert optical.full_load_pJ_per_bit(CAT.link("nvlink5")) == pytest.approx(18.75)  # 1.6T 30 W
    assert optical.full_load_pJ_per_bit(CAT.link("ib_ndr")) == pytest.approx(20.0)    # 800G 16 W


def test_optical_nvl72_spine_costs_about_20_kW():
    """GTC 2024: an optical NVL72 spine 'would have cost ... 20 kilowatts of just transceivers'."""
    links, link = 1296, CAT.link("nvlink5")          # 72 GPUs x 18 links
    watts = links * 2 * CAT.cable("optical").power_W_per_end(link)
    assert 17_000 < watts < 23_000


def test_retimer_rule():
    assert MAX_RETIMERS_PER_LINK == 2
    for n in range(MAX_RETIMERS_PER_LINK + 1):
        check_retimers(n)
    with pytest.raises(HardwareError, match=r"at most 2 retimers \(PCIe base spec 4.3\), got 3"):
        check_retimers(3)


def test_retimer_latency_power_and_energy():
    gen6 = CAT.retimer("pcie6_retimer")
    assert gen6.latency_s == pytest.approx(64e-9)
    assert gen6.power_W == pytest.approx(11.0)
    # 11 W over x16 at 64 GT/s in both directions: ~5.4 pJ/bit at full load
    assert gen6.full_load_pJ_per_bit(64e9) == pytest.approx(11 / (2 * 16 * 64e9) * 1e12)
    assert CAT.retimer("pcie5_retimer").generation == "pcie5"
