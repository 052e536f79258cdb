"""Options and helpers shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console

from simulator.errors import InputError

if TYPE_CHECKING:  # the CLI imports the model only when a command runs (fast --help)
    from simulator.topology.fabric import Fabric, SwitchScheduling

EngineOpt = Annotated[str, typer.Option(help="packet, flow, or auto (flow for very large runs).")]
PacketBytesOpt = Annotated[Optional[int], typer.Option(
    help="Packet engine transfer unit in bytes (payload per packet); default 4096.")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the run's random generator (same seed, same result).")]


def load_fabric(path: str) -> Fabric:
    """Build a topology file (a path, or a shipped topology's name) into a fabric; a missing file is
    an input error, not a traceback."""
    from simulator.topology.builder import build_fabric

    found = topology_path(path)
    if not found.is_file():
        raise InputError("no such topology file (nor a shipped topology of that name: see fabricsim list)", file=path)
    return build_fabric(found)


def topology_path(name: str) -> Path:
    """A topology file by path, or a shipped one by name (``gb200_nvl72``)."""
    from simulator.shipped import find

    return find(name, "topologies")


REPORT_WIDTH = 120
"""Columns for tables written to a pipe or file when COLUMNS is not set (a terminal uses its own width)."""


def report_console(stderr: bool = False) -> Console:
    """Console for result tables: COLUMNS if set, else the terminal's width, else :data:`REPORT_WIDTH`
    when redirected. ``stderr`` when standard output carries data (``--json -``). Tables printed
    on it go through :func:`simulator.reports.fit.fit`."""
    import os
    import sys

    stream = sys.stderr if stderr else sys.stdout
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return Console(width=int(columns), stderr=stderr)
    return Console(stderr=stderr) if stream.isatty() else Console(width=REPORT_WIDTH, stderr=stderr)


JSON_HELP = " ('-' for standard output; tables then go to standard error)"
"""Appended to the help of every --json option that writes a file."""


ArbiterOpt = Annotated[Optional[str], typer.Option(
    help="Switch scheduling algorithm for switches whose topology names none: round_robin, islip, pim, "
         "oldest_first, fixed_priority, weighted_rr, wavefront (packet engine).")]
CrossbarOpt = Annotated[Optional[str], typer.Option(
    help="output (each output arbitrates when it frees), matching (request-grant-accept every cell time) "
         "or auto (matching for islip, pim, wavefront).")]
IterationsOpt = Annotated[Optional[int], typer.Option(help="Request-grant-accept rounds per cell time.")]
SpeedupOpt = Annotated[Optional[float], typer.Option(help="Crossbar speedup of the switches.")]
QueueingOpt = Annotated[Optional[str], typer.Option(help="Switch input buffers: voq or fifo.")]


def switch_flags(arbiter: str | None, crossbar: str | None, iterations: int | None, speedup: float | None,
                 queueing: str | None) -> SwitchScheduling | None:
    """The switch-scheduling flags as run defaults (None when no flag is given); bad values are
    input errors naming the flag."""
    from simulator.topology.fabric import ALLOCATOR_NAMES, SwitchScheduling

    if arbiter is not None and arbiter not in ALLOCATOR_NAMES:
        raise InputError(f"unknown arbiter {arbiter!r}; choose one of {', '.join(ALLOCATOR_NAMES)}", field="--arbiter")
    if crossbar is not None and crossbar not in ("auto", "output", "matching"):
        raise InputError(f"unknown crossbar {crossbar!r}; choose auto, output or matching", field="--crossbar")
    if iterations is not None and iterations < 1:
        raise InputError(f"must be >= 1, got {iterations}", field="--iterations")
    if speedup is not None and speedup <= 0:
        raise InputError(f"must be > 0, got {speedup:g}", field="--speedup")
    if queueing is not None and queueing not in ("voq", "fifo"):
        raise InputError(f"unknown queueing {queueing!r}; choose voq or fifo", field="--queueing")
    if (arbiter, crossbar, iterations, speedup, queueing) == (None,) * 5:
        return None
    return SwitchScheduling(arbiter=arbiter, crossbar=crossbar, iterations=iterations, speedup=speedup,  # type: ignore[arg-type]
                            queueing=queueing)  # type: ignore[arg-type]
