"""Attention workloads: ring attention overlap, KV transfers, and simulated vs analytic time (decode and
prefill steps: tests/test_kernel_model.py)."""

import pytest

from simulator.engine.flow import run_flow
from simulator.topology.fabric import Channel, Fabric, Node
from simulator.topology.synthetic import default_credit, star
from simulator.workloads.attention import GpuRoofline, ModelShape, decode_step, kv_transfer, prefill, ring_attention
from simulator.workloads.copies import build_copy

H100 = GpuRoofline("h100", hbm_Bps=3.35e12, bf16_flops=989e12, fp8_flops=1979e12, sms=132)  # datasheet
LLAMA70B = dict(layers=4, hidden=8192, heads=64, kv_heads=8, head_dim=128, ffn_hidden=28672)


# decode and prefill steps are costed by the kernel model: tests/test_kernel_model.py


def test_ring_attention_hides_kv_rotation_behind_compute():
    f = star(4, rate_Bps=450e9)
    m = ModelShape(batch=1, context=131072, **LLAMA70B)
    run = ring_attention(f, f.gpus, H100, m, layers=1)
    assert run.figures["overlapped"]
    assert run_flow(f, run.workload).makespan_s == pytest.approx(run.figures["ideal_time_s"], rel=0.02)
    slow = star(4, rate_Bps=1e9)
    run = ring_attention(slow, slow.gpus, H100, m, layers=1)
    assert not run.figures["overlapped"]
    assert run_flow(slow, run.workload).makespan_s > 4 * run.figures["step_compute_s"] * 1.5


def _pcie_box(rate_Bps=32e9):
    """host - pcie switch - gpu0, gpu1 (all PCIe), plus an NVLink between the GPUs."""
    nodes = [Node("host", "host", "cpu"), Node("psw", "pcie_switch", "sw"),
             Node("gpu0", "gpu", "g", rank=0), Node("gpu1", "gpu", "g", rank=1)]
    links = [("host", "psw", "pcie", rate_Bps), ("psw", "gpu0", "pcie", rate_Bps),
             ("psw", "gpu1", "pcie", rate_Bps), ("gpu0", "gpu1", "nvlink", 10 * rate_Bps)]
    chans = []
    for link, (a, b, kind, rate) in enumerate(links):
        for s, d in ((a, b), (b, a)):
            chans.append(Channel(len(chans), link, s, d, kind, kind, 16, rate, rate, 1e-7, default_credit()))
    return Fabric.from_parts("pcie-box", nodes, chans)


def test_h2d_shares_the_host_uplink_and_kv_over_nvlink_beats_pcie():
    f = _pcie_box()
    one = run_flow(f, build_copy(f, "h2d", ["gpu0"], 1 << 30)).makespan_s
    two = run_flow(f, build_copy(f, "h2d", ["gpu0", "gpu1"], 1 << 30)).makespan_s
    assert two == pytest.approx(2 * one, rel=0.01)
    assert run_flow(f, build_copy(f, "d2h", ["gpu1"], 1 << 30)).makespan_s == pytest.approx(one, rel=0.01)
    m = ModelShape(batch=1, context=1024, **LLAMA70B)
    kv = kv_transfer(f, "gpu0", "gpu1", m)
    assert kv.figures["total_bytes"] == 4 * 64 * 16 * 2 * 8 * 128 * 2
    assert kv.figures["link_kinds"] == ["nvlink"]
    assert run_flow(f, kv.workload).makespan_s == pytest.approx(kv.figures["ideal_time_s"], rel=0.01)
    blocks = kv_transfer(f, "gpu0", "gpu1", m, per_block=True)
    assert len(blocks.workload.transfers) > len(kv.workload.transfers)
    assert blocks.workload.total_bytes == kv.workload.total_bytes
    assert run_flow(f, blocks.workload).makespan_s == pytest.approx(run_flow(f, kv.workload).makespan_s, rel=1e-6)
