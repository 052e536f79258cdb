"""``fabricsim validate``: predict every published figure and print predicted vs published, or, with
``--nccl-tests LOG... --topology T``, every size of the user's own nccl-tests logs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from simulator.cli.common import (EngineOpt, HostsOpt, PerNodeOpt, PerRackOpt, PerTrayOpt, RanksOpt, load_fabric,
                                  placement_flags, plain_console, report_console)
from simulator.errors import InputError

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
                             "warning.")] = False,
        run: Annotated[Optional[int], typer.Option(
            "--run", min=1, help="With --nccl-tests: only the N-th test of each log (a log may hold several; "
                                 "default: every one).")] = None,
        algo: Annotated[str, typer.Option(help="With --nccl-tests: ring, tree, direct, nvls, hierarchical "
                                                "or auto (as NCCL_ALGO).")] = "auto",
        protocol: Annotated[str, typer.Option(help="With --nccl-tests: LL, LL128, Simple or auto.")] = "auto",
        engine: EngineOpt = "auto",
        in_place: Annotated[bool, typer.Option(
            "--in-place", help="With --nccl-tests: compare the in-place columns (default: out-of-place).")] = False,
    ) -> None:
        """Simulate each published measurement; exit 1 if any error exceeds the threshold.

        With --nccl-tests LOG [LOG...] --topology T: simulate every size of your own nccl-tests
        output on T and print measured vs predicted time and busbw with the error of each.
        """
        import json

        from simulator.runner.validation import DEFAULT_FILE, DEFAULT_THRESHOLD_PCT

        logs = list(nccl_tests or []) + list(more_logs or [])
        if more_logs and not nccl_tests:
            raise InputError(f"{more_logs[0]!r}: log files need --nccl-tests (validate --nccl-tests LOG... "
                             "--topology T)", field="nccl_tests")
        placement = placement_flags(per_rack, per_tray, per_node, ranks, hosts)
        if logs:
            _validate_logs(logs, topology, gpus=gpus, op=op, env=env or [], strict=strict, only=run, algo=algo,
                           placement=placement,
                           protocol=protocol, engine=engine, in_place=in_place,
                           threshold=DEFAULT_THRESHOLD_PCT if threshold is None else threshold,
                           as_json=as_json, plot=plot)
            return
        for flag, value in (("topology", topology), ("gpus", gpus), ("op", op), ("in_place", in_place),
                            ("--per-rack", per_rack), ("--per-tray", per_tray), ("--per-node", per_node),
                            ("--ranks", ranks), ("--hosts", hosts),
                            ("env", env), ("strict", strict), ("run", run),
                            ("algo", algo != "auto"), ("protocol", protocol != "auto"), ("engine", engine != "auto")):
            if value:
                raise InputError("only with --nccl-tests LOG (it sets up the simulation of a log)", field=flag)

        from simulator.runner.validation import load_published, predict

        threshold = DEFAULT_THRESHOLD_PCT if threshold is None else threshold
        from simulator.shipped import find

        path = Path(file) if file else find(DEFAULT_FILE, "validation")
        entries = load_published(path)
        root = path.resolve().parent.parent if path.resolve().parent.name == "validation" else Path.cwd()
        console = plain_console(stderr=True)
        with console.status("simulating published measurements") as status:
            rows = predict(entries, root, threshold, on_row=lambda r: status.update(r["name"]))
        failed = [r for r in rows if not r["passed"]]
        if as_json:
            typer.echo(json.dumps({"threshold_pct": threshold, "rows": rows, "failed": len(failed)}))
        else:
            from simulator.reports.fit import fit

            out = report_console()
            out.print(fit(_table(rows, threshold), out.width))
            for r in failed:  # why each failing entry disagrees, then the verdict as the last line
                out.print(f"{r['name']} ({r['error_pct']:+.1f}%): "
                          + (r["known_gap"] or "no known reason; please report it with your setup."))
            worst = max(rows, key=lambda r: abs(r["error_pct"]))
            out.print(f"{len(rows) - len(failed)} of {len(rows)} within {threshold:g}%; worst: "
                      f"{worst['name']} ({worst['error_pct']:+.1f}%).")
        if plot:
            from simulator.reports.plots.validation import validation_plot

            validation_plot(rows, threshold, plot)
        if failed:
            raise typer.Exit(1)


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


def _read_logs(logs: list[str], *, op: str | None, gpus: int | None, env: list[str], strict: bool,
               only: int | None) -> list[NcclTestsRun]:
    """Every test of every log (or the ``only``-th of each), the reader's warnings printed to standard error."""
    from rich.markup import escape

    from simulator.workloads.traces.nccl_tests_log import parse_log

    console = plain_console(stderr=True)
    runs = []
    for log in logs:
        found = parse_log(log, op=op, gpus=gpus, env=env, strict=strict)
        warnings = [w for run in found for w in run.warnings]
        for w in warnings[:MAX_WARNINGS_SHOWN]:
            console.print(f"[yellow]warning:[/yellow] {escape(str(w))}", highlight=False, soft_wrap=True)
        if len(warnings) > MAX_WARNINGS_SHOWN:
            console.print(f"[yellow]warning:[/yellow] {escape(log)}: {len(warnings) - MAX_WARNINGS_SHOWN} more "
                          "(--json lists every one)", highlight=False, soft_wrap=True)
        if only is not None:
            if only > len(found):
                raise InputError(f"--run {only}: the log holds {len(found)} test{'s' if len(found) != 1 else ''}",
                                 file=log)
            found = (found[only - 1],)
        runs += found
    return runs


def _validate_logs(logs: list[str], topology: str | None, *, gpus: int | None, op: str | None, env: list[str],
                   strict: bool, only: int | None, algo: str, protocol: str, engine: str, in_place: bool,
                   threshold: float, as_json: bool, plot: str | None, placement=None) -> None:  # noqa: ANN001
    """Every size of every nccl-tests log: measured vs predicted, a table per test, one summary."""
    import json

    from simulator.runner.nccl_tests_validation import compare_run, row_counts, run_label, settings_for, summarize

    if topology is None:
        raise InputError("--nccl-tests needs --topology T, the topology YAML of the measured system",
                         field="topology")
    if plot and any(Path(plot).resolve() == Path(item).resolve() for item in [*logs, topology]):
        raise InputError("refusing to overwrite an input file with the plot; name another file", field="plot")
    runs = _read_logs(logs, op=op, gpus=gpus, env=env, strict=strict, only=only)
    fabric = load_fabric(topology)
    console = plain_console(stderr=True)
    results = []
    with console.status("simulating the logged sizes") as status:
        for run in runs:
            rows = compare_run(fabric, run, algo=algo, protocol=protocol, engine=engine,
                               in_place=in_place, threshold_pct=threshold, placement=placement,
                               on_row=lambda r, run=run: status.update(f"{run_label(run, r['ranks'])}: {r['bytes']} B"))
            results.append((run, rows))
    every = [r for _, rows in results for r in rows]
    total = summarize(every)
    failed = [r for r in every if not r["passed"]]
    if as_json:
        typer.echo(json.dumps({"topology": topology, "threshold_pct": threshold,
                               "gpu_placement": placement.describe() if placement else None,
                               "summary": total.as_dict(),
                               "failed": len(failed),
                               "row_counts": _total_counts(runs),
                               "logs": [{"log": run.path, "test": run.test, "op": run.op, "op_from": run.op_from,
                                         "ranks_in_log": run.ranks, "ranks_from": run.ranks_from,
                                         "hosts": list(run.hosts), "gpu": list(run.gpu_names),
                                         "nccl_version": run.nccl_version, "columns_from": run.columns_from,
                                         "env": {k: v for k, v, _ in run.nccl_env},
                                         "settings_from_log": list(settings_for(run, algo, protocol).notes),
                                         "row_counts": row_counts(run).as_dict(),
                                         "warnings": [str(w) for w in run.warnings],
                                         "summary": summarize(rows).as_dict(),
                                         "rows": rows} for run, rows in results]}))
    else:
        from simulator.reports.fit import fit

        out = report_console()
        for run, rows in results:
            out.print(fit(_log_table(run, rows, fabric.name, in_place), out.width))
            for note in settings_for(run, algo, protocol).notes:
                out.print(f"  from the log: {note}", highlight=False)
            out.print(_summary_line(summarize(rows), "  this log"), highlight=False)
            out.print(f"  rows: {_counts_text(row_counts(run).as_dict())}", highlight=False)
        if len(results) > 1:
            out.print(_summary_line(total, f"all {len(results)} logs"), highlight=False)
            out.print(f"all {len(results)} logs' rows: {_counts_text(_total_counts(runs))}", highlight=False)
        out.print(f"{len(every) - len(failed)} of {len(every)} sizes within {threshold:g}% "
                  "(busbw error; time error where the log's busbw is below 1 GB/s).")
    if plot:
        from simulator.reports.plots import busbw_vs_size

        series, measured = {}, []
        for i, (run, rows) in enumerate(results, start=1):
            label = run_label(run, rows[0]["ranks"])
            label += f" (test {i})" if label in series else ""
            series[label] = _with_gaps([(r["bytes"], r["predicted_busbw_GBps"]) for r in rows])
            measured += [(label, r["bytes"], r["measured_busbw_GBps"]) for r in rows]
        busbw_vs_size(series, measured, path=plot, points_label="measured", line_label="fabricsim",
                      title=f"Measured (markers) vs fabricsim on {fabric.name} (lines), "
                            f"{'in-place' if in_place else 'out-of-place'}")
    if failed:
        raise typer.Exit(1)


def _total_counts(runs: list[NcclTestsRun]) -> dict:
    from simulator.runner.nccl_tests_validation import row_counts

    keys = ("used", "skipped", "zero_bytes", "unusable")
    return {k: sum(row_counts(run).as_dict()[k] for run in runs) for k in keys}


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
    where = f", {hosts} host{'s' if hosts != 1 else ''}" if hosts else ""
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
