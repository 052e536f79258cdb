"""Attention workloads: ring attention overlap, KV transfers, and simulated vs analytic time (decode and
prefill steps: tests/test_kernel_model.py)."""

import pytest

from simulator.engine.flow import run_flow
from simulator.topology.fabric import Channel, Fabric, Node
from simulator.topology.synthetic import default_credit, star
from simulator.hardware.catalog import load_catalog
from simulator.hardware.kernels import kernel_model
from simulator.workloads.attention import ModelShape, decode_step, kv_transfer, prefill, ring_attention
from simulator.workloads.attention.ring_attention import StepWork, step_compute_s, step_work
from simulator.workloads.copies import build_copy

H100 = kernel_model("h100", load_catalog().device("h100").gpu)
LLAMA70B = dict(layers=4, hidden=8192, heads=64, kv_heads=8, head_dim=128, ffn_hidden=28672)


# decode and prefill steps are costed by the kernel model: tests/test_kernel_model.py


def test_ring_attention_hides_kv_rotation_behind_compute():
    f = star(4, rate_Bps=450e9)
    m = ModelShape(batch=1, context=131072, **LLAMA70B)
    run = ring_attention(f, f.gpus, H100, m, layers=1)
    assert run.figures["overlapped"]
    assert run_flow(f, run.workload).makespan_s == pytest.approx(run.figures["ideal_time_s"], rel=0.02)
    slow = star(4, rate_Bps=0.2e9)
    run = ring_attention(slow, slow.gpus, H100, m, layers=1)
    assert not run.figures["overlapped"]
    assert run_flow(slow, run.workload).makespan_s > 4 * run.figures["step_compute_s"] * 1.5


@pytest.mark.parametrize("placement", ["contiguous", "zigzag"])
@pytest.mark.parametrize("P", [2, 3, 4, 8])
def test_the_causal_mask_halves_the_work_over_the_p_steps(P, placement):
    c = 1024  # tokens per chunk
    Tb = c * (2 if placement == "zigzag" else 1)  # tokens per GPU
    pairs = sum(step_work(placement, P, i, s, c).pairs for i in range(P) for s in range(P))
    assert pairs == P * P * Tb * Tb / 2  # the unmasked (query, key) pairs of a T x T causal matrix: T^2 / 2
    T = P * Tb
    assert pairs == pytest.approx(T * (T + 1) / 2, rel=1 / c)  # exact causal count, up to the diagonal tiles


def test_contiguous_placement_idles_gpu_i_on_p_minus_1_minus_i_steps():
    P, Tb = 8, 4096
    for i in range(P):
        works = [step_work("contiguous", P, i, s, Tb) for s in range(P)]
        assert works[0].pairs == Tb * Tb / 2  # the diagonal block, half
        assert [w.pairs for w in works[1:]] == [Tb * Tb] * i + [0.0] * (P - 1 - i)  # earlier blocks, then masked


def test_zigzag_gives_every_gpu_half_a_block_on_every_step():
    P, c = 8, 2048
    Tb = 2 * c
    for i in range(P):
        for s in range(P):
            w = step_work("zigzag", P, i, s, c)
            assert w.pairs == Tb * Tb / 2, (i, s)


def test_ring_attention_time_follows_the_busiest_gpu():
    P = 8
    f = star(P, rate_Bps=450e9)
    m = ModelShape(batch=1, context=131072, **LLAMA70B)
    runs = {p: ring_attention(f, f.gpus, H100, m, layers=1, placement=p) for p in ("contiguous", "zigzag")}
    plain, zig = runs["contiguous"].figures, runs["zigzag"].figures
    full = plain["full_block_compute_s"]
    # compute bound (16k x 16k blocks): the causal diagonal block costs about half a full one
    c = 16384
    diagonal = step_compute_s(H100, m, StepWork(c * c / 2, c, c, (True,), c))
    assert diagonal == pytest.approx(full / 2, rel=0.02)
    assert step_compute_s(H100, m, StepWork(0.0, 0, 0)) == 0.0
    merge = step_compute_s(H100, m, StepWork(c * c, c, c, (False,), c), merge=True) - full
    assert 0 < merge < 0.05 * full  # the online-softmax merge: an elementwise pass over O (and its lse)
    # contiguous: GPU i computes i full blocks and the diagonal per layer (and i merges)
    expect = [diagonal + i * (full + merge) for i in range(P)]
    assert plain["gpu_compute_per_layer_s"] == pytest.approx(expect, rel=1e-9)
    assert plain["idle_steps_per_layer"] == [P - 1 - i for i in range(P)]
    assert plain["load_imbalance"] == pytest.approx((P - 0.5) / (P / 2), rel=0.02)
    # zigzag: every GPU about P / 2 blocks per layer; only the merges differ (a GPU merges the query
    # chunks it computed: both when the block is earlier than its first chunk, one otherwise)
    zig_per_gpu = zig["gpu_compute_per_layer_s"]
    assert max(zig_per_gpu) == pytest.approx(min(zig_per_gpu), rel=0.03)
    # two chunk x chunk tiles per step are half a block's pairs, a little slower than half a block
    # (twice the CTAs' prologues per pair, and the diagonal tiles' partial key blocks)
    assert P / 2 * full < zig_per_gpu[0] < 1.08 * P / 2 * full
    assert zig["load_imbalance"] == pytest.approx(1.0, abs=0.02) and zig["idle_steps_per_layer"] == [0] * P
    for fig in (plain, zig):
        assert fig["causal_work_fraction"] == 0.5
        assert fig["overlapped"]
        assert fig["ideal_time_s"] == pytest.approx(P * fig["step_compute_s"], rel=0.03)  # ~ the busiest GPU's sum
    assert plain["ideal_time_s"] / zig["ideal_time_s"] == pytest.approx((2 * P - 1) / P, rel=0.05)
    for p, run in runs.items():
        assert run_flow(f, run.workload).makespan_s == pytest.approx(run.figures["ideal_time_s"], rel=0.01), p
        assert run.figures["simplifications"][0].startswith(f"{p} placement")


def test_ring_attention_states_its_simplifications():
    f = star(4, rate_Bps=450e9)
    m = ModelShape(batch=1, context=4096, **LLAMA70B)
    notes = ring_attention(f, f.gpus, H100, m, layers=1).figures["simplifications"]
    assert notes[0].startswith("contiguous placement: the causal mask leaves GPU i idle")
    assert any(n.startswith("attention only") for n in notes)
    assert any("kernel model" in n for n in notes)


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
