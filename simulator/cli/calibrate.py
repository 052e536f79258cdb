"""``fabricsim calibrate [-o FILE] [--from-json RAW.json] [--raw-out RAW.json] [--force] [--json F]``:
measure this machine's GPU (PyTorch with CUDA: ``pip install 'fabricsim[calibrate]'``) or read a
recorded run, fit the kernel model's constants, write them as a parts override file, and print
every microbenchmark point against the fitted model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from simulator.cli.common import JSON_HELP

if TYPE_CHECKING:
    from rich.console import Console

    from simulator.calibrate.fit import Calibration



def register(app: typer.Typer) -> None:
    @app.command()
    def calibrate(
        output: Annotated[Optional[str], typer.Option(
            "-o", "--output", help="The override file to write (default: calibration-<gpu part>.yaml here).")] = None,
        from_json: Annotated[Optional[str], typer.Option(
            "--from-json", help="Fit a recorded run (microbench JSON) instead of measuring; needs no GPU.")] = None,
        raw_out: Annotated[Optional[str], typer.Option(
            "--raw-out", help="Also keep the raw microbenchmark results (JSON) here.")] = None,
        force: Annotated[bool, typer.Option("--force", help="Replace an existing output file.")] = False,
        json_path: Annotated[Optional[str], typer.Option(
            "--json", help="Write the fit and every point checked as JSON to this file" + JSON_HELP)] = None,
    ) -> None:
        """Measure the GPU (or read a recorded run), fit the kernel model, write a calibration file."""
        from simulator.runner.calibrate_run import CalibrateRequest, NoGpu, run_calibrate

        request = CalibrateRequest(output=output, from_json=from_json, raw_out=raw_out, force=force,
                                   quiet_stdout=json_path == "-")
        try:
            outcome = run_calibrate(request)
        except NoGpu as why:
            typer.echo(str(why), err=True)
            raise typer.Exit(2) from None
        from simulator.cli.common import report_console

        console = report_console(stderr=json_path == "-")
        print_report(outcome.calibration, console)
        console.print(f"wrote {outcome.file}: pass it with --parts {outcome.file} or list it under a topology's "
                      "parts:", markup=False, highlight=False)
        if json_path:
            from simulator.reports.export import write_json

            write_json(json_path, outcome.to_dict(), list(outcome.inputs))


def _time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:,.3f} ms"
    if 0 < seconds < 1e-7:
        return f"{seconds * 1e9:,.3f} ns"
    return f"{seconds * 1e6:,.2f} us"


def _value(row: Any, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f} W" if row.unit == "W" else _time(value)


def _err(error: float | None) -> str:
    return "-" if error is None else f"{error * 100:+.1f}%"


def print_report(cal: Calibration, console: Console) -> None:
    """The fitted values, every point against the fitted model, and the worst error per bench."""
    from rich.table import Table

    from simulator.reports.fit import fit

    values = Table(title=f"Fitted for {cal.gpu} ({cal.part}, {cal.architecture}), {cal.date[:10]}",
                   title_justify="left", title_style="bold")
    values.add_column("field")
    values.add_column("value", justify="right")
    for key, value in cal.values.items():
        if isinstance(value, dict):
            for sub, v in value.items():
                values.add_row(f"{key}.{sub}", _time(v) if key.endswith("_s") else f"{v:.3f}")
        elif key.endswith("_s"):
            values.add_row(key, _time(value))
        elif key.endswith("_Bps"):
            values.add_row(key, f"{value / 1e9:,.1f} GB/s")
        else:
            values.add_row(key, f"{value:.3f}")
    console.print(fit(values, console.width))
    points = Table(title="Every microbenchmark point against the fitted model (error = model / measured - 1)",
                   title_justify="left", title_style="bold")
    for name, justify in (("bench", "left"), ("point", "left"), ("measured", "right"), ("model", "right"),
                          ("error", "right"), ("achieved", "right")):
        points.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in cal.rows:
        points.add_row(row.bench, row.point, _value(row, row.measured), _value(row, row.predicted), _err(row.error),
                       row.achieved or "-")
    console.print(fit(points, console.width, optional=["achieved"]))
    worst = Table(title="Worst error per bench", title_justify="left", title_style="bold")
    for name, justify in (("bench", "left"), ("points", "right"), ("worst point", "left"), ("error", "right"),
                          ("median |error|", "right")):
        worst.add_column(name, justify=justify)  # type: ignore[arg-type]
    for bench, row in cal.worst().items():
        errs = sorted(abs(r.error) for r in cal.rows if r.bench == bench and r.error is not None)
        median = errs[len(errs) // 2] if len(errs) % 2 else (errs[len(errs) // 2 - 1] + errs[len(errs) // 2]) / 2
        worst.add_row(bench, str(len(errs)), row.point, _err(row.error), f"{median * 100:.1f}%")
    console.print(fit(worst, console.width))
    for note in cal.notes:
        console.print(f"note: {note}", markup=False, highlight=False)
