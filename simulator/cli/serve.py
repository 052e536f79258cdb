"""``fabricsim serve SCENARIO``: a serving scenario's deployments at each request rate, on each topology."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from simulator.cli.common import JSON_HELP, output_plan, plain_console, report_console


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        scenario: Annotated[str, typer.Argument(help="Serving scenario YAML, or a shipped one by name "
                                                     "(serving_nvl72_vs_hopper; see fabricsim list).")],
        rate: Annotated[Optional[list[float]], typer.Option(
            "--rate", help="Offered requests per second (repeatable); replaces the scenario's load.rates.")] = None,
        deployment: Annotated[Optional[list[str]], typer.Option(
            "--deployment", help="Run only this deployment of the scenario (repeatable; by name).")] = None,
        topology: Annotated[Optional[list[str]], typer.Option(
            "--topology", help="Topology file or shipped name replacing the scenario's (repeatable).")] = None,
        duration: Annotated[Optional[float], typer.Option(
            help="Seconds of arrivals at each rate; replaces the scenario's load.duration.")] = None,
        seed: Annotated[Optional[int], typer.Option(help="Seed of the arrivals (default: the scenario's).")] = None,
        workers: Annotated[Optional[int], typer.Option(
            min=1, help="Run the system x deployment x rate combinations on a local Dask cluster of N worker "
                        "processes (as sweep runs its points); default: one after another.")] = None,
        scheduler: Annotated[Optional[str], typer.Option(
            help="Run them on a running Dask scheduler instead, e.g. tcp://10.0.0.5:8786.")] = None,
        json_path: Annotated[Optional[str], typer.Option("--json", help="Write all rows as JSON here" + JSON_HELP)] = None,
        csv_path: Annotated[Optional[str], typer.Option("--csv", help="Write all rows as CSV here" + JSON_HELP)] = None,
        plot: Annotated[Optional[str], typer.Option(
            help="Write the throughput-latency curves (TPOT p50 and TTFT p99 vs tokens/s per GPU) here "
                 "(.png, .svg or .pdf).")] = None,
        cdf_plot: Annotated[Optional[str], typer.Option(
            "--cdf-plot", help="Write the CDFs of TTFT and TPOT at the highest rate here (.png, .svg or .pdf).")] = None,
    ) -> None:
        """Serve a stream of requests (vLLM-style continuous batching over a paged KV cache, each
        iteration's kernels and collectives costed on the fabric); TTFT, TPOT, goodput, tokens/s per
        GPU and per kW. Times assume CUDA graphs unless the scenario says launch: eager."""
        from simulator.reports.export import write_csv, write_json
        from simulator.reports.fit import fit
        from simulator.reports.serve_text import OPTIONAL, headlined, pools_lines, serve_table, systems_of
        from simulator.runner.serve import ServeRequest, plan_serve, run_serve

        request = ServeRequest(scenario=scenario, topologies=tuple(topology or ()), rates=tuple(rate or ()),
                               deployments=tuple(deployment or ()), duration_s=duration, seed=seed,
                               workers=workers, scheduler=scheduler)
        planned = plan_serve(request)
        inputs = output_plan(list(planned.inputs), json=json_path, csv=csv_path, plot=plot, cdf_plot=cdf_plot).inputs
        console = plain_console(stderr=True)
        for line in planned.warnings:
            from rich.markup import escape

            console.print(f"[yellow]warning:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)
        with _Bar(console) as bar:
            outcome = headlined(run_serve(planned, on_progress=bar.update))
        if json_path:
            write_json(json_path, outcome.to_dict(), inputs)
        if csv_path:
            write_csv(csv_path, outcome.rows, inputs)
        if plot:
            from simulator.reports.plots.serving import serving_curves

            serving_curves(outcome.rows, outcome.slo, plot, outcome.name, inputs)
        if cdf_plot:
            from simulator.reports.plots.serving import serving_cdf

            serving_cdf(outcome.rows, outcome.latencies, cdf_plot, outcome.name, inputs)
        out = report_console(stderr="-" in (json_path, csv_path))
        for system in systems_of(outcome.rows):
            out.print(fit(serve_table(outcome.name, system, outcome.rows, outcome.slo), out.width, optional=OPTIONAL))
        for line in pools_lines(outcome.systems, outcome.rows):
            out.print(line, highlight=False)
        out.print(outcome.headline, highlight=False)


class _Bar:
    """A progress bar on stderr (terminals only), one step per system x deployment x rate."""

    def __init__(self, console) -> None:  # noqa: ANN001
        self.console = console
        self.progress = None
        self.task = None

    def __enter__(self) -> "_Bar":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)

    def update(self, done: int, total: int, label: str) -> None:
        if not self.console.is_terminal:
            return
        if self.progress is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=self.console, transient=True)
            self.progress.__enter__()
            self.task = self.progress.add_task("serving", total=total)
        self.progress.update(self.task, completed=done, description=label)
