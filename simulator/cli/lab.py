"""``fabricsim lab credits|arbitration|hol|switch|retry``: the teaching labs (retry: its own go-back-N sender).

Each command hands plain arguments to a lab function (``simulator.workloads.labs``), then prints a
rich table and a short explanation computed from the results, or the rows as JSON with ``--json``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from simulator.cli.common import ArbiterOpt, CrossbarOpt, IterationsOpt, output_plan, plain_console, switch_flags

if TYPE_CHECKING:
    from rich.table import Table

lab_app = typer.Typer(help="Teaching labs: the credit loop, switch arbitration, head-of-line blocking, link-level retry, "
                           "switch scheduling.",
                      no_args_is_help=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the rows as JSON on stdout (nothing else).")]
PlotOpt = Annotated[Optional[str], typer.Option(help="Write the lab's figure (.png, or .svg/.pdf for vector) here.")]
CABLE_LABEL = {"copper_passive": "Cu", "copper_active": "ACC", "optical": "optic"}
"""Short cable names for narrow tables (passive copper, active copper cable, optics)."""
GenerationOpt = Annotated[str, typer.Option(help="Link generation from the hardware catalog.")]


def register(app: typer.Typer) -> None:
    app.add_typer(lab_app, name="lab")


def _table(title: str, *columns: str) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0, overflow="fold")
    return table


def _size(n_bytes: int) -> str:
    return f"{n_bytes // 1024}K" if n_bytes % 1024 == 0 else f"{n_bytes} B"


@lab_app.command()
def credits(
    generation: Annotated[Optional[list[str]], typer.Option(
        help="Link generation(s) from the hardware catalog; repeat for several.")] = None,
    buffers: Annotated[str, typer.Option(help="Receive buffers: 1K:64K (doubling) or a list 4K,32K.")] = "1K:64K",
    cables: Annotated[str, typer.Option(help="Cable lengths in metres, comma-separated.")] = "0.5,1,2,5,10,30,100",
    as_json: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """One saturated link: simulated throughput beside min(payload rate, buffer / credit RTT)."""
    from simulator.runner.labs import CreditsLab, run_lab

    output_plan((), plot=plot)
    outcome = run_lab(CreditsLab(generation=tuple(generation or ()), buffers=buffers, cables=cables))
    rows = outcome.result
    if plot:
        from simulator.reports.plots.lab_credits import lab_credits

        lab_credits(rows, plot)
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    console = plain_console()
    for gen in dict.fromkeys(r["generation"] for r in rows):
        mine = [r for r in rows if r["generation"] == gen]
        table = _table(f"Credit lab, {gen}: one link, saturating traffic "
                       f"(payload rate {mine[0]['line_GBps']:.1f} GB/s, GB = 1e9 B, one direction)",
                       "cable", "buffer", "RTT ns", "BDP KiB", "sim GB/s", "closed GB/s", "err %",
                       "credit stall %")
        for r in mine:
            table.add_row(f"{r['cable_m']:g}m {CABLE_LABEL.get(r['cable'], r['cable'])}",
                          _size(r["buffer_bytes"]), f"{r['rtt_ns']:.0f}", f"{r['bdp_bytes'] / 1024:.1f}",
                          f"{r['simulated_GBps']:.2f}", f"{r['closed_form_GBps']:.2f}", f"{r['error_pct']:+.2f}",
                          f"{r['credit_stall_pct']:.0f}")
        console.print(table)
    console.print(outcome.explanation)


@lab_app.command()
def arbitration(
    inputs: Annotated[int, typer.Option(help="Inputs contending for the one output.")] = 4,
    generation: GenerationOpt = "nvlink5",
    as_json: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """N inputs saturate one output: each input's share, Jain index, starvation, per arbiter."""
    from simulator.runner.labs import ArbitrationLab, run_lab
    from simulator.workloads.labs.arbitration import STARVED_SHARE

    output_plan((), plot=plot)
    outcome = run_lab(ArbitrationLab(inputs=inputs, generation=generation))
    rows = outcome.result
    if plot:
        from simulator.reports.plots.lab_arbitration import lab_arbitration

        lab_arbitration(rows, plot)
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    names = [x["input"] for x in rows[0]["inputs"]]
    table = _table(f"Arbitration lab: {inputs} inputs -> one {generation} output "
                   f"({rows[0]['line_GBps']:.1f} GB/s payload rate per direction); share of the output, %",
                   "arbiter", *names, "Jain", "starved", "output GB/s")
    weights = ""
    for r in rows:
        table.add_row(r["arbiter"], *(f"{100 * x['share']:.1f}" for x in r["inputs"]), f"{r['jain']:.3f}",
                      " ".join(r["starved"]) or "-", f"{r['output_GBps']:.1f}")
        if any(x["weight"] != 1 for x in r["inputs"]):
            weights = "/".join(str(x["weight"]) for x in r["inputs"])
    if weights:
        table.caption = (f"weights of {'/'.join(names)}: {weights} (priorities for fixed_priority); "
                         f"starved: under {100 * STARVED_SHARE:g} % of the output")
    console = plain_console()
    console.print(table)
    console.print(outcome.explanation)


@lab_app.command()
def hol(
    incast: Annotated[int, typer.Option(help="GPUs saturating the hot GPU.")] = 7,
    hot_load: Annotated[float, typer.Option(help="Victim's hot traffic as a fraction of its fair share "
                                                 "of the hot output.")] = 2 / 3,
    speedup: Annotated[float, typer.Option(help="Crossbar speedup of the switch.")] = 2.0,
    generation: GenerationOpt = "nvlink5",
    seed: Annotated[int, typer.Option(help="Seed of the hot packets' random times.")] = 0,
    arbiter: ArbiterOpt = None,
    crossbar: CrossbarOpt = None,
    iterations: IterationsOpt = None,
    as_json: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Head-of-line blocking with and without VOQs; static vs shared credit pools under incast."""
    from simulator.runner.labs import HolLab, run_lab

    flags = switch_flags(arbiter, crossbar, iterations, speedup, None)
    output_plan((), plot=plot)
    outcome = run_lab(HolLab(incast=incast, hot_load=hot_load, speedup=speedup, generation=generation, seed=seed,
                             arbiter=flags.arbiter, crossbar=flags.crossbar, iterations=flags.iterations))
    result = outcome.result
    if plot:
        from simulator.reports.plots.lab_hol import lab_hol

        lab_hol(result, plot)
    if as_json:
        typer.echo(json.dumps(result, indent=1))
        return
    voq = _table("HOL lab, part 1: a victim input's free flow behind packets to a hot GPU "
                 "(GB/s = 1e9 B/s, one direction)", "input queues", "speedup", "free flow GB/s",
                 "% of what its link has left", "victim's hot GB/s", "incast GB/s")
    for r in result["voq"]:
        voq.add_row("VOQ" if r["voq"] else "FIFO", f"{r['speedup']:g}", f"{r['free_GBps']:.1f}",
                    f"{r['free_pct_of_available']:.0f}", f"{r['hot_GBps']:.2f}", f"{r['incast_GBps']:.1f}")
    first = result["pools"][0]
    pools = _table(f"HOL lab, part 2: {first['n_senders']} GPUs incast over {first['cable_m']:g} m "
                   f"{first['cable']}, {first['vcs']} VCs, {first['buffer_bytes'] // 1024} KiB buffer",
                   "credit pool", "buffer for the busy VC", "simulated GB/s", "closed form GB/s", "error %")
    for r in result["pools"]:
        pools.add_row(r["policy"], f"{r['window_bytes'] / 1024:.2f} KiB", f"{r['sink_GBps']:.1f}",
                      f"{r['closed_form_GBps']:.1f}", f"{r['error_pct']:+.2f}")
    console = plain_console()
    console.print(voq)
    console.print(pools)
    console.print(outcome.explanation)


@lab_app.command()
def switch(
    ports: Annotated[int, typer.Option(help="N of the N x N switch.")] = 8,
    load: Annotated[float, typer.Option(help="Offered load (fraction of line rate) for the delay columns.")] = 0.6,
    slots: Annotated[int, typer.Option(help="Cell times measured per run (after warm-up).")] = 2000,
    design: Annotated[Optional[list[str]], typer.Option(
        help="Only these designs (repeat); default: all. Names as in the table's first column.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the traffic and of random allocators.")] = 0,
    as_json: JsonOpt = False,
    plot: Annotated[Optional[str], typer.Option(
        help="Write the lab's figure (.png, or .svg/.pdf for vector) here: throughput bars and delay-vs-load curves.")] = None,
) -> None:
    """N x N switch, uniform i.i.d. traffic: saturation throughput, VOQ fairness and delay per
    design (FIFO, VOQ + PIM / RRM / iSLIP k=1..4, output queueing), beside the published values."""
    from simulator.runner.labs import SwitchLab, run_lab

    console = plain_console(stderr=True)
    output_plan((), plot=plot)
    with console.status("simulating the switch designs ...") as status:
        outcome = run_lab(SwitchLab(ports=ports, load=load, slots=slots, design=tuple(design or ()), seed=seed,
                                    curves=plot is not None), status=status.update)
    rows = outcome.result
    if plot:
        from simulator.reports.plots.lab_switch import lab_switch

        lab_switch(rows, outcome.curves, plot)
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    table = _table(f"Switch lab: {ports}x{ports} switch, uniform i.i.d. traffic; delay in cell times at "
                   f"load {load:g}", "design", "thru", "paper", "Jain", "VOQ share", "mean", "p99")
    for r in rows:
        pub = "-" if r["published"] is None else f"{r['published']:.4f}"
        delay = ("unstable", "-") if r["mean_delay"] is None else (f"{r['mean_delay']:.2f}", f"{r['p99_delay']:.0f}")
        table.add_row(r["design"], f"{r['throughput']:.4f}", pub, f"{r['jain']:.4f}",
                      f"{r['min_voq_share']:.2f}/{r['max_voq_share']:.2f}", *delay)
    table.caption = ("thru: cells per output per cell time, saturated inputs; paper: published value; "
                     "Jain: fairness of (input, output) shares; VOQ share: min/max of a pair's cells over "
                     "1/N of its input's; delay: arrival in the input buffer to start on the output link; "
                     "unstable: load above saturation; S=N: speedup N, unbounded output queues")
    out = plain_console()
    out.print(table)
    out.print(outcome.explanation)



@lab_app.command()
def retry(
    generation: GenerationOpt = "nvlink5",
    bers: Annotated[str, typer.Option(help="Bit error rates after FEC, comma-separated.")] = "1e-12,1e-9,1e-7,1e-6,3e-6,1e-5",
    buffers: Annotated[str, typer.Option(help="Replay buffers: 2K:64K (doubling) or a list 2K,16K.")] = "2K,4K,16K,64K",
    packets: Annotated[int, typer.Option(min=100, help="Packets delivered per simulated point.")] = 40_000,
    seed: Annotated[int, typer.Option(help="Seed of the simulation's random generator.")] = 0,
    as_json: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Link-level retry: goodput vs bit error rate and replay-buffer size, closed form beside a
    seeded go-back-N simulation (one link, one direction)."""
    from simulator.runner.labs import RetryLab, run_lab

    output_plan((), plot=plot)
    outcome = run_lab(RetryLab(generation=generation, bers=bers, buffers=buffers, packets=packets, seed=seed))
    rows = outcome.result
    if plot:
        from simulator.reports.plots.lab_retry import lab_retry

        lab_retry(rows, plot)
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    r0 = rows[0]
    table = _table(f"Retry lab, {generation}: go-back-N replay, {r0['packet_bytes']:.0f} B packets, round trip "
                   f"{r0['round_trip_packets']} packets (payload {r0['rate_GBps']:.1f} GB/s, GB = 1e9 B, one direction)",
                   "buffer", "BER", "packet err", "sim GB/s", "closed GB/s", "err %", "limited by")
    for r in rows:
        table.add_row(_size(r["replay_buffer_bytes"]), f"{r['ber']:.0e}", f"{r['packet_error']:.1e}",
                      f"{r['simulated_GBps']:.2f}", f"{r['closed_form_GBps']:.2f}", f"{r['error_pct']:+.2f}",
                      r["limited_by"])
    console = plain_console()
    console.print(table)
    console.print(outcome.explanation)
