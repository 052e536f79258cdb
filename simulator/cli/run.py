"""``fabricsim run SCENARIO.yaml``: run every workload of a scenario on each of its topologies."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from simulator.cli.common import (JSON_HELP, FaultOpt, LaunchOpt, OversubscribeOpt, PartsOpt, output_plan,
                                  plain_console, print_warnings, report_console)


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        scenario: Annotated[str, typer.Argument(help="Scenario YAML, or a shipped scenario by name (nvl72_vs_hopper; see fabricsim list).")],
        json_path: Annotated[Optional[str], typer.Option("--json", help="Write all rows as JSON here" + JSON_HELP)] = None,
        csv_path: Annotated[Optional[str], typer.Option("--csv", help="Write all rows as CSV here" + JSON_HELP)] = None,
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
        from simulator.runner.scenarios import ScenarioRequest

        render(ScenarioRequest(scenario=scenario, faults=tuple(fault or ()), parts=tuple(parts or ()),
                               launch=launch, allow_oversubscribe=allow_oversubscribe),
               json_path=json_path, csv_path=csv_path, trace=trace, plot=plot)


def render(request, json_path: str | None = None, csv_path: str | None = None,  # noqa: ANN001
           trace: str | None = None, plot: str | None = None, power_plot: str | None = None) -> None:
    """Plan a ``run`` or ``compare`` request, check its outputs, run it with a status line, print
    its tables and warnings, and write what was asked (``--json`` is ``outcome.to_dict()``)."""
    from simulator.cli.progress import ScenarioStatus
    from simulator.reports.outcomes import summarized
    from simulator.reports.scenario_text import print_scenario, scenario_plot
    from simulator.runner.scenarios import plan_scenario, run_request

    planned = plan_scenario(request)
    inputs = output_plan(list(planned.inputs), json=json_path, csv=csv_path, trace=trace, plot=plot,
                         power_plot=power_plot).inputs
    observer = None
    if trace:
        from simulator.reports.trace import TraceWriter

        observer = TraceWriter(path=trace, inputs=inputs)
    console = plain_console(stderr=True)
    with console.status(f"running {planned.model.name}" if request.command == "run" else "simulating") as status:
        shown = ScenarioStatus(console, status)
        outcome = summarized(run_request(planned, observer=observer, on_row=shown.row, on_plan=shown.plan,
                                         on_hops=shown.hops))
    out = report_console(stderr="-" in (json_path, csv_path))  # standard output carries the data
    print_scenario(planned.model, outcome.systems, out)
    print_warnings(planned.model, out)
    if json_path:
        from simulator.reports.export import write_json

        write_json(json_path, outcome.to_dict(), inputs)
    if csv_path:
        from simulator.reports.export import write_csv

        write_csv(csv_path, outcome.rows, inputs)
    if trace and observer is not None:
        observer.write()
    if plot:
        scenario_plot(outcome.systems, plot)
    if power_plot:
        from simulator.reports.plots import power_breakdown
        from simulator.units import format_bytes

        systems = outcome.systems
        sizes = sorted({r["bytes"] for s in systems for r in s.rows if r.get("bytes")})
        span = "" if not sizes else (f", {format_bytes(sizes[0])}" if len(sizes) == 1 else
                                     f", {len(sizes)} sizes {format_bytes(sizes[0])}-{format_bytes(sizes[-1])}")
        power_breakdown({s.name: s.energy() for s in systems}, power_plot,
                        title=f"Interconnect power, {planned.model.name}{span}: average over the whole run")
