"""``fabricsim compare A.yaml B.yaml ...``: the same workload on several systems, side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from simulator.cli.common import (JSON_HELP, EngineOpt, FaultOpt, HostsOpt, LaunchOpt, OversubscribeOpt, PartsOpt,
                                  PerNodeOpt, PerRackOpt, PerTrayOpt, RanksOpt, fault_files, fault_specs, launch_flag,
                                  output_plan, parts_flags, placement_flags, plain_console, print_warnings,
                                  report_console)
from simulator.errors import InputError


def register(app: typer.Typer) -> None:
    @app.command()
    def compare(
        topologies: Annotated[list[str], typer.Argument(help="Two or more topology YAML files or shipped names (hgx_h100).")],
        op: Annotated[Optional[str], typer.Option(help="Collective or copy to compare (with --sizes).")] = None,
        gpus: Annotated[Optional[int], typer.Option(min=1, help="N GPUs of each system: the first N, or where the "
                                                          "placement flags put them (default: all).")] = None,
        per_rack: PerRackOpt = None,
        per_tray: PerTrayOpt = None,
        per_node: PerNodeOpt = None,
        ranks: RanksOpt = None,
        hosts: HostsOpt = None,
        sizes: Annotated[str, typer.Option(help="1K:8G (doubling), a list 1M,64M, or one size.")] = "1M,64M,1G",
        scenario: Annotated[Optional[str], typer.Option(help="Run this scenario's workloads instead of --op.")] = None,
        engine: EngineOpt = "auto",
        json_path: Annotated[Optional[str], typer.Option("--json", help="Write the comparison as JSON here" + JSON_HELP)] = None,
        plot: Annotated[Optional[str], typer.Option(help="Write busbw vs size (.png, or .svg/.pdf for vector) here.")] = None,
        power_plot: Annotated[Optional[str], typer.Option(help="Write the power breakdown (.png, or .svg/.pdf for vector) here.")] = None,
        fault: FaultOpt = None,
        parts: PartsOpt = None,
        launch: LaunchOpt = None,
        allow_oversubscribe: OversubscribeOpt = False,
    ) -> None:
        """Compare systems: time, busbw, p99 packet latency (packet engine), energy per op, static power, with
        a ratio column.
        With --fault every system runs healthy and degraded, side by side."""
        from simulator.reports.export import write_json
        from simulator.runner.scenario_run import run_scenario
        from simulator.reports.scenario_text import print_scenario, scenario_plot
        from simulator.workloads.scenario import load_scenario, op_scenario

        if len(topologies) < 2:
            raise InputError("compare needs two or more topology files", field="topologies")
        if (op is None) == (scenario is None):
            raise InputError("give either --op (with --sizes) or --scenario", field="op")
        from simulator.cli.common import topology_path

        for topo in topologies:
            if not topology_path(topo).is_file():
                raise InputError("no such topology file (nor a shipped topology of that name: see fabricsim list)",
                                 file=topo)
        topologies = [str(topology_path(t)) for t in topologies]
        placement = placement_flags(per_rack, per_tray, per_node, ranks, hosts)
        if scenario:
            if placement or gpus:
                raise InputError("only with --op: a scenario's items say their GPUs (gpus:, tp:, placement:)",
                                 field="--gpus" if gpus else "--per-rack" if per_rack else "--per-tray" if per_tray
                                 else "--per-node" if per_node else "--ranks" if ranks else "--hosts")
            model, _ = load_scenario(scenario)
            model = model.model_copy(update={"topologies": topologies, "engine": engine})
        else:
            model = op_scenario(topologies, op, sizes, gpus, engine, placement)
        if allow_oversubscribe:
            model = model.model_copy(update={"allow_oversubscribe": True})
        from simulator.cli.progress import ScenarioStatus

        specs, locate = fault_specs(fault or [])
        parts, launch = parts_flags(parts), launch_flag(launch)
        from simulator.topology.builder import topology_files
        from simulator.workloads.scenario import scenario_files

        read = [f for t in topologies for f in topology_files(t)]
        read += scenario_files(scenario, topologies=[]) if scenario else []
        inputs = output_plan([*read, *parts, *fault_files(fault)], json=json_path, plot=plot,
                             power_plot=power_plot).inputs

        console = plain_console(stderr=True)
        with console.status("simulating") as status:
            shown = ScenarioStatus(console, status)
            systems = run_scenario(model, [Path(t) for t in topologies], on_plan=shown.plan, on_hops=shown.hops,
                                   faults=specs, locate_fault=locate, on_row=shown.row, parts=parts, launch=launch)
        out = report_console(stderr=json_path == "-")
        print_scenario(model, systems, out)
        print_warnings(model, out)
        if json_path:
            from simulator.reports.scenario_text import comparison_summary

            write_json(json_path, {"scenario": model.name, "systems": [s.as_dict() for s in systems],
                                   "summary": comparison_summary(systems), "warnings": list(model._warnings)}, inputs)
        if plot:
            scenario_plot(systems, plot)
        if power_plot:
            from simulator.reports.plots import power_breakdown
            from simulator.units import format_bytes

            sizes = sorted({r["bytes"] for s in systems for r in s.rows if r.get("bytes")})
            span = "" if not sizes else (f", {format_bytes(sizes[0])}" if len(sizes) == 1 else
                                         f", {len(sizes)} sizes {format_bytes(sizes[0])}-{format_bytes(sizes[-1])}")
            power_breakdown({s.name: s.energy() for s in systems}, power_plot,
                            title=f"Interconnect power, {model.name}{span}: average over the whole run")
