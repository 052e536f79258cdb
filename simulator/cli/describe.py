"""``fabricsim describe TOPOLOGY.yaml [--json]``: counts, bandwidth, bisection, power, cables."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from simulator.cli.common import FaultOpt

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def register(app: typer.Typer) -> None:
    @app.command()
    def describe(
        topology: Annotated[str, typer.Argument(help="Topology YAML file, or a shipped topology by name (gb200_nvl72; see fabricsim list).")],
        as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")] = False,
        plot: Annotated[Optional[str], typer.Option(help="Write a drawing of the topology in tiers (.png, or .svg/.pdf for vector) here.")] = None,
        fault: FaultOpt = None,
    ) -> None:
        """Summarize a topology: devices, links, per-GPU and bisection bandwidth, static power."""
        from simulator.cli.common import output_plan, topology_path
        from simulator.runner.fabrics import load_fabric
        from simulator.topology.builder import topology_files
        from simulator.topology.describe import describe as summarize
        from simulator.topology.fault_file import fault_inputs

        fabric = load_fabric(topology, fault or ())
        output_plan([*topology_files(topology_path(topology)), *fault_inputs(fault or ())], plot=plot)
        if fabric.changes:  # faults during the run: describe what is left after the last one
            from dataclasses import replace

            fabric = replace(fabric.changes[-1].fabric, faults=fabric.faults)
        summary = summarize(fabric)
        if plot:
            from simulator.reports.plots import topology_drawing

            topology_drawing(fabric, plot, title=fabric.name)
        if as_json:
            typer.echo(json.dumps(summary))
        else:
            from simulator.cli.common import report_console

            print_summary(summary, report_console())


def _table(title: str, *columns: str) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left", title_style="bold")
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right")
    return table


def _n(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.3g}"


def print_summary(s: dict[str, Any], console: Console) -> None:
    """Rich tables of a :func:`simulator.topology.describe.describe` dict."""
    console.print(f"[bold]{s['name']}[/bold]: {s['gpus']} GPUs, {s['switch_chips']} switch chips, "
                  f"{s['links']:,} links, {s['lane_pairs']:,} lane pairs (differential pairs, both directions)")
    if s.get("faults"):
        console.print(f"faults applied: {'; '.join(s['faults'])}")
    devices = _table("Devices", "part", "count")
    for part, count in s["devices"].items():
        devices.add_row(part, f"{count:,}")
    links = _table("Links", "generation", "links")
    for gen, count in s["links_by_generation"].items():
        links.add_row(gen, f"{count:,}")
    console.print(devices, links)
    bw = _table("Bandwidth (data rate: after encoding and FEC, GB = 1e9 B)", "", "GB/s per direction",
                "GB/s bidirectional")
    for fabric, v in s["per_gpu_GBps"].items():
        bw.add_row(f"per GPU, {fabric}", _n(v["per_direction"]), _n(v["bidirectional"]))
    bis = s["bisection_GBps"]
    bw.add_row("bisection (rank halves, max flow)", _n(bis["per_direction"]), _n(bis["bidirectional"]))
    from simulator.reports.fit import fit

    console.print(fit(bw, console.width))
    power = _table("Static interconnect power", "component", "W")
    for kind, watts in s["power_W"].items():
        if kind != "total":
            power.add_row(kind, _n(watts))
    power.add_row("[bold]total[/bold]", f"[bold]{_n(s['power_W']['total'])}[/bold]")
    console.print(power)
    if s["cables"]:
        cables = _table("Cables (one per link)", "kind", "count")
        for kind, count in s["cables"].items():
            cables.add_row(kind, f"{count:,}")
        console.print(cables)
    for warning in s["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {warning}")
