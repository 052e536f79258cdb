"""The kernel model (hardware/kernels.py) against the H200 microbenchmarks that feed it (shared
datasheet, "Measured on one real H200") and against closed forms; decode and prefill steps built on it."""

import math

import pytest

from simulator.engine.flow import run_flow
from simulator.errors import InputError
from simulator.hardware.catalog import load_catalog
from simulator.hardware.kernels import flash_decoding_splits, kernel_model, load_kernel_table
from simulator.topology.synthetic import star
from simulator.workloads.attention import ModelShape, decode_step, prefill
from simulator.workloads.attention.layer import step_cost

H200 = kernel_model("h200", load_catalog().device("h200").gpu)
LLAMA70B = dict(layers=4, hidden=8192, heads=64, kv_heads=8, head_dim=128, ffn_hidden=28672, vocab=128256)

# datasheet: HBM bandwidth of one streaming copy kernel against its CTA count (GB/s)
STREAM = {1: 62, 2: 121, 4: 238, 8: 461, 16: 866, 33: 1599, 66: 2644, 132: 3501, 264: 3765,
          528: 3775, 1056: 3800, 2112: 3820}


@pytest.mark.parametrize("ctas,measured", sorted(STREAM.items()))
def test_stream_bandwidth_against_cta_count_within_5_percent(ctas, measured):
    assert H200.hbm_Bps(ctas, "stream") / 1e9 == pytest.approx(measured, rel=0.05)


def test_few_ctas_are_bound_by_littles_law_not_by_a_share_of_the_peak():
    # by Little's law n CTAs draw n x the per-CTA rate until HBM saturates, and one CTA per SM is not enough
    per_cta = H200.arch.cta_Bps
    assert H200.hbm_Bps(1, "stream") == pytest.approx(per_cta, rel=0.01)
    assert H200.hbm_Bps(4, "stream") == pytest.approx(4 * per_cta, rel=0.02)
    assert H200.hbm_Bps(132, "stream") < 0.75 * H200.spec.hbm_Bps  # one CTA per SM does not saturate
    small = H200.memory("k", 64e6, 8, "stream")
    assert small.bound == "CTA concurrency"
    assert H200.memory("k", 64e6, 2112, "stream").bound == "HBM"


def test_fixed_cost_of_a_kernel_in_a_graph_and_eager():
    # datasheet: back-to-back tiny kernels in one CUDA graph 0.9 us each (one significant digit)
    assert H200.kernel_s == pytest.approx(0.9e-6, abs=0.05e-6)
    # a kernel that touches memory lasts at least one round trip more (the H200 run: 1.4-1.6 us at 16-256 KiB)
    tiny = H200.elementwise("add", 6, "elementwise")
    assert tiny.time_s == pytest.approx(H200.kernel_s + H200.arch.class_latency_s["elementwise"])
    assert 1.35e-6 < tiny.time_s < 1.65e-6 and tiny.bound == "fixed cost"
    eager = kernel_model("h200", load_catalog().device("h200").gpu, launch="eager")
    assert eager.elementwise("add", 6).time_s == pytest.approx(eager.arch.eager_kernel_s
                                                               + eager.arch.class_latency_s["elementwise"])
    with pytest.raises(InputError):
        kernel_model("h200", load_catalog().device("h200").gpu, launch="lazy")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind,touches,TBps", [("elementwise", 3, 4.36), ("activation", 2, 3.12),
                                                ("reduction", 1, 2.69), ("norm", 2, 2.70), ("copy", 2, 4.21),
                                                ("softmax", 2, 1.07)])
def test_elementwise_classes_at_256_MiB(kind, touches, TBps):
    # datasheet rates (bytes read + written over time); sum, norms and softmax over rows of 8192
    nbytes = touches * 256 * 2**20
    rows = 256 * 2**20 // 2 // 8192 if kind in ("reduction", "norm", "softmax") else None
    k = H200.elementwise(kind, nbytes, kind, rows=rows, row=8192 if rows else 0)
    assert nbytes / k.time_s / 1e12 == pytest.approx(TBps, rel=0.05)


@pytest.mark.parametrize("row,measured_us", [(4096, 4.72), (8192, 7.67)])
def test_a_one_row_norm_lasts_in_proportion_to_its_row(row, measured_us):
    # the H200 run: RMSNorm over 1-64 rows takes as long as over one (one CTA per row, each walking its
    # row in dependent steps); 8,192 wide takes 1.6x as long as 4,096
    one = H200.elementwise("rmsnorm", 2 * 2 * row, "norm", rows=1, row=row)
    many = H200.elementwise("rmsnorm", 64 * 2 * 2 * row, "norm", rows=64, row=row)
    assert one.time_s == pytest.approx(measured_us * 1e-6, rel=0.05)
    assert many.time_s == pytest.approx(one.time_s, rel=0.05)
    latency = H200.arch.class_latency_s["norm"] + row * H200.arch.row_latency_s["norm"]
    assert one.time_s == pytest.approx(H200.kernel_s + latency)


def test_elementwise_at_1_MiB_is_dominated_by_its_fixed_cost():
    # datasheet: at a 1 MiB tensor the same kernels take 1.6-8.5 us
    add = H200.elementwise("add", 3 * 2**20, "elementwise")
    assert 1.6e-6 * 0.95 <= add.time_s <= 8.5e-6
    assert add.fixed_s / add.time_s > 0.5


@pytest.mark.parametrize("n,tflops", [(1024, 377), (2048, 707), (8192, 686), (16384, 703)])
def test_square_gemm_rates(n, tflops):
    # datasheet rates; 1024^3 is 64 tiles, under 85% of the SMs: split K in two, plus the reduce kernel
    k = H200.gemm("g", n, n, n)
    assert k.flops / k.time_s / 1e12 == pytest.approx(tflops, rel=0.1)
    assert k.kernels == (2 if n == 1024 else 1)


def test_gemm_wave_quantization_and_power_cap():
    # 12 x 11 = 132 tiles fill one wave (held to the power-capped rate); 133 tiles need a second wave
    one = H200.gemm("g", 128 * 12, 128 * 11, 8192)
    two = H200.gemm("g", 128 * 7, 128 * 19, 8192)
    assert one.kernels == two.kernels == 1  # whole waves: no split
    assert one.bound in ("power cap", "tensor cores") and two.bound == "tensor cores"
    per_sm = H200.spec.bf16_flops * H200.arch.tensor_efficiency / 132
    assert two.time_s - two.fixed_s == pytest.approx(2 * 2 * 128 * 128 * 8192 / per_sm, rel=1e-9)
    assert two.time_s - two.fixed_s > 1.5 * (one.time_s - one.fixed_s)
    big = H200.gemm("g", 8192, 8192, 8192)  # 4,096 tiles in 32 waves, at the power-capped rate at most
    t_power = 2 * 8192**3 / (H200.spec.bf16_flops * H200.arch.tensor_sustained_efficiency)
    t_tiles = 32 * 2 * 128 * 128 * 8192 / (H200.spec.bf16_flops * H200.arch.tensor_efficiency / 132)
    assert big.time_s - big.fixed_s == pytest.approx(max(t_power, t_tiles))


def test_skinny_gemm_streams_its_weights():
    # decode: M = 1 reads the whole weight matrix once; time ~ bytes / achieved HBM rate
    k = H200.gemm("gate_up", 1, 7168, 8192)
    assert k.bound in ("HBM", "CTA concurrency")
    assert k.bytes == pytest.approx(7168 * 8192 * 2, rel=0.01)
    assert 2.5e12 < k.achieved_Bps < H200.spec.hbm_Bps


def test_flash_decoding_split_heuristic_as_in_flashattention():
    # flash_api.cpp comment: batch*heads = 48 on 108 SMs -> 2 splits (efficiency 0.89) beats 3 (0.67)
    assert flash_decoding_splits(48, 108, 64) == 2
    assert flash_decoding_splits(100, 108, 64) == 1  # >= 0.8 x SMs: no split
    assert flash_decoding_splits(1, 264, 64) == 64  # one CTA: as many splits as KV blocks allow


def test_decode_attention_split_kv_beats_plain_at_batch_1():
    plain = H200.decode_attention(1, 8, 1, 65536, 128, split=False)
    split = H200.decode_attention(1, 8, 1, 65536, 128, split=True)
    # plain FlashAttention: one CTA (the 8 query heads of the KV group are rows of one 128-row tile)
    # walks all 1,024 key blocks of 64 on one SM: tensor work of the padded tile, after its prologue
    assert plain.ctas == 1 and plain.bound == "tensor cores"
    block = 128 * 64 * 128 * 4 / (H200.spec.bf16_flops * H200.arch.flash_attention_efficiency / 132)
    assert plain.time_s == pytest.approx(H200.kernel_s + H200.arch.attention_cta_latency_s + 1024 * block)
    assert split.kernels == 2  # split kernel + combine
    assert plain.time_s / split.time_s > 10  # the Flash-Decoding blog: 2,300 us -> 64 us at 64k on A100


def test_split_kv_decode_pays_its_latency_and_the_combine_loop_per_split():
    # one KV block per CTA: the H200 run's time grows by one combine step (an L2 round trip) per split
    a, b = H200.decode_attention(1, 1, 1, 4096, 128), H200.decode_attention(1, 1, 1, 16384, 128)
    assert (a.ctas, b.ctas) == (32, 128)
    step = H200.arch.combine_split_s
    assert b.time_s - a.time_s == pytest.approx(96 * step + (b.bytes - a.bytes) / H200.hbm_Bps(128, "attention"),
                                                rel=0.3)
    assert a.time_s == pytest.approx(13.72e-6, rel=0.1) and b.time_s == pytest.approx(32.12e-6, rel=0.1)


def test_prefill_attention_runs_at_flash_attention_efficiency_on_full_waves():
    # non-causal, 8,192 CTAs of equal work: whole waves at the FlashAttention rate
    k = H200.prefill_attention(1, 64, 8, 16384, 16384, 128, causal=False)
    ctas = 64 * 16384 // 128
    per_cta = H200.arch.attention_cta_latency_s + 256 * 128 * 64 * 128 * 4 / (
        H200.spec.bf16_flops * H200.arch.flash_attention_efficiency / 132)
    assert k.time_s - k.fixed_s == pytest.approx(math.ceil(ctas / 132) * per_cta)
    causal = H200.prefill_attention(1, 64, 8, 16384, 16384, 128)
    assert causal.flops == pytest.approx(4 * 64 * 128 * (16384 * 16385 / 2))  # each query sees its prefix
    assert causal.time_s == pytest.approx(k.time_s / 2, rel=0.03)


def test_causal_prefill_with_fewer_ctas_than_sms_lasts_its_longest_cta():
    # 8 heads x 8 query blocks = 64 CTAs on 132 SMs: the last query block reads all 16 key blocks
    k = H200.prefill_attention(1, 8, 8, 1024, 1024, 128)
    block = 128 * 64 * 128 * 4 / (H200.spec.bf16_flops * H200.arch.flash_attention_efficiency / 132)
    assert k.time_s == pytest.approx(H200.kernel_s + H200.arch.attention_cta_latency_s + 16 * block)
    assert k.time_s == pytest.approx(28.37e-6, rel=0.1)  # the H200 run


def test_decode_step_time_is_the_kernel_sum_plus_all_reduces():
    f = star(8, rate_Bps=450e9, latency_s=100e-9)
    m = ModelShape(batch=1, context=8192, tp=8, **LLAMA70B)
    run = decode_step(f, f.gpus, H200, m)
    fig = run.figures
    step = step_cost(H200, m, "decode")
    assert fig["compute_s"] == pytest.approx(step.compute_s)
    # the reference PyTorch layer: 2 norms, 4 GEMMs (QKV and gate+up split K: + 2 reduce kernels), 10 rotary,
    # 2 cache writes, attention's split and combine, 2 residual adds, SiLU and mul
    assert fig["kernels_per_layer"] == 2 + 4 + 2 + 10 + 2 + 2 + 2 + 2
    assert fig["layer_kernels"] == "pytorch"
    fused = decode_step(f, f.gpus, H200, m, stack="fused").figures
    assert fused["kernels_per_layer"] == 2 + 4 + 2 + 3 + 2  # fused norms, rotary, cache write, SiLU*mul
    assert fused["layer_compute_s"] < fig["layer_compute_s"]
    assert fig["allreduces_per_step"] == 2 * 4 + 1  # two per layer and the embedding's
    assert run_flow(f, run.workload).makespan_s == pytest.approx(fig["token_latency_s"], rel=0.05)
    # the GEMMs read every weight once: time >= weight bytes / HBM peak
    weights = m.weight_params_per_gpu_layer() * 2
    assert fig["gemm_per_layer_s"] > weights / H200.spec.hbm_Bps
    assert sum(fig["power_state_s"].values()) == pytest.approx(fig["compute_s"])


def test_missing_mlp_or_vocab_changes_the_step():
    f = star(8, rate_Bps=450e9)
    full = decode_step(f, f.gpus, H200, ModelShape(batch=1, context=4096, tp=8, **LLAMA70B)).figures
    no_mlp = dict(LLAMA70B, ffn_hidden=0)
    bare = decode_step(f, f.gpus, H200, ModelShape(batch=1, context=4096, tp=8, **no_mlp)).figures
    assert full["gemm_per_layer_s"] > 4 * bare["gemm_per_layer_s"]  # the MLP holds 4/5 of the weights


def test_prefill_is_tensor_bound_and_slower_than_a_bare_roofline():
    f = star(8, rate_Bps=450e9)
    m = ModelShape(batch=1, context=4096, tp=8, **LLAMA70B)
    run = prefill(f, f.gpus, H200, m)
    fig = run.figures
    assert fig["attention_bound"] == "tensor cores"
    assert fig["step_bound"] in ("power cap", "tensor cores")
    flops = 2 * 4096 * m.weight_params_per_gpu_layer()
    assert fig["gemm_per_layer_s"] > flops / H200.spec.bf16_flops / H200.arch.tensor_sustained_efficiency
    assert run_flow(f, run.workload).makespan_s == pytest.approx(fig["latency_s"], rel=0.05)


def test_calibration_override_replaces_fields_and_bad_files_fail_at_their_line(tmp_path):
    good = tmp_path / "cal.yaml"
    good.write_text("calibration: {gpu: NVIDIA H200}\nkernels:\n  hopper:\n    cta_Bps: 30 GB/s\n"
                    "    sources: {cta_Bps: 'measured, NVIDIA H200, 2026-12-02, fabricsim calibrate'}\n")
    table = load_kernel_table((str(good),))
    assert table.architecture("hopper").cta_Bps == 30e9
    assert table.architecture("hopper").graph_kernel_s == load_kernel_table().architecture("hopper").graph_kernel_s
    slow = kernel_model("h200", load_catalog().device("h200").gpu, overrides=[good])
    assert slow.hbm_Bps(1, "stream") == pytest.approx(30e9, rel=0.01)
    for text, line, field in [("kernels:\n  hopper:\n    hbm_efficiency: 1.7\n    sources: {hbm_efficiency: x}\n", 3,
                               "hbm_efficiency"),
                              ("kernels:\n  hopper:\n    cta_bps: 3 GB/s\n", 3, "cta_bps"),
                              ("kernels:\n  volta:\n    cta_Bps: 3 GB/s\n", 2, "volta"),
                              ("kernels:\n  hopper:\n    cta_Bps: 3 GB/s\n", 3, "cta_Bps")]:
        bad = tmp_path / f"bad{line}{field}.yaml"
        bad.write_text(text)
        with pytest.raises(InputError) as err:
            load_kernel_table((str(bad),))
        assert err.value.file == str(bad) and err.value.line == line and field in (err.value.field or "")


def test_a_layers_small_kernels_find_l2_cold():
    # the H200's switch bench: RMSNorm over 1 x 8192 takes 7.3 us replayed alone, 12.9 us right after a GEMV
    # streaming 117 MB (its round trips go to HBM); a layer's norms ran at 12 us in the per-kernel profiles
    m = ModelShape(batch=1, context=4096, tp=8, **LLAMA70B)
    norm = next(k for k in step_cost(H200, m, "decode").per_layer() if k.name == "rmsnorm")
    hot = H200.elementwise("rmsnorm", 2 * 2 * 8192, "norm", rows=1, row=8192)
    a = H200.arch
    latency = a.class_latency_s["norm"] + 8192 * a.row_latency_s["norm"]
    assert norm.time_s == pytest.approx(H200.kernel_s + a.l2_cold_latency_factor * latency)
    # (the fit's run measured the hot norm at 7.67 us, the switch run at 7.30: run-to-run spread ~5%)
    assert hot.time_s == pytest.approx(7.3e-6, rel=0.08) and norm.time_s == pytest.approx(12.9e-6, rel=0.1)


def test_calibrate_fits_the_cold_l2_factor_from_the_switch_bench():
    import json
    from pathlib import Path

    from simulator.calibrate.fit import fit

    root = Path(__file__).resolve().parent.parent / "benchmarks" / "calibrate_h200"
    doc = json.loads((root / "h200_microbench.json").read_text())
    switch = json.loads((root / "h200_switch.json").read_text())
    doc["records"] += [r for r in switch["records"] if r["bench"] == "switch"]
    cal = fit(doc)
    assert cal.values["l2_cold_latency_factor"] == pytest.approx(1.88, abs=0.03)
    assert "after a GEMV" in cal.sources["l2_cold_latency_factor"]


@pytest.mark.parametrize("n,tflops", [(4096, 1348), (8192, 1278), (16384, 1131)])
def test_fp8_gemms_are_held_by_the_power_cap(n, tflops):
    # datasheet: torch._scaled_mm e4m3 on one H200; FP8 reaches a smaller fraction of its peak than bf16
    k = H200.gemm("g", n, n, n, "fp8")
    assert k.flops / k.time_s / 1e12 == pytest.approx(tflops, rel=0.12)
    assert k.bound == "power cap"
    assert H200.sustained_efficiency("fp8") < H200.sustained_efficiency("bf16")
