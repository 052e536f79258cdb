"""The GPU side of a collective: CTA rates, channel choice, slot credit loop, launch and copy setup.

Expectations are the measured facts of a 2x H200 NV18 host (NCCL 2.28, ../shared/datasheet.md)
that the parts files take as inputs, and closed forms of the model; none is fitted here.
"""

from __future__ import annotations

import pytest

from simulator.engine.dispatch import simulate
from simulator.engine.flow import run_flow
from simulator.engine.packet import PacketConfig
from simulator.engine.transfer import Transfer, Workload
from simulator.hardware.nccl_gpu import load_gpu_side
from simulator.runner.sweeps import SweepSpec, sweep
from simulator.topology.builder import build_fabric
from simulator.workloads.collectives import ALGORITHMS, build_collective
from simulator.workloads.collectives.gpu_side import GpuSide
from simulator.workloads.copies import build_copy

GIB = 2**30


@pytest.fixture(scope="module")
def h200():
    return build_fabric("topologies/hgx_h200.yaml")


def _busbw(fabric, op, nbytes, gpus=2, **kw):
    spec = SweepSpec(op=op, gpus=gpus, sizes=(nbytes,), engine=kw.pop("engine", "flow"), **kw)
    return sweep(fabric, spec)[0]


@pytest.mark.parametrize("op, measured", [("all_reduce", 21.0), ("all_gather", 15.3)])
def test_one_channel_reproduces_the_measured_cta_rate(h200, op, measured):
    """bench --gpus 2 --channels 1 at 1 GiB: one CTA sets the pace (datasheet, within 5%)."""
    row = _busbw(h200, op, GIB, channels=1)
    assert row["channels"] == 1 and row["algo"] == "ring"
    assert row["busbw_GBps"] == pytest.approx(measured, rel=0.05)


def test_rate_grows_with_channels_until_the_links_bind(h200):
    rates = [_busbw(h200, "all_reduce", GIB, channels=c)["busbw_GBps"] for c in (1, 2, 4, 8, 24)]
    assert rates[1] == pytest.approx(2 * rates[0], rel=0.02)
    assert rates[2] == pytest.approx(4 * rates[0], rel=0.02)
    # 24 CTAs could drive 24 x 21 = 504 GB/s; the 18 NVLinks loaded both ways carry less, and
    # only while the CTAs run their link primitives (send, recv_reduce_copy_send): each loop
    # ends with a recv copy (2 memory operations per chunk byte at 84 GB/s) that leaves the links
    # idle, since the 24 channels move in step
    link_bound = 18 * 25.0 * 0.878 / (1 + 0.116)
    share = link_bound / 24
    lockstep = 24 * 2 / (2 / share + 2 / 84.0)
    assert rates[4] < link_bound and rates[4] == pytest.approx(lockstep, rel=0.02)


@pytest.mark.parametrize("op, local_work, real", [("all_gather", 2, 0.72 * 370), ("reduce_scatter", 3, None)])
def test_copy_and_reduce_scatter_lose_more_to_their_local_step_on_two_gpus(h200, op, local_work, real):
    """On 2 ranks an all_gather CTA runs copy_send (link) then recv (local), a reduce_scatter CTA
    send (link) then recv_reduce_copy (local): half its primitives leave the link idle. With 24
    channels in step and the links bound: busbw = 24 / (1 / share + local work / memory rate).
    Issue 8 (measured on the 2x H200 host): all_gather at 2 GiB runs ~28% below the 370 GB/s
    fabricsim gave before the GPU side, i.e. ~266 GB/s; it runs clearly below all_reduce."""
    row = _busbw(h200, op, 2 * GIB)
    share = 18 * 25.0 * 0.878 / (1 + 0.116) / 24
    memory = 76.5 if op == "all_gather" else 84.0
    assert row["channels"] == 24
    assert row["busbw_GBps"] == pytest.approx(24 / (1 / share + local_work / memory), rel=0.02)
    assert row["busbw_GBps"] < 0.9 * _busbw(h200, "all_reduce", 2 * GIB)["busbw_GBps"]
    if real:
        assert row["busbw_GBps"] == pytest.approx(real, rel=0.10)


def test_all_gather_runs_below_all_reduce_on_few_channels(h200):
    """Copy CTAs are slower than reduce CTAs (measured): equal bytes per link, lower busbw."""
    ag = _busbw(h200, "all_gather", GIB, channels=8)["busbw_GBps"]
    ar = _busbw(h200, "all_reduce", GIB, channels=8)["busbw_GBps"]
    assert ag / ar == pytest.approx(15.3 / 21.0, rel=0.03)


def test_nccl_protocol_and_channel_choice_on_two_gpus(h200):
    """Measured on 2x H200: Ring/LL up to 1 MiB with channels growing 1 -> 24, Ring/Simple from 4 MiB."""
    rows = sweep(h200, SweepSpec(op="all_reduce", gpus=2, sizes=(8, 4096, 65536, 2**20, 4 * 2**20, GIB),
                                 engine="flow"))
    by = {r["bytes"]: r for r in rows}
    assert all(by[s]["algo"] == "ring" for s in by)
    assert all(by[s]["protocol"] == "LL" for s in (8, 4096, 65536, 2**20))
    assert by[4 * 2**20]["protocol"] == "Simple" and by[GIB]["protocol"] == "Simple"
    channels = [by[s]["channels"] for s in (8, 4096, 65536, 2**20)]
    assert channels[0] == 1 and channels == sorted(channels) and channels[-1] == 24


def test_channel_rule_matches_nccl_thresholds():
    """NCCL drops a channel while bytes < channels x threads x threshold (Ring LL: x nranks)."""
    side = GpuSide(load_gpu_side().architecture("hopper"), load_gpu_side().library)
    # Ring LL on 2 ranks: 512 threads x 8 B x 2 = 8 KiB per channel
    assert side.ctas_for_size(24, "all_reduce", ALGORITHMS["ring"].ctas, "LL", 64 * 1024, 2) == 8
    assert side.ctas_for_size(24, "all_reduce", ALGORITHMS["ring"].ctas, "LL", 8 * 1024, 2) == 1
    # Simple: 512 threads x 64 B = 32 KiB per channel; all_gather and reduce_scatter count the whole
    # array (NCCL's nBytes = per-rank count x nRanks, src/include/info.h ncclInfoSetDerived)
    assert side.ctas_for_size(24, "all_reduce", ALGORITHMS["ring"].ctas, "Simple", 256 * 1024, 2) == 8
    assert side.ctas_for_size(24, "all_gather", ALGORITHMS["ring"].ctas, "Simple", 256 * 1024, 2) == 8
    assert side.ctas_for_size(24, "reduce_scatter", ALGORITHMS["ring"].ctas, "Simple", 256 * 1024, 8) == 8
    # the p2p ops count one rank's share
    assert side.ctas_for_size(32, "alltoall", ALGORITHMS["direct"].ctas, "Simple", 512 * 1024, 2) == 8


def test_nvls_keeps_its_channels_at_every_size():
    """NCCL sets NVLS's channel count to nvlsChannels whatever the size (src/enqueue.cc: "NVLS
    should not need more than 16 channels to get peak BW"): no thread-threshold drop."""
    side = GpuSide(load_gpu_side().architecture("blackwell"), load_gpu_side().library)
    nvls = side.default_ctas("all_gather", ALGORITHMS["nvls"].ctas)
    assert nvls == 24
    for nbytes in (8, 64 * 1024, 2**20, 2**30):
        assert side.ctas_for_size(nvls, "all_gather", ALGORITHMS["nvls"].ctas, "Simple", nbytes, 72) == nvls
    assert side.ctas_for_size(24, "all_gather", ALGORITHMS["ring"].ctas, "Simple", 64 * 1024, 72) == 2


def test_slot_loop_is_buffer_over_round_trip():
    """The FIFO credit loop: NCCL_BUFFSIZE in flight per loop of two handoffs, two routes and one
    slot's processing; it binds only when the loop is long."""
    lib = load_gpu_side().library
    side = GpuSide(load_gpu_side().architecture("hopper"), lib)
    rate = side.channel_Bps("all_reduce")
    hop, route = 2e-6, 100e-6  # a long loop
    loop = 2 * (hop + route) + lib.slot_B() / rate
    assert side.slot_loop_Bps("all_reduce", hop, route) == pytest.approx(lib.buffsize_B / loop)
    assert side.rate_Bps("all_reduce", hop, route) < rate
    assert side.rate_Bps("all_reduce", 2e-6, 0.3e-6) == rate  # NVLink: the CTA binds


def test_hand_made_fabrics_have_no_gpu_side():
    side = GpuSide(None, load_gpu_side().library)
    assert side.channel_Bps("all_reduce") == 0.0 and side.launch_s == 0.0 and side.flag_s == 0.0
    assert side.rate_Bps("all_reduce", 1e-6, 1e-6) == 0.0


def test_small_message_latency_pays_launch_base_and_flag_per_step(h200):
    hop = load_gpu_side().architecture("hopper")
    two = _busbw(h200, "all_reduce", 8, gpus=2, protocol="LL", algo="ring")["time_us"]
    eight = _busbw(h200, "all_reduce", 8, gpus=8, protocol="LL", algo="ring")["time_us"]
    # 2(n-1) steps: 2 on 2 GPUs, 14 on 8 GPUs; each costs NCCL's LL hop latency + one flag handoff + route
    per_step = (eight - two) / 12
    assert per_step > hop.flag_s * 1e6 + 0.6
    assert two > (6.6 + 2 * (0.6 + hop.flag_s * 1e6))  # back to back: the launch is hidden
    alone = build_collective(h200, h200.gpus[:2], "all_reduce", 8, "ring", "LL", exposed_launch=True)
    hidden = build_collective(h200, h200.gpus[:2], "all_reduce", 8, "ring", "LL")
    assert run_flow(h200, alone).makespan_s - run_flow(h200, hidden).makespan_s == pytest.approx(hop.launch_s)


def test_single_call_timing_exposes_the_launch_at_every_size(h200):
    """``--timing single`` (one call between CUDA events) costs exactly the launch more than
    nccl-tests' back-to-back timing, whatever the size, protocol and algorithm chosen."""
    hop = load_gpu_side().architecture("hopper")
    sizes = (8, 1 << 20, 64 << 20)
    rows = {t: sweep(h200, SweepSpec(op="all_reduce", gpus=2, sizes=sizes, engine="flow", timing=t))
            for t in ("nccl-tests", "single")}
    for hidden, alone in zip(rows["nccl-tests"], rows["single"]):
        assert (alone["algo"], alone["protocol"], alone["channels"]) == (hidden["algo"], hidden["protocol"],
                                                                       hidden["channels"])
        assert alone["time_us"] - hidden["time_us"] == pytest.approx(hop.launch_s * 1e6, abs=1e-6)
        assert (alone["timing"], hidden["timing"]) == ("single", "nccl-tests")


def test_copy_setup_cost(h200):
    """h2d pays the copy-engine launch and the PCIe read request's trip to the host."""
    small = _busbw(h200, "h2d", 64 * 1024, gpus=1)
    big = _busbw(h200, "h2d", GIB, gpus=1)
    assert small["busbw_GBps"] < 0.5 * big["busbw_GBps"]
    w = build_copy(h200, "h2d", [h200.gpus[0]], 64 * 1024)
    assert w.transfers[0].delay_s > load_gpu_side().architecture("hopper").copy_launch_s


def test_rate_limit_in_both_engines(h200):
    """Transfer.rate_Bps: a transfer alone on fast links finishes at bytes / limit in both engines."""
    g = h200.gpus
    w = Workload("cap", (Transfer(0, g[0], g[1], 8 * 2**20, rate_Bps=10e9),))
    flow = run_flow(h200, w).makespan_s
    packet = simulate(h200, w, engine="packet", packet=PacketConfig(packet_bytes=4096)).makespan_s
    assert flow == pytest.approx(8 * 2**20 / 10e9, rel=0.01)
    assert packet == pytest.approx(flow, rel=0.01)


def test_link_loaded_both_ways_moves_less_each_way(h200):
    """Measured copy-engine P2P on 2x H200: 395 GB/s one way, 354 GB/s per direction both ways."""
    g = h200.gpus
    one = Workload("one", (Transfer(0, g[0], g[1], GIB),))
    both = Workload("both", (Transfer(0, g[0], g[1], GIB), Transfer(1, g[1], g[0], GIB)))
    assert GIB / run_flow(h200, one).makespan_s / 1e9 == pytest.approx(395, rel=0.01)
    assert GIB / run_flow(h200, both).makespan_s / 1e9 == pytest.approx(354, rel=0.01)


def test_mixed_sweep_never_mixes_engines(h200):
    rows = sweep(h200, SweepSpec(op="all_reduce", gpus=2, sizes=(1024, 2**20, 2**28)))
    assert len({r["engine"] for r in rows}) == 1


def test_nvls_needs_more_than_two_gpus(h200):
    from simulator.errors import InputError

    with pytest.raises(InputError, match="more than 2 GPUs"):
        build_collective(h200, h200.gpus[:2], "all_reduce", GIB, "nvls", "Simple")


@pytest.mark.parametrize("nbytes", [512 * 2**20, 8 * GIB])
def test_nvls_at_large_rank_counts_is_paced_by_its_staging_copies(nbytes):
    """NVLS stages data through its buffers: each rank copies S in and out with its NVLS channels'
    copy warps (4 memory operations per byte against all_gather's 5 per link byte), in loops of one
    chunk per head (at most NCCL_MAX_NVLS_ARITY = 32 heads) per channel, plus one loop of pipeline
    fill: t = S / (C x R) + heads x chunk / R."""
    from simulator.workloads.collectives.nvls import nvls_chunk_B

    assert nvls_chunk_B(131072, 8 * GIB, 24, 72) == 65536 and nvls_chunk_B(131072, 512 * 2**20, 24, 72) == 32768
    assert nvls_chunk_B(131072, 64 * GIB, 24, 72) == 131072
    f = build_fabric("topologies/gb200_nvl72.yaml")
    bw = sweep(f, SweepSpec(op="all_reduce", gpus=72, sizes=(nbytes,), algo="nvls", engine="flow"))[0]
    table = load_gpu_side()
    side, lib = table.architecture("blackwell"), table.library
    n, C = 72, side.nvls_channels
    assert bw["channels"] == C
    rate = side.channel_copy_Bps * 5 / lib.copy_work["nvls_staging"]  # all_gather's 2-rank loop: 5 per link byte
    assert rate == pytest.approx(side.channel_Bps("nvls_staging", lib))
    heads = lib.nvls_max_heads
    assert heads == 32  # NCCL_MAX_NVLS_ARITY: 40 of the 72 ranks stage data but do not reduce
    # NCCL's chunk rule (src/enqueue.cc) on 24 x 32 heads: 128 KiB at 8 GiB, 64 KiB at 512 MiB
    chunk = 131072 if nbytes >= 64 * C * heads * 131072 else 65536
    assert chunk == nvls_chunk_B(lib.nvls_chunk_B, nbytes, C, heads)
    t = nbytes / (C * rate) + heads * chunk / rate
    closed = 2 * (n - 1) / n * nbytes / t / 1e9
    assert bw["busbw_GBps"] == pytest.approx(closed, rel=0.02)


@pytest.mark.parametrize("op,work", [("all_reduce", lambda n: 1.0), ("all_gather", lambda n: (1 + 1 / n) / 2),
                                     ("reduce_scatter", lambda n: (1 + 1 / n) / 2)])
def test_nvls_stages_what_each_copy_moves(op, work):
    """A rank copies in what it reduces and out what it receives (all_gather: S/n in, S out;
    reduce_scatter: S in, S/n out), its copy warps sharing the CTA's memory rate: one staging
    transfer per GPU of (in + out) / 2 x S at channels x the staging rate."""
    f = build_fabric("topologies/gb200_nvl72.yaml")
    n, S = 72, 8 * GIB
    w = build_collective(f, f.gpus[:n], op, S, "nvls", "Simple")
    staging = [t for t in w.transfers if t.src == t.dst]
    assert len(staging) == n
    side = load_gpu_side().architecture("blackwell")
    rate = side.nvls_channels * side.channel_Bps("nvls_staging", load_gpu_side().library)
    assert all(t.bytes == round(S * work(n)) and t.rate_Bps == pytest.approx(rate) for t in staging)


def test_nvls_on_few_gpus_stays_link_bound(h200):
    """4 Hopper GPUs: the staging copies (16 channels x 15.3 GB/s) outrun the links, so NVLS sits at
    its link bound 2(n-1)/(n+1) x the per-GPU payload rate both ways loaded x NVLS efficiency."""
    bw = sweep(h200, SweepSpec(op="all_reduce", gpus=4, sizes=(8 * GIB,), algo="nvls", engine="flow"))[0]
    per_gpu = 18 * 25.0 * 0.878 / 1.116 * 0.85
    assert bw["busbw_GBps"] == pytest.approx(2 * 3 / 5 * per_gpu, rel=0.02)


def test_broadcast_reaches_the_one_way_rate(h200):
    """Measured on 2x H200: NCCL broadcast (one direction) reaches the one-way copy rate (395 GB/s)
    at large sizes: its relay CTAs do less memory work per link byte than all_gather's."""
    row = _busbw(h200, "broadcast", GIB)
    assert row["busbw_GBps"] == pytest.approx(395, rel=0.01)
    lib = load_gpu_side().library
    one = _busbw(h200, "broadcast", GIB, channels=1)["busbw_GBps"]
    assert one == pytest.approx(15.3 * 5 / lib.copy_work["broadcast"], rel=0.02)


def test_nvls_heads_are_capped_at_32_and_only_heads_store_a_shard():
    """NCCL runs NVLS with at most NCCL_MAX_NVLS_ARITY = 32 head ranks: on 72 GPUs the first 32
    reduce and multicast-store a 1/32 shard each (S/32 more up and down), the other 40 only push
    their copy and receive the multicast (S each way)."""
    f = build_fabric("topologies/gb200_nvl72.yaml")
    w = build_collective(f, f.gpus, "all_reduce", GIB, "nvls", "Simple")
    up, down = {}, {}
    for t in w.transfers:
        if t.src != t.dst:
            side = up if t.src in f.gpus else down
            gpu = t.src if t.src in f.gpus else t.dst
            side[gpu] = side.get(gpu, 0) + t.bytes
    head, other = f.gpus[0], f.gpus[40]
    assert up[head] / up[other] == pytest.approx(1 + 1 / 32, rel=1e-6)
    assert down[head] / down[other] == pytest.approx(1 + 1 / 32, rel=1e-6)
    assert up[f.gpus[31]] == up[head] and up[f.gpus[32]] == up[other]


def test_graph_timing_charges_the_nccl_kernel_its_fixed_cost_in_a_graph(h200):
    """``--timing graph`` (calls captured in one CUDA graph): each call pays the GPU kernel model's
    per-kernel fixed cost in a graph on top of NCCL's in-kernel latency, as every other kernel does;
    a decode step's all-reduces pay the same."""
    from simulator.hardware.catalog import load_catalog
    from simulator.hardware.kernels import kernel_model
    from simulator.workloads.attention import ModelShape, decode_step

    gk = kernel_model("h200", load_catalog().device("h200").gpu)
    rows = {t: sweep(h200, SweepSpec(op="all_reduce", gpus=2, sizes=(8, 64 << 10), engine="flow", timing=t))
            for t in ("nccl-tests", "graph")}
    for plain, graph in zip(rows["nccl-tests"], rows["graph"]):
        assert graph["time_us"] - plain["time_us"] == pytest.approx(gk.kernel_s * 1e6, rel=1e-6)
    m = ModelShape(layers=2, hidden=8192, heads=64, kv_heads=8, head_dim=128, batch=1, context=4096, tp=2,
                   ffn_hidden=28672)
    ar = decode_step(h200, h200.gpus[:2], gk, m).figures["allreduce_s"]
    alone = build_collective(h200, h200.gpus[:2], "all_reduce", 8192 * 2)
    assert ar - run_flow(h200, alone).makespan_s == pytest.approx(gk.kernel_s, rel=0.05)
