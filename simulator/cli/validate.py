"""``fabricsim validate``: predict every published figure and print predicted vs published."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table


def register(app: typer.Typer) -> None:
    @app.command()
    def validate(
        file: Annotated[Optional[str], typer.Option(
            help="Published figures (YAML); default validation/published.yaml.")] = None,
        threshold: Annotated[Optional[float], typer.Option(
            help="Fail (exit 1) if any |error| exceeds this, in %; default 10.")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the rows as one JSON object.")] = False,
        plot: Annotated[Optional[str], typer.Option(help="Write predicted vs published (PNG) here.")] = None,
    ) -> None:
        """Simulate each published measurement; exit 1 if any error exceeds the threshold."""
        import json

        from simulator.reports.validation import DEFAULT_FILE, DEFAULT_THRESHOLD_PCT, load_published, predict

        threshold = DEFAULT_THRESHOLD_PCT if threshold is None else threshold
        path = Path(file) if file else DEFAULT_FILE
        entries = load_published(path)
        root = path.resolve().parent.parent if path.resolve().parent.name == "validation" else Path.cwd()
        console = Console(stderr=True)
        with console.status("simulating published measurements") as status:
            rows = predict(entries, root, threshold, on_row=lambda r: status.update(r["name"]))
        failed = [r for r in rows if not r["passed"]]
        if as_json:
            typer.echo(json.dumps({"threshold_pct": threshold, "rows": rows, "failed": len(failed)}))
        else:
            Console().print(_table(rows, threshold))
            worst = max(rows, key=lambda r: abs(r["error_pct"]))
            Console().print(f"{len(rows) - len(failed)} of {len(rows)} within {threshold:g}%; worst: "
                            f"{worst['name']} ({worst['error_pct']:+.1f}%).")
        if plot:
            from simulator.reports.plots import busbw_vs_size

            series = {}
            published = []
            for r in rows:
                if r["metric"] == "busbw_GBps":
                    label = f"{r['topology'].split('/')[-1].removesuffix('.yaml')} {r['algo']} {r['gpus']} GPUs"
                    series.setdefault(label, []).append((r["bytes"], r["predicted"]))
                    published.append((label, r["bytes"], r["published"]))
            busbw_vs_size(series, published, path=plot, title="Predicted (lines) vs published (stars)")
        if failed:
            raise typer.Exit(1)


def _table(rows: list[dict], threshold: float) -> Table:
    table = Table(title=f"Validation against published figures (pass: |error| <= {threshold:g}%)",
                  title_justify="left", title_style="bold")
    for col in ("entry", "metric", "algo/proto/engine", "predicted", "published", "error %", "ok"):
        table.add_column(col, justify="left" if col in ("entry", "metric", "algo/proto/engine") else "right")
    for r in rows:
        table.add_row(r["name"], r["metric"], f"{r['algo']}/{r['protocol']}/{r['engine']}",
                      f"{r['predicted']:.1f}", f"{r['published']:.1f}", f"{r['error_pct']:+.1f}",
                      "yes" if r["passed"] else "[red]NO[/red]")
    return table
