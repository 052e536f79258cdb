"""``fabricsim sweep SWEEP.yaml``: the product of a sweep file's axes on a Dask cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from simulator.cli.common import JSON_HELP, plain_console

if TYPE_CHECKING:
    from rich.console import Console


def register(app: typer.Typer) -> None:
    @app.command()
    def sweep(
        sweep_file: Annotated[str, typer.Argument(metavar="SWEEP", help="Sweep file (YAML), e.g. "
                                                  "scenarios/sweep_credit_buffer.yaml.")],
        workers: Annotated[Optional[int], typer.Option(
            help="Worker processes of the local Dask cluster (default: one per core).", min=1)] = None,
        scheduler: Annotated[Optional[str], typer.Option(
            help="Use a running Dask scheduler instead, e.g. tcp://10.0.0.5:8786.")] = None,
        json_path: Annotated[Optional[str], typer.Option("--json", help="Write all rows as JSON here" + JSON_HELP)] = None,
        csv_path: Annotated[Optional[str], typer.Option("--csv", help="Write all rows as CSV here" + JSON_HELP)] = None,
        plot: Annotated[Optional[str], typer.Option(
            help="Write the metric against the first axis (.png, or .svg/.pdf for vector) here.")] = None,
        metric: Annotated[Optional[str], typer.Option(
            help="Column to plot (default: busbw_GBps, simulated_GBps or time_us by base).")] = None,
        cache: Annotated[Optional[str], typer.Option(
            help="Result cache folder (default: $FABRICSIM_CACHE or ~/.cache/fabricsim/sweeps).")] = None,
        no_cache: Annotated[bool, typer.Option("--no-cache", help="Simulate every point again.")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="List the points and stop.")] = False,
    ) -> None:
        """Run every point of a sweep file on Dask (cached by content hash); one row per point."""
        from simulator.reports.export import write_csv, write_json
        from simulator.runner.sweep_run import SweepRequest, plan_sweep_file, run_sweep

        request = SweepRequest(file=sweep_file, workers=workers, scheduler=scheduler, cache=cache, no_cache=no_cache)
        loaded = plan_sweep_file(request)
        if dry_run:
            for p in loaded.points:
                typer.echo(f"{p.index:4d}  {p.digest[:12]}  " + "  ".join(f"{k}={v}" for k, v in p.axes.items()))
            return
        from simulator.cli.common import output_plan

        inputs = output_plan(loaded.inputs, json=json_path, csv=csv_path, plot=plot).inputs
        console = plain_console(stderr=True)
        with (_progress(console, loaded.model.name, len(loaded.points)) if console.is_terminal else _quiet()) as bar:
            outcome = run_sweep(loaded, request, on_point=lambda _o: bar.advance())
        rows, axes = outcome.rows, outcome.axes
        if json_path:
            write_json(json_path, outcome.to_dict(), inputs)
        if csv_path:
            write_csv(csv_path, rows, inputs)
        chosen = metric or outcome.metric
        columns = {k for row in rows for k in row if k != "error"}
        if plot and rows and chosen not in columns:
            from simulator.errors import InputError

            raise InputError(f"no column {chosen!r} to plot; choose one of {', '.join(sorted(columns))} "
                             "(any --json/--csv output was written)", field="metric")
        if plot:
            from simulator.reports.plots.sweep import sweep_plot

            sweep_plot(rows, axes, chosen, plot, title=outcome.name, inputs=inputs)
        from simulator.cli.common import report_console
        from simulator.reports.fit import fit
        from simulator.reports.sweep_text import optional_columns, sweep_table

        out = report_console(stderr="-" in (json_path, csv_path))  # standard output carries the data
        table = sweep_table(outcome.name, axes, rows, outcome.outcomes)
        out.print(fit(table, out.width, optional=optional_columns(table, axes)))
        if outcome.failed:
            for o in outcome.failed:
                typer.echo(f"fabricsim: point {o.point.index} ({', '.join(f'{k}={v}' for k, v in o.point.axes.items())})"
                           f" failed: {o.error}", err=True)
            raise typer.Exit(1)


class _quiet:
    """No progress bar (output is not a terminal)."""

    def __enter__(self) -> "_quiet":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def advance(self) -> None:
        return None


class _progress:
    """A rich progress bar on stderr, advanced once per finished (or cached) point."""

    def __init__(self, console: Console, title: str, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console, transient=True)
        self.task = self.progress.add_task(title, total=total)

    def __enter__(self) -> "_progress":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)

    def advance(self) -> None:
        self.progress.advance(self.task)
