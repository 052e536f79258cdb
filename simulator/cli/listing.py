"""``fabricsim list``: the topologies, scenarios and validation files that ship with fabricsim."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command(name="list")
    def list_shipped() -> None:
        """Show the shipped topologies, scenarios and validation files; use their names anywhere a file
        is asked for (fabricsim describe gb200_nvl72)."""
        from simulator.cli.common import report_console
        from simulator.reports.fit import fit
        from simulator.shipped import KINDS, listing

        out = report_console()
        for kind in KINDS:
            table = _table(kind, listing(kind))
            out.print(fit(table, out.width))


def _title(path) -> str:  # noqa: ANN001
    """The file's ``name:`` (topologies, scenarios) or its first comment line."""
    import re

    text = path.read_text(encoding="utf-8")
    match = re.search(r"^name:\s*(.+)$", text, re.M)
    if match:
        return match.group(1).strip().strip("\"'")
    comment = re.search(r"^#\s*(.+)$", text, re.M)
    return comment.group(1).strip() if comment else ""


def _table(kind: str, paths: list):  # noqa: ANN202
    from rich.table import Table

    folders = sorted({str(p.parent) for p in paths})
    table = Table(title=f"{kind} ({len(paths)}) in {', '.join(folders) or 'no folder'}", title_justify="left",
                  title_style="bold")
    table.add_column("name")
    table.add_column("what it is")
    for path in paths:
        table.add_row(path.stem, _title(path))
    return table
