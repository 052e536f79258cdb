"""Devices: GPU figures and rooflines, switch ports and reduction, NIC and PCIe attachments."""

import pytest

from simulator.hardware.catalog import load_catalog
from simulator.units import GB

CAT = load_catalog()


@pytest.mark.parametrize("name, ridge", [("a100", 156), ("h100", 295), ("h200", 206), ("gb200", 312)])
def test_gpu_bf16_ridge_points(name, ridge):
    assert CAT.device(name).gpu.ridge_bf16_flop_per_B == pytest.approx(ridge, rel=0.01)


def test_gpu_specs():
    a100, h100, gb200 = (CAT.device(n).gpu for n in ("a100", "h100", "gb200"))
    assert a100.fp8_flops is None and a100.sms == 108 and a100.pcie == "pcie4"
    assert h100.sms == 132 and h100.fp8_flops == pytest.approx(2 * h100.bf16_flops, rel=0.01)
    assert gb200.hbm_bytes == pytest.approx(186 * GB) and gb200.nvlink == "nvlink5"
    for name in ("a100", "h100", "h200", "b200", "gb200"):
        dev = CAT.device(name)
        assert dev.kind == "gpu" and dev.ports["nvlink"] == dev.gpu.nvlinks
        assert dev.generations["nvlink"] == dev.gpu.nvlink


@pytest.mark.parametrize("name, ports, gen, reduction", [
    ("nvswitch2", 36, "nvlink3", False), ("nvswitch3", 64, "nvlink4", True),
    ("nvswitch4", 72, "nvlink5", True)])
def test_nvswitch_generations(name, ports, gen, reduction):
    sw = CAT.device(name)
    assert (sw.kind, sw.ports, sw.generations) == ("switch", {"nvlink": ports}, {"nvlink": gen})
    assert sw.reduction is reduction
    assert sw.latency_s > 0 and sw.static_power_W > 0
    assert "assumption" in sw.sources["latency_s"]


def test_nvl72_fits_its_switch_chips():
    """72 GPUs x 18 links, one to each of 18 chips: every chip uses exactly its 72 ports."""
    gpu, chip = CAT.device("gb200"), CAT.device("nvswitch4")
    assert 72 * gpu.ports["nvlink"] / 18 == chip.ports["nvlink"]
    # per-tray figure of the datasheet: 2 chips x 72 ports x 100 GB/s both directions = 14.4 TB/s
    assert 2 * chip.ports["nvlink"] * CAT.link("nvlink5").bidir_line_rate_Bps == pytest.approx(14.4e12)


def test_network_parts():
    ib, nic = CAT.device("ib_switch_ndr"), CAT.device("cx7")
    assert ib.ports == {"network": 64} and ib.generations["network"] == "ib_ndr"
    assert nic.kind == "nic" and nic.generations == {"network": "ib_ndr", "pcie": "pcie5"}
    # the NIC's PCIe Gen5 x16 side can feed its 400G port: 63 > 50 GB/s per direction
    assert CAT.link("pcie5", width=16).line_rate_Bps > CAT.link("ib_ndr").line_rate_Bps
    sw = CAT.device("pcie5_switch")
    assert sw.lanes["pcie"] == 144 and sw.lanes["pcie"] // 16 == 9
    assert CAT.device("host_cpu").kind == "host"
