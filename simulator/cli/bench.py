"""``fabricsim bench TOPOLOGY --op OP --gpus N --sizes 1K:8G``: nccl-tests-style sweeps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from simulator.cli.common import (ArbiterOpt, CrossbarOpt, EngineOpt, IterationsOpt, PacketBytesOpt, QueueingOpt,
                                   JSON_HELP, SeedOpt, SpeedupOpt, output_plan, report_console, switch_flags)
from simulator.cli.common import FaultOpt, HostsOpt, PerNodeOpt, PerRackOpt, PerTrayOpt, RanksOpt, placement_flags
from simulator.errors import InputError
from simulator.hardware.protocols import PROTOCOL_NAMES
from simulator.workloads.collectives.ops import OPS
from simulator.workloads.collectives.registry import algorithm_help
from simulator.workloads.copies import COPIES

if TYPE_CHECKING:  # the CLI imports the model only when a command runs (fast --help)
    from simulator.topology.fabric import Fabric

def register(app: typer.Typer) -> None:
    @app.command()
    def bench(
        topology: Annotated[str, typer.Argument(help="Topology YAML, or a shipped topology by name (hgx_h100; see fabricsim list).")],
        op: Annotated[str, typer.Option(help=f"{', '.join(OPS)}, or a copy: {', '.join(COPIES)}.")] = "all_reduce",
        gpus: Annotated[Optional[int], typer.Option(min=1, help="Use N GPUs: the first N in rank order, or where "
                                                          "the placement flags put them (default: all, or what "
                                                          "they give).")] = None,
        per_rack: PerRackOpt = None,
        per_tray: PerTrayOpt = None,
        per_node: PerNodeOpt = None,
        ranks: RanksOpt = None,
        hosts: HostsOpt = None,
        sizes: Annotated[str, typer.Option(help="1K:8G (doubling), a list 1M,64M, or one size.")] = "1M:1G",
        step_factor: Annotated[int, typer.Option(
            "--step-factor", "-f", min=2, help="Multiply the size by this between LO and HI of --sizes LO:HI "
                                              "(nccl-tests -f; default 2).")] = 2,
        dtype: Annotated[str, typer.Option(
            "--dtype", "-d", help="Data type, as nccl-tests -d: float, half, bfloat16, int8, int32, double, "
                                  "f8e4m3, ...; sets the count column and rounds sizes to whole elements.")] = "float",
        root: Annotated[int, typer.Option(
            "--root", "-r", min=0, help="Root rank of broadcast, reduce, gather, scatter (nccl-tests -r); -1 is printed "
                                  "for ops without a root.")] = 0,
        algo: Annotated[str, typer.Option(help=algorithm_help() + ".")] = "auto",
        protocol: Annotated[str, typer.Option(help=f"{', '.join(PROTOCOL_NAMES)} or auto (like NCCL_PROTO).")] = "auto",
        channels: Annotated[Optional[int], typer.Option(
            min=1, max=64, help="NCCL channels (CTAs) per call, like NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=N "
                                "(default: NCCL's choice per size).")] = None,
        timing: Annotated[str, typer.Option(
            help="nccl-tests (back-to-back calls, the kernel launch hidden, as nccl-tests times them), single "
                 "(one call between two CUDA events, as PyTorch users time it: the launch is exposed) or graph "
                 "(calls captured in one CUDA graph: each pays the kernel's fixed cost in a graph).")] = "nccl-tests",
        engine: EngineOpt = "auto",
        packet_bytes: PacketBytesOpt = None,
        seed: SeedOpt = 0,
        arbiter: ArbiterOpt = None,
        crossbar: CrossbarOpt = None,
        iterations: IterationsOpt = None,
        speedup: SpeedupOpt = None,
        queueing: QueueingOpt = None,
        json_path: Annotated[Optional[str], typer.Option("--json", help="Write rows as JSON here" + JSON_HELP)] = None,
        plot: Annotated[Optional[str], typer.Option(help="Write busbw vs size (.png, or .svg/.pdf for vector) here.")] = None,
        heatmap: Annotated[Optional[str], typer.Option(
            help="Write the link-utilization heatmap of the largest size (.png, or .svg/.pdf for vector) here.")] = None,
        trace: Annotated[Optional[str], typer.Option(
            help="Write a Perfetto/Chrome trace (JSON, streamed) of every run here: packets, credits and queues "
                 "(packet engine), transfers and link utilization (flow engine).")] = None,
        credit_plot: Annotated[Optional[str], typer.Option(
            help="Write credit occupancy and queue depth over time of one link, and the NCCL FIFO slots "
                 "of one channel (.png/.svg/.pdf; packet engine).")] = None,
        link: Annotated[Optional[int], typer.Option(
            help="Channel id for --credit-plot (default: GPU 0's first link towards GPU 1).")] = None,
        text: Annotated[bool, typer.Option("--text", help="Plain nccl-tests text instead of a rich table.")] = False,
        fault: FaultOpt = None,
        mnnvl: Annotated[bool, typer.Option(
            "--mnnvl/--no-mnnvl", help="NCCL_MNNVL_ENABLE: --no-mnnvl runs every compute tray of an NVL72 rack as "
                                       "its own NCCL node (NVLink inside the tray, the network between trays).")] = True,
    ) -> None:
        """Sweep message sizes of one collective and print the nccl-tests columns (busbw in GB/s, 1 GB = 1e9 B)."""
        from simulator.runner.bench import BenchRequest, plan_bench, run_bench

        request = BenchRequest(topology=topology, op=op, sizes=sizes, step_factor=step_factor, dtype=dtype,
                               gpus=gpus, placement=placement_flags(per_rack, per_tray, per_node, ranks, hosts),
                               root=root, algo=algo, protocol=protocol, channels=channels, timing=timing,
                               engine=engine, packet_bytes=packet_bytes, seed=seed,
                               switch=switch_flags(arbiter, crossbar, iterations, speedup, queueing),
                               faults=tuple(fault or ()), mnnvl=mnnvl)
        planned = plan_bench(request)
        fabric, spec = planned.fabric, planned.spec
        plan = output_plan(list(planned.inputs), json=json_path, plot=plot, heatmap=heatmap, trace=trace,
                           credit_plot=credit_plot)
        for line in planned.warnings:  # what the faults did beyond the table (a BER that takes links down)
            typer.echo(f"fabricsim: warning: {line}", err=True)
        tracer = recorder = None
        if trace:
            from simulator.reports.trace import TraceWriter

            tracer = TraceWriter(path=trace, inputs=plan.inputs)
        if credit_plot:
            from simulator.reports.plots import CreditRecorder

            recorder = CreditRecorder(fabric.channels[_credit_link(fabric, list(planned.gpus), link)])
        last: list = []
        workloads: list = []

        def keep(workload, result) -> None:
            workloads.append(workload)
            last.append(result)

        from rich.console import Console

        from simulator.cli.progress import SweepProgress
        from simulator.reports.fanout import combine

        where = f" ({planned.placed})" if planned.placed else ""
        with SweepProgress(Console(stderr=True), f"{op} on {spec.gpus} GPUs{where}") as progress:

            def heard(sweep_plan) -> None:  # noqa: ANN001 - runner.estimate.SweepPlan, before any run
                if credit_plot and sweep_plan.engine != "packet":
                    raise InputError(f"needs a packet-engine run; this sweep runs on the "
                                     f"{sweep_plan.engine} engine: add --engine packet", field="credit_plot")
                progress.plan(sweep_plan)

            outcome = run_bench(planned, observer=combine(tracer, recorder), on_row=progress.row,
                                on_plan=heard, on_hops=progress.hops, on_result=keep)
        rows = outcome.rows
        if heatmap:
            from simulator.reports.plots import link_utilization_heatmap
            from simulator.units import format_bytes

            link_utilization_heatmap(fabric, last[-1], heatmap,
                                     title=f"{op} of {format_bytes(rows[-1]['bytes'])} on {spec.gpus} GPUs "
                                           f"({last[-1].engine} engine)")
        if tracer:
            tracer.write()
        if recorder:
            from simulator.reports.plots import credit_timeseries

            times, credits, depth = recorder.series()
            credit_timeseries(times, credits, depth, recorder.buffer_credits, credit_plot,
                              label=recorder.name, slots=_slot_timeline(fabric, workloads[-1], last[-1]),
                              credit_bytes=recorder.credit_bytes)
        if json_path:
            from simulator.reports.export import write_json

            write_json(json_path, outcome.to_dict(), plan.inputs)
        if plot:
            from simulator.reports.plots import busbw_vs_size

            busbw_vs_size({fabric.name: [(r["bytes"], r["busbw_GBps"]) for r in rows]}, path=plot,
                          title=f"{op} on {spec.gpus} GPUs")
        from simulator.reports.nccl_table import nccl_table, nccl_text

        if text:
            typer.echo(nccl_text(op, spec.gpus, rows, dtype=dtype, root=root), err=json_path == "-")
        else:
            from simulator.reports.run_notice import unit_note

            units = unit_note(rows)
            # the rows are the faulted fabric's: its title says so (issue 27, item 5)
            degraded = f", degraded by {'; '.join(fabric.faults)}" if fabric.faults else ""
            note = f" (packet engine, {units})" if units else ""
            note += {"single": ", single calls (launch exposed)", "graph": ", calls in one CUDA graph"}.get(timing, "")
            from simulator.reports.fit import fit

            out = report_console(stderr=json_path == "-")
            out.print(fit(nccl_table(op, spec.gpus, rows,
                                     title=f"{fabric.name}{degraded}: {op} on {spec.gpus} GPUs{where}{note}",
                                     dtype=dtype, root=root),
                          out.width, optional=("#wrong", "redop", "type", "count (elements)", "root",
                                               "algbw (GB/s)", "algo/proto/ch/engine")))
            if outcome.compared:  # healthy vs degraded side by side (issue 12)
                from simulator.reports.fault_compare import fault_table

                out.print(fit(fault_table(fabric, outcome.compared), out.width,
                              optional=("how healthy", "how degraded")))


def _slot_timeline(fabric: Fabric, workload, result):
    """The FIFO slots of the largest run's first CTA-driven transfer (one channel towards one
    peer), at the rate that transfer achieved; None when no transfer has a GPU side (copies,
    hand-made fabrics)."""
    from simulator.workloads.collectives.base import route_lat_s
    from simulator.workloads.collectives.gpu_side import GpuSide

    t = next((t for t in workload.transfers if t.rate_Bps and t.bytes and fabric.nodes[t.dst].kind == "gpu"), None)
    if t is None:
        return None
    side = GpuSide.of(fabric, (t.src, t.dst))
    took = float(result.finish_s[t.id] - result.start_s[t.id])
    send = min(t.rate_Bps, t.bytes / took) if took > 0 else t.rate_Bps
    return side.slot_timeline(t.bytes, send, side.flag_s, route_lat_s(fabric, t.src, t.dst))


def _credit_link(fabric: Fabric, gpus: list[str], link: int | None) -> int:
    """The channel to record: ``link`` if given, else the job's rank 0's first hop towards its
    rank 1 (or any GPU)."""
    from simulator.topology.routing import equal_cost_routes

    if link is not None:
        if not 0 <= link < len(fabric.channels):
            raise InputError(f"{fabric.name} has channels 0..{len(fabric.channels) - 1}, not {link}", field="link")
        return link
    src = gpus[0]
    dst = gpus[1] if len(gpus) > 1 else next((g for g in fabric.gpus if g != src), src)
    return equal_cost_routes(fabric, src, dst)[0][0]
