"""``fabricsim validate``: predict every published figure and print predicted vs published, or, with
``--nccl-tests LOG... --topology T``, every size of the user's own nccl-tests logs."""

from __future__ import annotations

import textwrap
from collections import Counter
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from simulator.cli.common import (EngineOpt, HostsOpt, PerNodeOpt, PerRackOpt, PerTrayOpt, RanksOpt, output_plan,
                                  placement_flags, plain_console, report_console)
from simulator.errors import InputError
from simulator.hardware.protocols import PROTOCOL_NAMES
from simulator.workloads.collectives.registry import algorithm_help

if TYPE_CHECKING:
    from rich.table import Table
    from simulator.runner.nccl_tests_validation import Summary
    from simulator.workloads.traces.nccl_tests_log import NcclTestsRun


def register(app: typer.Typer) -> None:
    @app.command()
    def validate(
        file: Annotated[Optional[str], typer.Option(
            help="Published figures (YAML); default validation/published.yaml.")] = None,
        threshold: Annotated[Optional[float], typer.Option(
            help="Fail (exit 1) if any |error| exceeds this, in %; default 10.")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the rows as one JSON object.")] = False,
        plot: Annotated[Optional[str], typer.Option(help="Write predicted vs published (.png, or .svg/.pdf for vector) here.")] = None,
        nccl_tests: Annotated[Optional[list[str]], typer.Option(
            "--nccl-tests", help="nccl-tests output (all_reduce_perf ... > LOG) to predict size by size; "
                                 "more LOGs may follow as arguments. Needs --topology.")] = None,
        more_logs: Annotated[Optional[list[str]], typer.Argument(
            metavar="[LOG]...", help="Further nccl-tests logs (with --nccl-tests).", show_default=False)] = None,
        topology: Annotated[Optional[str], typer.Option(
            help="With --nccl-tests: the topology YAML of the measured system.")] = None,
        gpus: Annotated[Optional[int], typer.Option(
            min=1, help="With --nccl-tests: the rank count, where the log does not say it (it must agree where "
                        "it does).")] = None,
        per_rack: PerRackOpt = None,
        per_tray: PerTrayOpt = None,
        per_node: PerNodeOpt = None,
        ranks: RanksOpt = None,
        hosts: HostsOpt = None,
        op: Annotated[Optional[str], typer.Option(
            help="With --nccl-tests: the operation, when the log does not name its binary (it must agree "
                 "where it does).")] = None,
        env: Annotated[Optional[list[str]], typer.Option(
            "--env", metavar="K=V", help="With --nccl-tests: an NCCL setting of the run (repeatable, e.g. "
                                         "--env NCCL_ALGO=Ring), where the log does not show it (it must agree "
                                         "where it does).")] = None,
        strict: Annotated[bool, typer.Option(
            "--strict", help="With --nccl-tests: a log line that cannot be used is an error (exit 2), not a "
                             "warning (a note on a line used as it is, such as wrong results its time is "
                             "kept with, stays a warning).")] = False,
        run: Annotated[Optional[int], typer.Option(
            "--run", min=1, help="With --nccl-tests: only the N-th test of each log (a log may hold several; "
                                 "default: every one).")] = None,
        algo: Annotated[str, typer.Option(help=f"With --nccl-tests: {algorithm_help()} (as NCCL_ALGO).")] = "auto",
        protocol: Annotated[str, typer.Option(help=f"With --nccl-tests: {', '.join(PROTOCOL_NAMES)} or auto.")] = "auto",
        engine: EngineOpt = "auto",
        in_place: Annotated[bool, typer.Option(
            "--in-place", help="With --nccl-tests: compare the in-place columns (default: out-of-place).")] = False,
    ) -> None:
        """Simulate each published measurement; exit 1 if any error exceeds the threshold.

        With --nccl-tests LOG [LOG...] --topology T: simulate every size of your own nccl-tests
        output on T and print measured vs predicted time and busbw with the error of each.
        """
        import json

        from simulator.runner.validate import ValidateRequest, plan_validate, run_validate

        logs = list(nccl_tests or []) + list(more_logs or [])
        if more_logs and not nccl_tests:
            raise InputError(f"{more_logs[0]!r}: log files need --nccl-tests (validate --nccl-tests LOG... "
                             "--topology T)", field="nccl_tests")
        request = ValidateRequest(file=file, threshold=threshold, logs=tuple(logs), topology=topology, gpus=gpus,
                                  placement=placement_flags(per_rack, per_tray, per_node, ranks, hosts), op=op,
                                  env=tuple(env or ()), strict=strict, run=run, algo=algo, protocol=protocol,
                                  engine=engine, in_place=in_place)
        planned = plan_validate(request)
        output_plan(list(planned.inputs), plot=plot)  # a bad --plot fails before the simulation
        console = plain_console(stderr=True)
        if logs:
            _print_warnings(planned.runs, console)
        with console.status("simulating the logged sizes" if logs else "simulating published measurements") as status:
            outcome = run_validate(planned, on_row=status.update)
        if as_json:
            typer.echo(json.dumps(outcome.to_dict()))
        elif logs:
            _print_logs(outcome)
        else:
            _print_published(outcome)
        if plot:
            if logs:
                _logs_plot(outcome, plot)
            else:
                from simulator.reports.plots.validation import validation_plot

                validation_plot(outcome.rows, request.threshold_pct, plot)
        if outcome.failed:
            raise typer.Exit(1)


def _print_published(outcome) -> None:  # noqa: ANN001 - runner.validate.ValidateOutcome
    from simulator.reports.fit import fit

    rows, failed, threshold = outcome.rows, outcome.failed, outcome.request.threshold_pct
    out = report_console()
    out.print(fit(_table(rows, threshold), out.width))
    for r in failed:  # why each failing entry disagrees, then the verdict as the last line
        out.print(f"{r['name']} ({r['error_pct']:+.1f}%): "
                  + (r["known_gap"] or "no known reason; please report it with your setup."))
    worst = max(rows, key=lambda r: abs(r["error_pct"]))
    out.print(f"{len(rows) - len(failed)} of {len(rows)} within {threshold:g}%; worst: "
              f"{worst['name']} ({worst['error_pct']:+.1f}%).")


def _table(rows: list[dict], threshold: float) -> Table:
    from rich.table import Table

    from simulator.reports.nccl_table import how

    table = Table(title=f"Validation against published figures (pass: |error| <= {threshold:g}%)",
                  title_justify="left", title_style="bold")
    for col in ("entry", "metric", "algo/proto/ch/engine", "predicted", "published", "error %", "ok"):
        table.add_column(col, justify="left" if col in ("entry", "metric", "algo/proto/ch/engine") else "right")
    for r in rows:
        table.add_row(r["name"], r["metric"], how(r),
                      f"{r['predicted']:.1f}", f"{r['published']:.1f}", f"{r['error_pct']:+.1f}",
                      "yes" if r["passed"] else "[red]NO[/red]")
    return table


MAX_WARNINGS_SHOWN = 100
"""Warnings printed per log (all of them go to --json)."""


def _print_warnings(runs, console) -> None:  # noqa: ANN001
    """The reader's warnings of each log (the first ``MAX_WARNINGS_SHOWN``), on standard error."""
    from rich.markup import escape

    by_log: dict[str, list] = {}
    for run in runs:
        by_log.setdefault(run.path, []).extend(run.warnings)
    for log, warnings in by_log.items():
        for w in warnings[:MAX_WARNINGS_SHOWN]:
            console.print(f"[yellow]warning:[/yellow] {escape(str(w))}", highlight=False, soft_wrap=True)
        if len(warnings) > MAX_WARNINGS_SHOWN:
            console.print(f"[yellow]warning:[/yellow] {escape(log)}: {len(warnings) - MAX_WARNINGS_SHOWN} more "
                          "(--json lists every one)", highlight=False, soft_wrap=True)


def _print_logs(outcome) -> None:  # noqa: ANN001 - runner.validate.ValidateOutcome
    """Per test of each log: measured vs predicted, its settings from the log, its summary; then
    the summary of every log."""
    from simulator.reports.fit import fit
    from simulator.runner.nccl_tests_validation import row_counts, summarize

    request, results = outcome.request, outcome.results
    out = report_console()
    tests = Counter(run.path for run, _ in results)
    for run, rows in results:
        out.print(fit(_log_table(run, rows, outcome.system, request.in_place), out.width))
        for note in outcome.notes(run):
            out.print(_hanging(f"  from the log: {note}", out.width), highlight=False)
        out.print(_hanging(_summary_line(summarize(rows), "  this log" if tests[run.path] == 1 else "  this test"),
                           out.width), highlight=False)
        out.print(f"  rows: {_counts_text(row_counts(run).as_dict())}", highlight=False)
    every, failed = outcome.every, outcome.failed
    if len(results) > 1:
        every_one = (f"all {len(results)} logs" if len(tests) == len(results) else
                     f"all {len(results)} tests of the log" if len(tests) == 1 else
                     f"all {len(results)} tests of {len(tests)} logs")
        out.print(_hanging(_summary_line(summarize(every), every_one), out.width), highlight=False)
        out.print(f"rows of {every_one}: {_counts_text(outcome.row_counts())}", highlight=False)
    out.print(_hanging(f"{len(every) - len(failed)} of {len(every)} sizes within {request.threshold_pct:g}% "
                       "(busbw error; time error where the log's busbw is below 1 GB/s).", out.width), highlight=False)


def _hanging(text: str, width: int) -> str:
    """``text`` wrapped to ``width``, its later lines indented two more than its first (a long note
    or summary reads as one item, not as lines at the margin)."""
    lead = " " * (len(text) - len(text.lstrip()) + 2)
    return textwrap.fill(text, max(width, 40), subsequent_indent=lead, break_on_hyphens=False,
                         break_long_words=False)


def _logs_plot(outcome, plot: str) -> None:  # noqa: ANN001 - runner.validate.ValidateOutcome
    from simulator.reports.plots import busbw_vs_size
    from simulator.runner.nccl_tests_validation import run_label

    series, measured = {}, []
    for i, (run, rows) in enumerate(outcome.results, start=1):
        label = run_label(run, rows[0]["ranks"])
        label += f" (test {i})" if label in series else ""
        series[label] = _with_gaps([(r["bytes"], r["predicted_busbw_GBps"]) for r in rows])
        measured += [(label, r["bytes"], r["measured_busbw_GBps"]) for r in rows]
    busbw_vs_size(series, measured, path=plot, points_label="measured", line_label="fabricsim",
                  title=f"Measured (markers) vs fabricsim on {outcome.system} (lines), "
                        f"{'in-place' if outcome.request.in_place else 'out-of-place'}")


def _counts_text(counts: dict) -> str:
    """``29 used, 3 skipped (2 of 0 B, 1 unusable: warnings above)``."""
    parts = []
    if counts["zero_bytes"]:
        parts.append(f"{counts['zero_bytes']} of 0 B")
    if counts["unusable"]:
        parts.append(f"{counts['unusable']} unusable: warnings above")
    return f"{counts['used']} used, {counts['skipped']} skipped" + (f" ({', '.join(parts)})" if parts else "")


def _log_table(run: NcclTestsRun, rows: list[dict], system: str, in_place: bool) -> Table:
    from simulator.reports.nccl_table import how
    from simulator.runner.nccl_tests_validation import run_label
    from simulator.units import format_bytes

    hosts = len(run.hosts)
    listed = len(run.rank_lines) < rows[0]["ranks"]  # a cut device list names only some hosts
    where = f", {hosts} host{'s' if hosts != 1 else ''}{' in its device lines' if listed else ''}" if hosts else ""
    gpu = f", {run.gpu_names[0]}" if len(run.gpu_names) == 1 else ""
    title = (f"{run_label(run, rows[0]['ranks'])}{where}{gpu}\n"
             f"measured ({'in-place' if in_place else 'out-of-place'} columns) vs fabricsim on {system}")
    from rich.table import Table

    table = Table(title=title, title_justify="left", title_style="bold")
    for col in ("size", "time meas (us)", "time pred (us)", "time err %", "busbw meas (GB/s)",
                "busbw pred (GB/s)", "busbw err %", "algo/proto/ch/engine"):
        table.add_column(col, justify="left" if col == "algo/proto/ch/engine" else "right")
    for r in rows:
        busbw_err = f"{r['busbw_error_pct']:+.1f}" if r["busbw_error_pct"] is not None else "-"
        table.add_row(format_bytes(r["bytes"]), _time(r["measured_time_us"]), _time(r["predicted_time_us"]),
                      f"{r['time_error_pct']:+.1f}", f"{r['measured_busbw_GBps']:.2f}",
                      f"{r['predicted_busbw_GBps']:.2f}", busbw_err,
                      how(r))
    return table


PLOT_JOIN_MAX_RATIO = 4
"""Predicted points further apart than this size ratio are not joined by a line: a log that skips
sizes gets no drawn curve where nothing was simulated."""


def _with_gaps(points: list[tuple[int, float]]) -> list[tuple[float, float]]:
    """``points`` in size order with a NaN (a break in the line) between sizes too far apart."""
    out: list[tuple[float, float]] = []
    for size, value in sorted(points):
        if out and size > out[-1][0] * PLOT_JOIN_MAX_RATIO:
            out.append(((out[-1][0] * size) ** 0.5, float("nan")))
        out.append((size, value))
    return out


def _time(us: float) -> str:
    """Time as nccl-tests prints it: 4 significant digits below 10 ms."""
    return f"{us:.2f}" if us < 100 else f"{us:.1f}" if us < 10_000 else f"{us:.0f}"


def _summary_line(s: Summary, who: str) -> str:
    from simulator.units import format_bytes

    busbw = (f"busbw |error| median {s.busbw_median_pct:.1f}%, worst {s.busbw_worst_pct:.1f}% at "
             f"{format_bytes(s.busbw_worst_bytes)}" if s.busbw_median_pct is not None else "busbw: no size above 1 GB/s")
    return (f"{who}: {s.rows} size{'s' if s.rows != 1 else ''}; {busbw}; time |error| median {s.time_median_pct:.1f}%, "
            f"worst {s.time_worst_pct:.1f}% at {format_bytes(s.time_worst_bytes)}")
