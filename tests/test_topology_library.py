"""Every shipped topology: counts, per-GPU bandwidth, bisection and power from first principles.

Expected figures are written as the arithmetic that produces them (lanes x rate / 8, links x
pairs x 2 directions), from the sourced hardware figures in ``/work/shared/datasheet.md``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.hardware.catalog import load_catalog
from simulator.topology.builder import build_fabric
from simulator.topology.describe import describe

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"

NVLINK3 = 4 * 50e9 / 8 / 1e9       # GB/s per direction per link: 4 pairs x 50 Gb/s NRZ
NVLINK4 = 2 * 100e9 / 8 / 1e9      # 2 pairs x 100 Gb/s PAM4
NVLINK5 = 2 * 200e9 / 8 / 1e9      # 2 pairs x 200 Gb/s PAM4
PCIE4_X16 = 16 * 16e9 * 128 / 130 / 8 / 1e9
PCIE5_X16 = 16 * 32e9 * 128 / 130 / 8 / 1e9
NDR = 4 * 100e9 / 8 / 1e9          # 400G InfiniBand: 4 pairs x 100 Gb/s after FEC
HDR = 4 * 50e9 / 8 / 1e9           # 200G InfiniBand: 4 pairs x 50 Gb/s after FEC
C2C = 90 * 40e9 / 8 / 1e9          # NVLink-C2C: 90 signals x 40 Gb/s NRZ = 450 GB/s per direction

HGX_LINKS = 8 * 18 + 8 + 4         # NVLink + GPU-to-PCIe-switch + PCIe-switch-to-CPU
HGX_PAIRS = 8 * 18 * 2 * 2 + 12 * 16 * 2

# file: gpus, switch chips, links, lane pairs, {fabric: per-GPU GB/s per direction}, bisection per direction
EXPECTED = {
    "gb200_nvl72": (72, 18, 72 * 18, 72 * 18 * 2 * 2, {"nvlink": 18 * NVLINK5}, 36 * 18 * NVLINK5),
    "gb200_nvl72_optical": (72, 18, 72 * 18, 72 * 18 * 2 * 2, {"nvlink": 18 * NVLINK5}, 36 * 18 * NVLINK5),
    "hgx_h100": (8, 4, HGX_LINKS, HGX_PAIRS, {"nvlink": 18 * NVLINK4, "pcie": PCIE5_X16}, 4 * 18 * NVLINK4),
    "hgx_h200": (8, 4, HGX_LINKS, HGX_PAIRS, {"nvlink": 18 * NVLINK4, "pcie": PCIE5_X16}, 4 * 18 * NVLINK4),
    "dgx_a100": (8, 6, 8 * 12 + 12, 8 * 12 * 4 * 2 + 12 * 16 * 2, {"nvlink": 12 * NVLINK3, "pcie": PCIE4_X16},
                 4 * 12 * NVLINK3),
    # 4 DGX A100 nodes + 8 HDR NICs each on PCIe, 32 NIC-to-leaf links + 8 leaves x 2 spines x 2 links;
    # rank halves are nodes 0-1 and 2-3: 16 NICs' worth of network cross
    "dgx_a100_hdr_pod": (32, 4 * 6 + 8 + 2, 4 * (8 * 12 + 12 + 8) + 32 + 32,
                         4 * (8 * 12 * 4 * 2 + 12 * 16 * 2 + 8 * 16 * 2) + 64 * 4 * 2,
                         {"nvlink": 12 * NVLINK3, "pcie": PCIE4_X16, "network": HDR}, 16 * HDR),
    # 20 DGX nodes + 8 NICs each, 160 NIC-to-leaf links + 8 leaves x 10 spines x 2 links
    "dgx_a100_hdr_su": (160, 20 * 6 + 8 + 10, 20 * (8 * 12 + 12 + 8) + 160 + 160,
                        20 * (8 * 12 * 4 * 2 + 12 * 16 * 2 + 8 * 16 * 2) + 320 * 4 * 2,
                        {"nvlink": 12 * NVLINK3, "pcie": PCIE4_X16, "network": HDR}, 80 * HDR),
    # 9 HGX nodes + 8 NICs each on PCIe, 72 NIC-to-leaf links + 8 leaves x 3 spines x 3 links
    "hopper_ib_rack": (72, 9 * 4 + 8 + 3, 9 * (HGX_LINKS + 8) + 72 + 72,
                       9 * (HGX_PAIRS + 8 * 16 * 2) + 144 * 4 * 2,
                       {"nvlink": 18 * NVLINK4, "pcie": PCIE5_X16, "network": NDR},
                       # halves split node 4: 4 GPUs' NVLink across, plus 36 NICs' worth of network
                       4 * 18 * NVLINK4 + 36 * NDR),
    # 8 NVL72 racks: per rack 1,296 NVLink + 72 C2C + 72 NIC PCIe links; 576 rails + 18 leaves x
    # 16 spines x 2; lane pairs per link: NVLink5 2x2, C2C 90x2, PCIe x16 16x2, NDR 4x2. Rank halves
    # are racks 0-3 and 4-7: every leaf holds 16 NICs of each half, so the cut is 288 NICs.
    "gb200_nvl72_x8_ib": (576, 8 * 18 + 34, 8 * (1296 + 72 + 72) + 576 + 576,
                          8 * (1296 * 4 + 72 * 180 + 72 * 32) + 1152 * 8,
                          {"nvlink": 18 * NVLINK5, "c2c": C2C, "network": NDR}, 288 * NDR),
    # the same racks and layout on RoCE: Ethernet NICs, links and switches, the same lane counts
    "gb200_nvl72_x8_roce": (576, 8 * 18 + 34, 8 * (1296 + 72 + 72) + 576 + 576,
                            8 * (1296 * 4 + 72 * 180 + 72 * 32) + 1152 * 8,
                            {"nvlink": 18 * NVLINK5, "c2c": C2C, "network": NDR}, 288 * NDR),
    "gb200_nvl72_x8_ib_2to1": (576, 8 * 18 + 26, 8 * (1296 + 72 + 72) + 576 + 288,
                               8 * (1296 * 4 + 72 * 180 + 72 * 32) + 864 * 8,
                               {"nvlink": 18 * NVLINK5, "c2c": C2C, "network": NDR}, 288 * NDR),
    "gb200_nvl72_x16_ib": (1152, 16 * 18 + 68, 16 * (1296 + 72 + 72) + 1152 + 1152,
                           16 * (1296 * 4 + 72 * 180 + 72 * 32) + 2304 * 8,
                           {"nvlink": 18 * NVLINK5, "c2c": C2C, "network": NDR}, 576 * NDR),
    "gb200_nvl72_x16_ib_2to1": (1152, 16 * 18 + 52, 16 * (1296 + 72 + 72) + 1152 + 576,
                                16 * (1296 * 4 + 72 * 180 + 72 * 32) + 1728 * 8,
                                {"nvlink": 18 * NVLINK5, "c2c": C2C, "network": NDR}, 576 * NDR),
    # 32 HGX nodes + 8 NICs each on PCIe, 256 NIC-to-leaf links + 8 leaves x 16 spines x 2 links
    "hopper_ib_su": (256, 32 * 4 + 8 + 16, 32 * (HGX_LINKS + 8) + 256 + 256,
                     32 * (HGX_PAIRS + 8 * 16 * 2) + 512 * 4 * 2,
                     {"nvlink": 18 * NVLINK4, "pcie": PCIE5_X16, "network": NDR},
                     128 * NDR),  # halves of 16 whole servers: 128 NICs' worth of network
    "pcie_server": (8, 0, 8 + 4, 12 * 16 * 2, {"pcie": PCIE5_X16}, 2 * PCIE5_X16),
    "teaching": (2, 0, 1, 4, {"nvlink": NVLINK4}, NVLINK4),
}


def test_every_shipped_topology_is_covered() -> None:
    assert {p.stem for p in TOPOLOGIES.glob("*.yaml")} == set(EXPECTED)


@pytest.fixture(scope="module")
def summaries() -> dict[str, dict]:
    return {name: describe(build_fabric(TOPOLOGIES / f"{name}.yaml")) for name in EXPECTED}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_counts_and_bandwidth(name: str, summaries: dict[str, dict]) -> None:
    gpus, switches, links, pairs, per_gpu, bisection = EXPECTED[name]
    s = summaries[name]
    assert (s["gpus"], s["switch_chips"], s["links"], s["lane_pairs"]) == (gpus, switches, links, pairs)
    assert set(s["per_gpu_GBps"]) == set(per_gpu)
    for fabric, gbps in per_gpu.items():
        assert s["per_gpu_GBps"][fabric]["per_direction"] == pytest.approx(gbps, rel=1e-6)
        assert s["per_gpu_GBps"][fabric]["bidirectional"] == pytest.approx(2 * gbps, rel=1e-6)
    assert s["bisection_GBps"]["per_direction"] == pytest.approx(bisection, rel=1e-6)
    assert s["bisection_GBps"]["bidirectional"] == pytest.approx(2 * bisection, rel=1e-6)
    assert s["power_W"]["total"] == pytest.approx(sum(v for k, v in s["power_W"].items() if k != "total"))


def test_issue_headline_figures(summaries: dict[str, dict]) -> None:
    nvl = summaries["gb200_nvl72"]
    assert (nvl["gpus"], nvl["switch_chips"], nvl["links"], nvl["lane_pairs"]) == (72, 18, 1296, 5184)
    assert nvl["per_gpu_GBps"]["nvlink"]["per_direction"] == pytest.approx(900)
    assert summaries["hgx_h100"]["per_gpu_GBps"]["nvlink"]["per_direction"] == pytest.approx(450)
    assert summaries["dgx_a100"]["per_gpu_GBps"]["nvlink"]["per_direction"] == pytest.approx(300)


def test_switch_power_is_chip_count_times_part_power(summaries: dict[str, dict]) -> None:
    catalog = load_catalog()
    nvl = summaries["gb200_nvl72"]["power_W"]
    assert nvl["switch_chip"] == pytest.approx(18 * catalog.device("nvswitch4").static_power_W)
    rack = summaries["hopper_ib_rack"]["power_W"]
    assert rack["nic"] == pytest.approx(72 * catalog.device("cx7").static_power_W)
    assert rack["switch_chip"] == pytest.approx(36 * catalog.device("nvswitch3").static_power_W
                                                 + 11 * catalog.device("ib_switch_ndr").static_power_W)
    retimer = catalog.retimer("pcie5_retimer").power_W
    assert summaries["pcie_server"]["power_W"]["retimer"] == pytest.approx(12 * retimer)


def test_optical_spine_costs_the_published_twenty_kilowatts(summaries: dict[str, dict]) -> None:
    """GTC 2024: optics for the NVL72 spine "would have cost ... 20 kilowatts of just transceivers"."""
    copper, optical = summaries["gb200_nvl72"], summaries["gb200_nvl72_optical"]
    assert copper["cables"] == {"copper_passive": 1296} and optical["cables"] == {"optical": 1296}
    assert copper["power_W"].get("passive_copper", 0.0) < 100
    assert 15_000 < optical["power_W"]["optics"] < 25_000
    assert optical["power_W"]["switch_chip"] == copper["power_W"]["switch_chip"]


def test_hopper_rack_optics_on_every_network_link(summaries: dict[str, dict]) -> None:
    s = summaries["hopper_ib_rack"]
    assert s["cables"] == {"optical": 72 + 72}
    assert s["devices"]["cx7"] == 72 and s["devices"]["ib_switch_ndr"] == 11


def test_teaching_warns_about_idle_nvlink_ports(summaries: dict[str, dict]) -> None:
    assert any("1 of 18" in w for w in summaries["teaching"]["warnings"])
    assert summaries["gb200_nvl72"]["warnings"] == []


def test_static_and_dynamic_energy_share_one_component_vocabulary() -> None:
    from simulator.topology.builder import COMPONENT_KINDS

    for name in ("hopper_ib_rack", "gb200_nvl72_optical", "pcie_server"):
        fabric = build_fabric(str(TOPOLOGIES / f"{name}.yaml"))
        dynamic = {k for ch in fabric.channels for k in ch.energy_pJ_per_bit}
        assert set(fabric.static_power_W) <= set(COMPONENT_KINDS), name
        assert dynamic <= set(COMPONENT_KINDS), name
    rack = build_fabric(str(TOPOLOGIES / "hopper_ib_rack.yaml"))
    nic_link = next(ch for ch in rack.channels if rack.nodes[ch.src].kind == "nic")
    assert "nic" in nic_link.energy_pJ_per_bit and "nic" in rack.static_power_W  # addable per component
