"""``fabricsim run SCENARIO.yaml``: run every workload of a scenario on each of its topologies."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from simulator.cli.common import (JSON_HELP, FaultOpt, LaunchOpt, OversubscribeOpt, PartsOpt, fault_files,
                                  fault_specs, launch_flag, output_plan, parts_flags, plain_console, print_warnings,
                                  report_console)


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        scenario: Annotated[str, typer.Argument(help="Scenario YAML, or a shipped scenario by name (nvl72_vs_hopper; see fabricsim list).")],
        json_path: Annotated[Optional[str], typer.Option("--json", help="Write all rows as JSON here" + JSON_HELP)] = None,
        csv_path: Annotated[Optional[str], typer.Option("--csv", help="Write all rows as CSV here.")] = None,
        trace: Annotated[Optional[str], typer.Option(
            help="Write a Perfetto/Chrome trace (JSON, streamed) of every run here: packets, credits and queues "
                 "(packet engine), transfers and link utilization (flow engine), and faults that strike during a run.")] = None,
        plot: Annotated[Optional[str], typer.Option(help="Write busbw vs size (or power) as .png, .svg or .pdf here.")] = None,
        fault: FaultOpt = None,
        parts: PartsOpt = None,
        launch: LaunchOpt = None,
        allow_oversubscribe: OversubscribeOpt = False,
    ) -> None:
        """Run a scenario; with two or more topologies, compare them side by side. With --fault every
        topology runs healthy and degraded, side by side."""
        from simulator.reports.export import write_csv, write_json
        from simulator.runner.scenario_run import run_scenario
        from simulator.reports.scenario_text import print_scenario, scenario_plot
        from simulator.workloads.scenario import load_scenario

        from simulator.shipped import find

        scenario = str(find(scenario, "scenarios"))
        model, topologies = load_scenario(scenario)
        if allow_oversubscribe:
            model = model.model_copy(update={"allow_oversubscribe": True})
        specs, locate = fault_specs(fault or [])
        parts, launch = parts_flags(parts), launch_flag(launch)
        from simulator.workloads.scenario import scenario_files

        inputs = output_plan([*scenario_files(scenario), *parts, *fault_files(fault)], json=json_path,
                             csv=csv_path, trace=trace, plot=plot).inputs
        observer = None
        if trace:
            from simulator.reports.trace import TraceWriter

            observer = TraceWriter(path=trace, inputs=inputs)
        console = plain_console(stderr=True)
        with console.status(f"running {model.name}") as status:
            from simulator.cli.progress import ScenarioStatus

            shown = ScenarioStatus(console, status)
            systems = run_scenario(model, topologies, observer=observer, faults=specs, locate_fault=locate,
                                   on_plan=shown.plan, on_hops=shown.hops, on_row=shown.row, parts=parts,
                                   launch=launch)
        out = report_console(stderr=json_path == "-")
        print_scenario(model, systems, out)
        print_warnings(model, out)
        payload = {"scenario": model.name, "systems": [s.as_dict() for s in systems], "warnings": list(model._warnings)}
        if json_path:
            write_json(json_path, payload, inputs)
        if csv_path:
            write_csv(csv_path, [{"system": s.name, **r} for s in systems for r in s.rows], inputs)
        if trace and observer is not None:
            observer.write()
        if plot:
            scenario_plot(systems, plot)
