"""Options and helpers shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console

from simulator.errors import InputError

if TYPE_CHECKING:  # the CLI imports the model only when a command runs (fast --help)
    from simulator.topology.fabric import Fabric

EngineOpt = Annotated[str, typer.Option(help="packet, flow, or auto (flow for very large runs).")]
PacketBytesOpt = Annotated[Optional[int], typer.Option(
    help="Packet engine transfer unit in bytes (payload per packet); default 4096.")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the run's random generator (same seed, same result).")]


def load_fabric(path: str) -> Fabric:
    """Build a topology file into a fabric; a missing file is an input error, not a traceback."""
    from simulator.topology.builder import build_fabric

    if not Path(path).is_file():
        raise InputError("no such topology file", file=path)
    return build_fabric(path)


REPORT_WIDTH = 150
"""Columns for tables written to a pipe or file (a terminal uses its own width)."""


def report_console() -> Console:
    """Console for result tables: the terminal's width, or a wide fixed width when redirected."""
    import sys

    return Console() if sys.stdout.isatty() else Console(width=REPORT_WIDTH)
