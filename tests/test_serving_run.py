"""Serving end to end (issue 25): closed forms through the real cost model, on real topologies.

- An iteration's time is the makespan of the DAG of its kernels and all-reduces on the engine.
- At vanishing load TTFT is one prefill iteration and TPOT one decode iteration.
- At saturation throughput is max_num_seqs over the decode iteration time.
- Little's law holds; every request finishes exactly once; KV use stays within capacity, also
  under preemption; the same seed gives the same outcome.
- Disaggregated: a request's TTFT holds its prefill, its KV transfer (at least the last layer's)
  and one decode iteration; NVLink moves KV faster than InfiniBand.
- MoE: the experts a batch wakes up, the all-to-alls of expert parallelism.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from simulator.engine.dispatch import simulate
from simulator.runner.fabrics import load_fabric
from simulator.runner.gpu_kernels import gpu_kernels
from simulator.runner.serve import ServeRequest, build_pools, plan_serve, run_serve
from simulator.workloads.attention.moe import active_experts, moe_mlp
from simulator.workloads.collectives import build_collective
from simulator.workloads.compose import transformer_layers
from simulator.workloads.serving.iteration import (Collectives, IterationModel, SizeCurve, doubling_sizes,
                                                   single_shape)
from simulator.workloads.serving.scenario import ServedModelSpec

ROOT = Path(__file__).resolve().parents[1]


def scenario(tmp_path: Path, body: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_an_iteration_is_the_makespan_of_its_kernels_and_all_reduces_on_the_engine():
    fabric = load_fabric("hgx_h100")
    gpus = fabric.gpus[:2]
    gk = gpu_kernels(fabric, gpus[0])
    m = ServedModelSpec.model_validate("llama-3-8b").shape(2)
    tokens = 256  # 256 x 4096 x 2 B = 2 MiB: a size the curve simulated, so no interpolation
    rows = tokens * m.hidden * m.dtype_bytes
    sizes = doubling_sizes(m.hidden * 2, 8192 * m.hidden * 2)
    assert rows in sizes
    times = [simulate(fabric, build_collective(fabric, gpus, "all_reduce", n, "auto", "auto",
                                               kernel_fixed_s=gk.kernel_s), engine="flow").makespan_s for n in sizes]
    model = IterationModel(gk, m, Collectives(all_reduce=SizeCurve(sizes, tuple(times))), 256)
    shape = single_shape(decode_seqs=tokens, decode_context=1000)
    kernels = model.kernels(shape)
    per_layer = [k for k, n in kernels if n == m.layers]
    split = next(i for i, k in enumerate(per_layer) if k.name == "add+rmsnorm" and i > 0)
    attn_s, mlp_s = sum(k.time_s for k in per_layer[:split]), sum(k.time_s for k in per_layer[split:])
    ends = [k for k, n in kernels if n == 1]
    embed_s = ends[0].time_s
    head_s = sum(k.time_s for k in ends[1:])
    ar = build_collective(fabric, gpus, "all_reduce", rows, "auto", "auto", kernel_fixed_s=gk.kernel_s)
    dag = transformer_layers(gpus, m.layers, attn_s, mlp_s, ar, embed_s=embed_s, head_s=head_s)
    makespan = simulate(fabric, dag.workload("iteration", {"op": "decode_step", "n": 2, "bytes": 0}),
                        engine="flow").makespan_s
    cost = model.cost(shape)
    # the cached assembly of the cost is the sum over its kernels
    assert cost.compute_s == pytest.approx(sum(k.time_s * n for k, n in kernels), rel=1e-12)
    assert cost.collectives == 2 * m.layers + 1
    assert cost.time_s == pytest.approx(makespan, rel=1e-6)


LOW_LOAD = """\
    name: one request at a time
    topologies: [{topology}]
    model: llama-3-8b
    load:
      rates: [0.01]
      requests: 6
      prompt_tokens: {{fixed: 1000}}
      output_tokens: {{fixed: 20}}
    deployments:
      - {{name: one TP{tp}, tp: {tp}, instances: 1}}
"""


@pytest.mark.parametrize("topology, tp", [("hgx_h100", 2), ("gb200_nvl72", 4)])
def test_at_vanishing_load_ttft_is_one_prefill_and_tpot_one_decode_iteration(tmp_path, topology, tp):
    path = scenario(tmp_path, LOW_LOAD.format(topology=topology, tp=tp))
    planned = plan_serve(ServeRequest(str(path)))
    out = run_serve(planned)
    (row,) = out.rows
    (_, pool), = build_pools(planned.fabrics[0], planned.scenario, planned.deployments[0])
    model = pool.pool.model
    prefill_s = model.iteration_s(single_shape(prompt_tokens=1000))
    decode_s = model.iteration_s(single_shape(decode_seqs=1, decode_context=1001))  # 1001..1019: one bucket
    ttft, tpot = out.latencies[0]["ttft_s"], out.latencies[0]["tpot_s"]
    assert np.allclose(ttft, prefill_s, rtol=1e-12)
    assert np.allclose(tpot, decode_s, rtol=1e-12)
    assert row["ttft_p50_ms"] == pytest.approx(prefill_s * 1e3)
    # the end-to-end latency: one prefill and 19 decodes
    assert np.allclose(out.latencies[0]["latency_s"], prefill_s + 19 * decode_s, rtol=1e-12)
    assert row["preemptions"] == 0 and row["requests"] == 6


SATURATED = """\
    name: saturated
    topologies: [hgx_h100]
    model: llama-3-8b
    load:
      rates: [40]
      requests: 800
      prompt_tokens: {fixed: 16}
      output_tokens: {fixed: 300}
    deployments:
      - {name: one GPU, tp: 1, instances: 1, max_num_seqs: 8, max_num_batched_tokens: 2048}
"""


def test_at_saturation_throughput_is_the_batch_limit_over_the_decode_iteration(tmp_path):
    planned = plan_serve(ServeRequest(str(scenario(tmp_path, SATURATED))))
    (row,) = run_serve(planned).rows
    (_, pool), = build_pools(planned.fabrics[0], planned.scenario, planned.deployments[0])
    model = pool.pool.model
    # contexts run 17..316: the mean decode iteration over the buckets they pass through
    decode_s = np.mean([model.iteration_s(single_shape(decode_seqs=8, decode_context=c)) for c in range(17, 316)])
    closed = 8 / decode_s
    # arrivals (40/s) far outrun the engine (~1 request/s) for the whole 20 s window: 8 sequences
    # decode in every iteration but the prefills (a new one joins as one finishes: 16 tokens)
    assert row["window_s"] == pytest.approx(20, rel=0.1)
    assert row["output_tok_per_s"] == pytest.approx(closed, rel=0.02)
    assert row["output_tok_per_s"] < closed


MODERATE = """\
    name: moderate
    topologies: [hgx_h100]
    model: llama-3-8b
    seed: {seed}
    load:
      arrival: poisson
      rates: [4]
      duration: 600 s
      prompt_tokens: {{lognormal: {{mean: 800, sigma: 0.5}}}}
      output_tokens: {{lognormal: {{mean: 150, sigma: 0.5}}}}
    slo: {{ttft: 500 ms, tpot: 40 ms}}
    deployments:
      - {{name: two TP1, tp: 1, instances: 2}}
      - {{name: TP2, tp: 2, instances: 1, gpu_memory_utilization: 0.3}}
"""


def test_littles_law_exactly_once_and_the_same_seed(tmp_path):
    path = scenario(tmp_path, MODERATE.format(seed=3))
    out = run_serve(ServeRequest(str(path)))
    for row, lat in zip(out.rows, out.latencies):
        # Little: mean requests in system = arrival rate x mean time in system (statistical: 2400 requests)
        assert row["mean_in_system"] == pytest.approx(4 * float(np.mean(lat["latency_s"])), rel=0.05)
        assert row["requests"] == len(lat["latency_s"]) == pytest.approx(2400, rel=0.1)
        assert 0 < row["peak_kv_fraction"] <= 1
    again = run_serve(ServeRequest(str(path)))
    assert again.to_dict() == out.to_dict()
    other = run_serve(ServeRequest(str(path), seed=4))
    assert other.rows[0]["ttft_p50_ms"] != out.rows[0]["ttft_p50_ms"]


PREEMPTING = """\
    name: tight KV
    topologies: [hgx_h100]
    model: llama-3-8b
    load:
      rates: [50]
      requests: 300
      prompt_tokens: {fixed: 3000}
      output_tokens: {fixed: 400}
    deployments:
      - {name: small cache, tp: 1, instances: 1, gpu_memory_utilization: 0.27}
      - {name: swapped, tp: 1, instances: 1, gpu_memory_utilization: 0.27, preemption: swap}
"""


def test_under_preemption_kv_stays_within_capacity_and_every_request_finishes_once(tmp_path):
    planned = plan_serve(ServeRequest(str(scenario(tmp_path, PREEMPTING))))
    out = run_serve(planned)
    recompute, swap = out.rows
    (_, pool), = build_pools(planned.fabrics[0], planned.scenario, planned.deployments[0])
    capacity = pool.pool.capacity
    assert capacity.tokens < 300 * 3400  # the cache cannot hold every request at once
    least = 300 * (3000 + 400 - 1)  # every token fed once (the last sampled one never)
    for row, lat in zip(out.rows, out.latencies):
        assert row["preemptions"] > 0
        assert row["peak_kv_fraction"] <= 1
        assert row["requests"] == 300 and len(lat["ttft_s"]) == 300
        assert row["output_tokens"] == 300 * 400
    # recompute feeds a preempted request's tokens again; swap copies them out and back over PCIe
    # and feeds one token per resumption of a decoding request
    assert recompute["computed_tokens"] > swap["computed_tokens"] >= least
    assert swap["computed_tokens"] <= least + swap["preemptions"]


DISAGG = """\
    name: disaggregated
    topologies: [{topology}]
    model: llama-3-70b
    load:
      rates: [0.01]
      requests: 4
      prompt_tokens: {{fixed: 4000}}
      output_tokens: {{fixed: 10}}
    deployments:
      - name: 1P+1D
        prefill: {{tp: 8, instances: 1}}
        decode: {{tp: 8, instances: 1}}
"""


def test_disaggregated_ttft_is_prefill_then_kv_transfer_then_a_decode_iteration(tmp_path):
    shares = {}
    for topology in ("gb200_nvl72", "hopper_ib_rack"):
        planned = plan_serve(ServeRequest(str(scenario(tmp_path, DISAGG.format(topology=topology), f"{topology}.yaml"))))
        out = run_serve(planned)
        (row,) = out.rows
        (_, p), (_, d) = build_pools(planned.fabrics[0], planned.scenario, planned.deployments[0])
        prefill_s = p.pool.model.iteration_s(single_shape(prompt_tokens=4000))
        # the decode instance computes the last prompt token over 3999 tokens of remote KV
        from simulator.workloads.serving.scheduler import BatchShape

        first_s = d.pool.model.iteration_s(BatchShape(0, (), 1, 1, 4096))
        m = d.pool.model.model
        kv_bytes = 4000 * m.layers * m.kv_bytes_per_token_layer() * 8
        assert row["kv_bytes_per_request"] == kv_bytes
        exposed = row["kv_transfer_exposed_mean_ms"] / 1e3
        assert np.allclose(out.latencies[0]["ttft_s"], prefill_s + exposed + first_s, rtol=1e-9)
        assert exposed > 0
        shares[topology] = row["kv_share_of_ttft"]
        # the KV caches cross NVLink inside the rack, the NICs between HGX nodes
        assert row["busiest_link_kv"].startswith("nvlink5" if topology == "gb200_nvl72" else "ib_"), row
    # 2.6 GB of KV: NVLink inside the rack against eight 400G NICs between HGX nodes
    assert shares["gb200_nvl72"] < shares["hopper_ib_rack"]


def test_moe_wakes_the_experts_a_batch_picks_and_ep_adds_all_to_alls():
    fabric = load_fabric("hgx_h100")
    gk = gpu_kernels(fabric, fabric.gpus[0])
    spec = ServedModelSpec.model_validate("mixtral-8x7b")
    m = spec.shape(8, 1)
    assert active_experts(8, 2, 1) == pytest.approx(2.0)
    assert active_experts(8, 2, 64) == pytest.approx(8.0, rel=1e-6)
    one = 3 * m.hidden * (m.moe_ffn_hidden // 8) * m.dtype_bytes  # one expert's slice on one GPU

    def expert_bytes(tokens: int) -> float:
        ks = [k for k in moe_mlp(gk, m, tokens, tokens) if k.name.startswith("experts_")]
        return sum(k.bytes for k in ks)

    assert expert_bytes(1) == pytest.approx(2 * one, rel=0.01)   # two experts woken
    assert expert_bytes(256) == pytest.approx(8 * one, rel=0.1)   # every expert (plus 256 rows)
    curve = SizeCurve((1, 1 << 30), (1e-5, 1e-2))
    ep = IterationModel(gk, spec.shape(1, 8), Collectives(alltoall=curve), 256)
    cost = ep.cost(single_shape(decode_seqs=32, decode_context=512))
    assert cost.collectives == 2 * m.layers  # dispatch and combine in every MoE layer, no all-reduce at tp 1
    with pytest.raises(ValueError, match="all-to-all"):
        IterationModel(gk, spec.shape(1, 8), Collectives(), 256)


def test_the_shipped_serving_scenario_plans(tmp_path):
    planned = plan_serve(ServeRequest("serving_nvl72_vs_hopper"))
    assert len(planned.fabrics) == 2
    names = {d.name for d in planned.deployments}
    assert any("disaggregated" in n or "prefill" in n for n in names)
    assert all(math.isfinite(r) for r, _ in planned.loads)


def test_on_dask_the_combinations_give_the_same_outcome(tmp_path):
    """system x deployment x rate fanned out over Dask workers: the same rows and latencies, in order."""
    request = dict(rates=(20, 60), deployments=("9 x TP8",), duration_s=4.0)
    serial = run_serve(ServeRequest("serving_nvl72_vs_hopper", **request))
    fanned = run_serve(ServeRequest("serving_nvl72_vs_hopper", workers=2, **request))
    assert [(r["system"], r["rate_per_s"]) for r in fanned.rows] == [(r["system"], r["rate_per_s"]) for r in serial.rows]
    assert len(serial.rows) == 4
    assert fanned.to_dict() == serial.to_dict()
    for a, b in zip(serial.latencies, fanned.latencies):
        assert np.array_equal(a["ttft_s"], b["ttft_s"]) and np.array_equal(a["tpot_s"], b["tpot_s"])


def test_expert_parallelism_across_hgx_nodes_loads_infiniband():
    """EP24 over three HGX nodes: the dispatch and combine all-to-alls make an InfiniBand link the
    busiest; inside an NVL72 rack the same all-to-alls stay on NVLink."""
    out = run_serve(ServeRequest("serving_moe_nvl72_vs_hopper", rates=(100,), duration_s=5.0,
                                 deployments=("3 x EP24 (DP attention)",)))
    nvl72, hopper = out.rows
    assert nvl72["busiest_link"].startswith("nvlink5") and hopper["busiest_link"].startswith("ib_")
    assert hopper["communication_share"] > nvl72["communication_share"]


def test_latent_attention_caches_one_latent_read_once_by_every_head():
    """DeepSeek-V3's MLA: 512 + 64 elements per token and layer, the same on every TP GPU; decode
    reads each cached latent once for all 128 / tp heads (absorbed), so its bytes are the latents'."""
    fabric = load_fabric("hgx_h200")
    gk = gpu_kernels(fabric, fabric.gpus[0])
    spec = ServedModelSpec.model_validate({"preset": "deepseek-v3-like", "dtype": "fp8"})
    for tp in (1, 8):
        m = spec.shape(tp, 8)
        assert m.kv_bytes_per_token_layer() == 576
        model = IterationModel(gk, m, Collectives(all_reduce=SizeCurve((1, 1 << 30), (1e-5, 1e-2)),
                                                  alltoall=SizeCurve((1, 1 << 30), (1e-5, 1e-2)),
                                                  all_gather=SizeCurve((1, 1 << 30), (1e-5, 1e-2))), 256)
        attention = [k for k in model.attention(single_shape(decode_seqs=32, decode_context=4096 - 128))
                     if k.name == "attention"]
        (kernel,) = attention
        h = 128 // tp
        context = kernel.flops / (4.0 * 32 * h * 576)  # the bucket's middle: 3,841..4,096 tokens
        assert 3840 < context <= 4096 and context == int(context)
        assert kernel is gk.decode_attention(32, h, 1, int(context), 576, "fp8", True, shared_kv=True)
        latents = 32 * 4096 * 576  # fp8: one byte each
        once = gk.decode_attention(32, h, 1, 4096, 576, "fp8", True, shared_kv=True)
        twice = gk.decode_attention(32, h, 1, 4096, 576, "fp8", True, shared_kv=False)
        assert twice.bytes - once.bytes == latents  # separate K and V would read them again


def test_a_replayed_trace_is_served_and_headlined(tmp_path):
    """A trace's own arrivals and lengths, every row of it served once; the headline names each
    system's best deployment on it."""
    from simulator.reports.serve_text import headline
    from simulator.workloads.serving.requests import read_azure_trace

    trace = ROOT / "tests" / "data" / "serving" / "azure_llm_small.csv"
    path = scenario(tmp_path, f"""\
        name: trace replay
        topologies: [hgx_h100]
        model: llama-3-8b
        load: {{trace: {trace}, format: azure}}
        slo: {{ttft: 1 s, tpot: 50 ms}}
        deployments:
          - {{name: 8 x TP1, tp: 1}}
    """)
    out = run_serve(ServeRequest(str(path)))
    (row,) = out.rows
    assert row["rate_per_s"] is None and row["requests"] == len(read_azure_trace(trace).requests)
    assert headline(out.rows).startswith("On the trace: HGX H100, 8 x TP1: ")
