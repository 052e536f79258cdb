"""Regenerate the figures shown in the README (docs/img/*.png) from simulation runs.

Every number in a figure is simulated here from the shipped topologies and parts; the only
outside numbers are the published nccl-tests points (markers) from validation/published.yaml.
Big sweeps use the flow engine; the credit-loop figure uses the packet engine (it needs per-packet
credits). Runs in well under two minutes on two cores.

    python scripts/make_figures.py [--out docs/img] [--only busbw,heatmap,credits,power,topology,gpu_side,scheduler]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Callable

import yaml

from simulator.engine.dispatch import simulate
from simulator.engine.packet import PacketConfig
from simulator.engine.transfer import Transfer, Workload
from simulator.metrics.energy import energy_report
from simulator.reports.plots import (CreditRecorder, busbw_vs_size, credit_timeseries, link_utilization_heatmap,
                                     power_breakdown, topology_drawing)
from simulator.runner.sweeps import SweepSpec, build_workload, size_list, sweep
from simulator.topology.builder import build_fabric
from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes

ROOT = Path(__file__).resolve().parents[1]
TOPOLOGIES = ROOT / "topologies"
PUBLISHED = ROOT / "validation" / "published.yaml"
log = logging.getLogger("make_figures")

BUSBW_SIZES = "1M:8G"
"""nccl-tests-style sweep, doubling (K = 1024 B)."""
BUSBW_SERIES = (("dgx_a100.yaml", 8, "ring"), ("hgx_h100.yaml", 8, "ring"), ("hgx_h100.yaml", 8, "nvls"),
                ("gb200_nvl72.yaml", 72, "auto"))
"""(topology, GPUs, algorithm) of each simulated line; published points join the line with the
same topology, GPU count and algorithm."""
HEATMAP_BYTES = 256 * 2**20
"""all_reduce size of the utilization heatmap (256 MiB on 72 GPUs)."""
POWER_BYTES = 1 * 2**30
"""all_reduce size whose run the power breakdown averages over (1 GiB on 72 GPUs)."""
INCAST_BYTES = 512 * 1024
"""Bytes each of two senders pushes into one receiver in the credit-loop figure."""
INCAST_PACKET_BYTES = 1024
"""Packet payload for the credit figure: 32 packets fill an NVLink 5 receive buffer of 32 KiB."""

MAX_PNG_BYTES = 400_000
"""README images stay below this; larger renders are reduced to a 256-colour palette."""

_fabrics: dict[str, Fabric] = {}


def fabric(name: str) -> Fabric:
    """Build each shipped topology once."""
    if name not in _fabrics:
        _fabrics[name] = build_fabric(TOPOLOGIES / name)
    return _fabrics[name]


def shrink_png(path: Path, limit: int = MAX_PNG_BYTES) -> Path:
    """Re-encode a PNG above ``limit`` bytes with a 256-colour palette (thousands of translucent
    lines make large true-colour files); raise if it is still too large."""
    if path.stat().st_size <= limit:
        return path
    from PIL import Image

    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                                              dither=Image.Dither.NONE)
    small.save(path, optimize=True)
    if path.stat().st_size > limit:
        raise RuntimeError(f"{path} is {path.stat().st_size / 1e3:.0f} KB even with a palette (limit {limit / 1e3:.0f} KB)")
    return path


def _series_label(f: Fabric, gpus: int, algo: str) -> str:
    return f"{f.name}, {gpus} GPUs ({'NVLS' if algo == 'nvls' else algo})"


def figure_busbw(out: Path) -> list[Path]:
    """busbw vs size for DGX A100, HGX H100 (ring and NVLS), GB200 NVL72, published points as stars."""
    sizes = tuple(size_list(BUSBW_SIZES))
    series, published = {}, []
    entries = yaml.safe_load(PUBLISHED.read_text(encoding="utf-8"))["entries"]
    for topo, gpus, algo in BUSBW_SERIES:
        f = fabric(topo)
        rows = sweep(f, SweepSpec(op="all_reduce", gpus=gpus, sizes=sizes, algo=algo, engine="flow"))
        label = _series_label(f, gpus, algo)
        series[label] = [(r["bytes"], r["busbw_GBps"]) for r in rows]
        for e in entries:
            if (Path(e["topology"]).name == topo and e["gpus"] == gpus and e.get("algo", "auto") == algo
                    and e["metric"] == "busbw_GBps" and e["op"] == "all_reduce"):
                published.append((label, size_list(str(e["bytes"]))[0], float(e["published"])))
    return [busbw_vs_size(series, published, path=out / "busbw_vs_size.png",
                          title="all_reduce busbw: simulated lines, published nccl-tests points (stars)")]


def figure_heatmap(out: Path) -> list[Path]:
    """Per-direction link utilization of a 256 MiB all_reduce on GB200 NVL72 (flow engine)."""
    f = fabric("gb200_nvl72.yaml")
    spec = SweepSpec(op="all_reduce", gpus=72, sizes=(HEATMAP_BYTES,), engine="flow")
    workload = build_workload(f, spec, HEATMAP_BYTES)
    result = simulate(f, workload, engine="flow")
    meta = workload.meta
    title = (f"GB200 NVL72: link utilization of a 256 MiB all_reduce on 72 GPUs "
             f"({meta['algo']}/{meta['protocol']}, flow engine, per direction)")
    return [link_utilization_heatmap(f, result, out / "nvl72_link_utilization.png", title=title)]


def figure_credits(out: Path) -> list[Path]:
    """Two GPUs of GB200 NVL72 push into a third through one NVSwitch chip (2:1 incast): the
    switch's output is oversubscribed, its input buffer fills and the sender runs out of credits."""
    f = fabric("gb200_nvl72.yaml")
    g = f.gpus
    dst = g[8]
    routes = [equal_cost_routes(f, src, dst)[0] for src in (g[0], g[4])]  # both via the first chip
    first_hop = f.channels[routes[0][0]]
    workload = Workload("incast", tuple(Transfer(i, src, dst, INCAST_BYTES, paths=(route,))
                                        for i, (src, route) in enumerate(zip((g[0], g[4]), routes))))
    recorder = CreditRecorder(first_hop)
    simulate(f, workload, engine="packet", packet=PacketConfig(packet_bytes=INCAST_PACKET_BYTES),
             observer=recorder)
    times, in_use, depth = recorder.series()
    label = f"{first_hop.src} -> {first_hop.dst}, 2:1 incast, {INCAST_PACKET_BYTES // 1024} KiB packets"
    return [credit_timeseries(times, in_use, depth, recorder.buffer_credits, out / "credit_loop.png",
                              label=label, credit_bytes=recorder.credit_bytes)]


def figure_power(out: Path) -> list[Path]:
    """Average interconnect power during a 1 GiB all_reduce on 72 GPUs: NVL72 copper, NVL72 optical,
    Hopper IB rack."""
    reports = {}
    for topo in ("gb200_nvl72.yaml", "gb200_nvl72_optical.yaml", "hopper_ib_rack.yaml"):
        f = fabric(topo)
        spec = SweepSpec(op="all_reduce", gpus=72, sizes=(POWER_BYTES,), engine="flow")
        result = simulate(f, build_workload(f, spec, POWER_BYTES), engine="flow")
        reports[f.name.replace(" (", "\n(")] = energy_report(f, result)
    return [power_breakdown(reports, out / "power_breakdown.png",
                            title="Interconnect power during a 1 GiB all_reduce on 72 GPUs")]


def figure_topology(out: Path) -> list[Path]:
    """Tiered drawings of HGX H100 and GB200 NVL72."""
    return [topology_drawing(fabric("hgx_h100.yaml"), out / "topology_hgx_h100.png"),
            topology_drawing(fabric("gb200_nvl72.yaml"), out / "topology_gb200_nvl72.png")]


def figure_scheduler(out: Path) -> list[Path]:
    """One iSLIP iteration on a 4 x 4 switch, from the engine's allocator (docs/model.md)."""
    from simulator.reports.plots.scheduler_steps import scheduler_steps

    return [scheduler_steps(out / "switch_scheduler.png")]


FIGURES: dict[str, Callable[[Path], list[Path]]] = {
    "busbw": figure_busbw, "heatmap": figure_heatmap, "credits": figure_credits,
    "power": figure_power, "topology": figure_topology, "scheduler": figure_scheduler,
}


def figure_gpu_side(out: Path) -> list[Path]:
    """Left: busbw vs NCCL channels on 2x H200 (CTA-bound, then link-bound), with the measured
    one-channel rates. Right: the slot credit loop of one channel, as a timeline of its 8 slots."""
    import matplotlib.pyplot as plt

    from simulator.hardware.nccl_gpu import load_gpu_side

    f = fabric("hgx_h200.yaml")
    side = load_gpu_side()
    lib, hopper = side.library, side.architecture("hopper")
    channels = [1, 2, 4, 6, 8, 12, 16, 20, 24, 32]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.4), gridspec_kw={"width_ratios": [1, 1.3]})
    for op, colour, measured in (("all_reduce", "tab:blue", 21.0), ("all_gather", "tab:orange", 15.3)):
        bw = [sweep(f, SweepSpec(op=op, gpus=2, sizes=(2**30,), channels=c, engine="flow"))[0]["busbw_GBps"]
              for c in channels]
        ax.plot(channels, bw, "o-", color=colour, label=f"{op} (simulated)")
        ax.plot([1], [measured], "*", ms=14, color=colour, markeredgecolor="black",
                label=f"{op}, 1 channel measured ({measured} GB/s)")
    out0 = [c for c in f.out_channels(f.gpus[0]) if c.fabric == "nvlink"]
    link_bound = sum(c.rate_Bps / (1 + c.reverse_overhead) for c in out0) / 1e9
    ax.axhline(link_bound, color="black", ls="--", lw=1)
    ax.text(1, link_bound + 6, f"18 NVLinks loaded both ways: {link_bound:.0f} GB/s", fontsize=8)
    ax.axvline(hopper.coll_channels, color="grey", ls=":", lw=1)
    ax.text(hopper.coll_channels + 0.4, 180, "NCCL default\n(24 channels)", fontsize=8, color="grey")
    ax.set_xlabel("NCCL channels (CTAs)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title("2x H200, 1 GiB: channels x CTA rate until the links bind;\n"
                 "each loop's local recv copy then leaves them idle", fontsize=10)
    ax.grid(alpha=0.3)
    ax.set_ylim(0, link_bound * 1.15)
    ax.legend(fontsize=8, loc="lower right")
    # slot timeline: sender fills slot k once the receiver freed it (credit), receiver consumes after the flag
    slot_s = lib.slot_B() / hopper.channel_reduce_Bps * 1e6
    flag = hopper.flag_s * 1e6
    steps = lib.steps
    for i in range(2 * steps):
        k = i % steps
        send = i * slot_s
        if i >= steps:  # wait for the credit (head pointer) of slot k from round i - steps
            send = max(send, (i - steps) * slot_s + slot_s + flag + slot_s + flag)
        bx.broken_barh([(send, slot_s)], (1.1, 0.8), color="tab:blue" if i < steps else "tab:cyan",
                       edgecolor="white")
        bx.text(send + slot_s / 2, 1.5, str(k), ha="center", va="center", fontsize=7, color="white")
        recv = send + slot_s + flag
        bx.broken_barh([(recv, slot_s)], (0.1, 0.8), color="tab:green" if i < steps else "tab:olive",
                       edgecolor="white")
    bx.annotate("tail flag: slot full", xy=(slot_s + flag, 0.9), xytext=(slot_s * 2.5, 2.3), fontsize=8,
                arrowprops={"arrowstyle": "->"})
    bx.annotate("head flag: slot 0 free again\n(a credit returns)", xy=(2 * slot_s + 2 * flag, 0.95),
                xytext=(slot_s * 9.5, 2.3), fontsize=8, arrowprops={"arrowstyle": "->"})
    bx.set_yticks([0.5, 1.5], ["receiver CTA\nconsumes", "sender CTA\nfills slots"])
    bx.set_ylim(0, 2.9)
    bx.set_xlabel("time (us)")
    bx.set_title(f"One channel's FIFO: {lib.buffsize_B // 2**20} MiB = {steps} slots of "
                 f"{lib.slot_B() // 1024} KiB (credits one level up)", fontsize=10)
    bx.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = out / "gpu_side.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


FIGURES["gpu_side"] = figure_gpu_side

STREAM_MEASURED = {1: 62, 2: 121, 4: 238, 8: 461, 16: 866, 33: 1599, 66: 2644, 132: 3501, 264: 3765,
                   528: 3775, 1056: 3800, 2112: 3820}
"""Shared datasheet, measured on one H200: a streaming copy kernel's HBM rate against its CTAs (GB/s)."""


def figure_kernels(out: Path) -> list[Path]:
    """Left: achieved HBM bandwidth against CTAs on an H200 (the model over the measured points,
    and the old roofline's SM-fraction line). Right: one Llama-3-70B TP8 decode layer on an H200
    against batch, for three contexts, split into attention, GEMMs and other kernels."""
    from simulator.hardware.catalog import load_catalog
    from simulator.hardware.kernels import kernel_model
    from simulator.reports.plots._figure import new_figure, palette, save_png
    from simulator.workloads.attention.layer import step_cost
    from simulator.workloads.attention.model import ModelShape

    gk = kernel_model("h200", load_catalog().device("h200").gpu)
    run = json.loads((ROOT / "benchmarks" / "calibrate_h200" / "h200_microbench.json").read_text())
    LAYER_RECORDS = [r for r in run["records"] if r.get("bench") == "layer" and r.get("model") == "llama3-70b-tp8"
                     and r.get("phase") == "decode"]
    fig = new_figure(10, 4)
    left, right = fig.subplots(1, 2)
    ctas = [2 ** i for i in range(0, 12)]
    left.plot(ctas, [gk.hbm_Bps(n, "stream") / 1e12 for n in ctas], "-", color="C0",
              label="kernel model (Little's law per CTA, HBM saturation)")
    left.plot(list(STREAM_MEASURED), [v / 1e3 for v in STREAM_MEASURED.values()], "o", color="C1",
              label="measured, one H200 (datasheet)")
    left.plot(ctas, [min(1, n / gk.spec.sms) * gk.spec.hbm_Bps / 1e12 for n in ctas], "--", color="grey",
              label="bare roofline: SM fraction x 4.8 TB/s")
    left.set_xscale("log", base=2)
    left.set_xlabel("CTAs of the kernel")
    left.set_ylabel("achieved HBM bandwidth (TB/s, read + write)")
    left.set_title("H200: few CTAs cannot draw HBM")
    left.legend(fontsize=7, loc="upper left")
    left.grid(alpha=0.3)
    batches = [1, 2, 4, 8, 16, 32, 64, 128]
    colours = palette(3)
    for colour, ctx in zip(colours, (4096, 16384, 65536)):
        layer = []
        for b in batches:
            m = ModelShape(80, 8192, 64, 8, 128, b, ctx, tp=8, ffn_hidden=28672, vocab=128256)  # pytorch layer
            layer.append(step_cost(gk, m, "decode").layer_s * 1e6)
        right.plot(batches, layer, "o-", color=colour, label=f"{ctx // 1024}k context (model)")
        measured = [(r["batch"], r["time_s"] * 1e6) for r in LAYER_RECORDS if r["context"] == ctx]
        if measured:
            right.plot(*zip(*sorted(measured)), "s", color=colour, fillstyle="none", markersize=8,
                       label=f"{ctx // 1024}k, measured (calibrate layer bench)")
    right.set_xscale("log", base=2)
    right.set_xlabel("batch (sequences)")
    right.set_ylabel("decode layer time (us, CUDA graph, PyTorch kernels)")
    right.set_title("Llama-3-70B TP8 decode layer, one H200")
    right.legend(fontsize=7)
    right.grid(alpha=0.3)
    return [save_png(fig, out / "kernel_model.png")]


FIGURES["kernels"] = figure_kernels


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument("--only", default=",".join(FIGURES), help="comma-separated: " + ", ".join(FIGURES))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only.split(","):
        start = time.perf_counter()
        for path in map(shrink_png, FIGURES[name](args.out)):
            log.info("%-40s %7.1f KB  %5.1f s", path.relative_to(ROOT) if path.is_relative_to(ROOT) else path,
                     path.stat().st_size / 1e3, time.perf_counter() - start)


if __name__ == "__main__":
    main()
