"""Link physics: per-direction and bidirectional rates derived from lanes, named as such."""

import pytest

from simulator.hardware.catalog import load_catalog
from simulator.units import GB

CAT = load_catalog()


@pytest.mark.parametrize("gen, per_dir_GBps, bidir_GBps, pairs_per_dir", [
    ("nvlink3", 25, 50, 4),   # A100 whitepaper 3.3.4
    ("nvlink4", 25, 50, 2),   # H100 whitepaper 4.7
    ("nvlink5", 50, 100, 2),  # Blackwell technical brief 3.6
    ("ib_ndr", 50, 100, 4),   # 4 x 100G = 400 Gb/s per direction
])
def test_link_rates_follow_from_lanes(gen, per_dir_GBps, bidir_GBps, pairs_per_dir):
    link = CAT.link(gen)
    assert link.pairs_per_direction == pairs_per_dir
    assert link.lane_pairs == 2 * pairs_per_dir
    assert link.line_rate_Bps == pytest.approx(per_dir_GBps * GB)
    assert link.bidir_line_rate_Bps == pytest.approx(bidir_GBps * GB)
    # the rate is the lane arithmetic, not a stored number
    assert link.line_rate_Bps == pytest.approx(pairs_per_dir * link.lane.data_rate_bps / 8)


def test_seed_arithmetic_200G_x4_over_8_counts_both_directions():
    """'200 Gbps x 4 / 8 = 100 GB/s' multiplies by ALL 4 pairs of an NVLink 5 link: 2 each way."""
    link = CAT.link("nvlink5")
    per_pair_bps = link.lane.data_rate_bps
    assert per_pair_bps == pytest.approx(200e9)
    seed_GBps = per_pair_bps * 4 / 8 / GB
    assert seed_GBps == pytest.approx(100)
    assert link.lane_pairs == 4                      # the "x 4": pairs over both directions
    assert seed_GBps * GB == pytest.approx(link.bidir_line_rate_Bps)
    assert link.line_rate_Bps == pytest.approx(seed_GBps * GB / 2)   # one direction: 50 GB/s


@pytest.mark.parametrize("gen, modulation, baud", [
    ("nvlink3", "NRZ", 50e9), ("nvlink4", "PAM4", 53.125e9), ("nvlink5", "PAM4", 106.25e9)])
def test_pam4_halves_the_baud_rate(gen, modulation, baud):
    lane = CAT.link(gen).lane
    assert lane.modulation == modulation
    assert lane.baud == pytest.approx(baud)
    assert lane.baud * lane.bits_per_symbol == pytest.approx(lane.rate_bps)


def test_raw_pam4_rates_map_onto_nominal_data_rates_through_fec():
    """106.25 / 212.5 Gb/s raw (guessed, Ethernet analogy) carry exactly 100 / 200 Gb/s after RS FEC."""
    assert CAT.lane("pam4_100g").data_rate_bps == pytest.approx(100e9)
    assert CAT.lane("pam4_200g").data_rate_bps == pytest.approx(200e9)
    assert CAT.link("nvlink5").raw_rate_Bps > CAT.link("nvlink5").line_rate_Bps
    assert "assumption" in CAT.lane("pam4_200g").sources["rate_bps"]


MEASURED_OVER_NCCL = (395 / 18 / 25) / 0.824
"""NVLink 4: measured one-way copy rate per link (395 GB/s over 18 links, 2x H200) over NCCL's
src/graph/topo.h model (20.6 of 25 GB/s)."""


def test_nvlink4_efficiency_is_the_measured_one_way_rate():
    link = CAT.link("nvlink4")
    assert 18 * link.payload_rate_Bps == pytest.approx(395 * GB, rel=0.002)
    assert "measured" in link.sources["protocol_efficiency"]
    # both ways: each direction also carries the other's responses: 354 GB/s measured
    assert 18 * link.payload_rate_Bps / (1 + link.reverse_overhead) == pytest.approx(354 * GB, rel=0.002)


@pytest.mark.parametrize("gen, nccl_GBps", [("nvlink3", 20.0), ("nvlink5", 40.1)])
def test_other_nvlink_generations_scale_nccls_model_by_the_measured_ratio(gen, nccl_GBps):
    link = CAT.link(gen)
    assert link.payload_rate_Bps == pytest.approx(nccl_GBps * GB * MEASURED_OVER_NCCL, rel=0.002)
    assert link.payload_rate_Bps < link.line_rate_Bps
    assert link.bidir_payload_rate_Bps == pytest.approx(2 * link.payload_rate_Bps)
    assert "topo.h" in link.sources["protocol_efficiency"]
    assert link.reverse_overhead == CAT.link("nvlink4").reverse_overhead


@pytest.mark.parametrize("gpu, total_bidir_GBps", [("a100", 600), ("h100", 900), ("h200", 900),
                                                    ("b200", 1800), ("gb200", 1800)])
def test_gpu_nvlink_totals_both_directions(gpu, total_bidir_GBps):
    spec = CAT.device(gpu).gpu
    link = CAT.link(spec.nvlink)
    assert spec.nvlinks * link.bidir_line_rate_Bps == pytest.approx(total_bidir_GBps * GB)
    assert spec.nvlinks * link.line_rate_Bps == pytest.approx(total_bidir_GBps / 2 * GB)


def test_credit_parameters_are_consistent():
    for name, link in CAT.links.items():
        assert link.credit_buffer_B % link.credit_unit_B == 0, name
        assert link.credit_buffer_B >= link.credit_unit_B * link.credit_batch, name
    assert CAT.link("ib_ndr").credit_unit_B == 64    # IBTA 64-byte flow-control blocks
    assert CAT.link("pcie5").credit_unit_B == 16     # PCIe data credit


def test_fixed_width_links_reject_width():
    from simulator.hardware.errors import HardwareError
    with pytest.raises(HardwareError, match="PCIe generations only"):
        CAT.link("nvlink5", width=4)
    with pytest.raises(HardwareError, match="unknown link generation 'nvlink9'; known: .*nvlink5"):
        CAT.link("nvlink9")
