"""Options and helpers shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from simulator.engine.choices import ENGINES
from simulator.errors import InputError
from simulator.topology.switch_designs import (CROSSBAR_MODES, DESIGN_NAMES, QUEUEINGS, crossbar_help,
                                               switch_design_help)

if TYPE_CHECKING:  # the CLI imports the model only when a command runs (fast --help)
    from rich.console import Console
    from simulator.topology.fabric import SwitchScheduling

EngineOpt = Annotated[str, typer.Option(help=f"{', '.join(ENGINES[:-1])}, or auto (flow for very large runs).")]
PacketBytesOpt = Annotated[Optional[int], typer.Option(
    help="Packet engine transfer unit in bytes (payload per packet); default, per run: the largest "
         "packet that keeps every credit loop the run crosses exact (16 KiB for NVLS on NVL72, 8 KiB "
         "for a ring), moved in trains of them where no switch output arbitrates among inputs; the "
         "table's title says which.")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the run's random generator (same seed, same result).")]


PartsOpt = Annotated[Optional[list[str]], typer.Option(
    "--parts", help="A parts or calibration file (fabricsim calibrate output) applied to every topology after "
                    "its own parts: files (repeatable).")]
LaunchOpt = Annotated[Optional[str], typer.Option(
    "--launch", help="How kernels are launched: graph (a CUDA graph, as serving engines run decode) or eager "
                     "(from Python, host-bound); default: the scenario's launch:, else graph.")]


OversubscribeOpt = Annotated[bool, typer.Option(
    "--allow-oversubscribe", help="Run decode, prefill and ring-attention items whose weights + KV cache + "
                                  "activations exceed a GPU's HBM anyway, with a warning (the scenario's "
                                  "allow_oversubscribe: true).")]


def print_warnings(model, console) -> None:  # noqa: ANN001
    """The scenario's warnings (items run although they do not fit in HBM: ``allow_oversubscribe``),
    one yellow line each, after the tables."""
    from rich.markup import escape

    for line in model._warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)


PerRackOpt = Annotated[Optional[int], typer.Option(
    "--per-rack", min=1, help="GPUs from each rack (NVLink domain: an NVL72 rack, an HGX server), racks in rank "
                              "order, the first GPUs of each (trays whole); with --gpus as many racks as it needs.")]
PerTrayOpt = Annotated[Optional[int], typer.Option(
    "--per-tray", min=1, help="GPUs from each compute tray (rack<R>-tray<T>; 4 GPUs on GB200).")]
PerNodeOpt = Annotated[Optional[int], typer.Option(
    "--per-node", min=1, help="GPUs from each node (the topology's enclosures: hgx0, rack3, compute5).")]
RanksOpt = Annotated[Optional[str], typer.Option(
    "--ranks", help="Explicit GPU ranks in job order, e.g. 0-63,72-135.")]
HostsOpt = Annotated[Optional[str], typer.Option(
    "--hosts", help="Slurm-style host list: rack[0-1]-tray[0-15], hgx[0-3], rack0,rack2, or enclosure and GPU "
                    "names (with --per-rack/--per-tray/--per-node: that many from each among them).")]


def placement_flags(per_rack: int | None = None, per_tray: int | None = None, per_node: int | None = None,
                    ranks: str | None = None, hosts: str | None = None):  # noqa: ANN201 - Placement | None
    """The placement flags as a ``topology.placement.Placement`` (None when none is given)."""
    if all(v is None for v in (per_rack, per_tray, per_node, ranks, hosts)):
        return None
    from simulator.topology.placement import Placement

    return Placement(per_rack=per_rack, per_tray=per_tray, per_node=per_node, ranks=ranks, hosts=hosts)


FaultOpt = Annotated[Optional[list[str]], typer.Option(
    "--fault", help="A fault to apply (repeatable): KIND:key=value,... e.g. switch_down:enclosure=switch_tray0, "
                    "link_down:from=compute0.gpu0,to=switch_tray0.nvsw0, degraded_width:from=server.gpu0,to=server.psw0,"
                    "lanes=8, ber:from=*,to=*,ber=1e-8; or a YAML file with a faults: list.")]


def output_plan(inputs, **outputs: str | None):  # noqa: ANN001, ANN201
    """The command's outputs checked before it runs (``reports.export.OutputPlan``): keyword
    ``json``, ``csv``, ``trace`` are data files (``-``: standard output, not for a trace), any
    other keyword a figure (``plot``, ``power_plot`` ...); each is named in errors as its flag
    (``--power-plot``). Returns the plan: give ``plan.inputs`` to the writers."""
    from simulator.reports.export import OutputPlan

    plan = OutputPlan(inputs)
    for name, path in outputs.items():
        flag = "--" + name.replace("_", "-")
        if name in ("json", "csv", "trace"):
            plan.add_data(flag, path, stdout=name != "trace")
        else:
            plan.add_figure(flag, path)
    return plan


def topology_path(name: str) -> Path:
    """A topology file by path, or a shipped one by name (``gb200_nvl72``)."""
    from simulator.shipped import find

    return find(name, "topologies")


REPORT_WIDTH = 120
"""Columns for tables written to a pipe or file when COLUMNS is not set (a terminal uses its own width)."""


def plain_console(stderr: bool = False) -> Console:
    """A plain rich console (status lines, progress, lab tables), rich imported only when a
    command makes one, so that start-up stays light."""
    from rich.console import Console

    return Console(stderr=stderr)


def report_console(stderr: bool = False) -> Console:
    """Console for result tables: COLUMNS if set, else the terminal's width, else :data:`REPORT_WIDTH`
    when redirected. ``stderr`` when standard output carries data (``--json -``). Tables printed
    on it go through :func:`simulator.reports.fit.fit`."""
    import os
    import sys

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return Console(width=int(columns), stderr=stderr)
    return Console(stderr=stderr) if stream.isatty() else Console(width=REPORT_WIDTH, stderr=stderr)


JSON_HELP = " ('-' for standard output; tables then go to standard error)"
"""Appended to the help of every --json option that writes a file."""


ArbiterOpt = Annotated[Optional[str], typer.Option(
    help="Switch scheduling design for switches whose topology names none (packet engine): "
         + "; ".join(switch_design_help().splitlines()) + ".")]
CrossbarOpt = Annotated[Optional[str], typer.Option(help=crossbar_help() + ".")]
IterationsOpt = Annotated[Optional[int], typer.Option(help="Request-grant-accept rounds per cell time.")]
SpeedupOpt = Annotated[Optional[float], typer.Option(help="Crossbar speedup of the switches.")]
QueueingOpt = Annotated[Optional[str], typer.Option(
    help=f"Switch input buffers: {' or '.join(QUEUEINGS)} (virtual output queues, or one FIFO per VC).")]


def switch_flags(arbiter: str | None, crossbar: str | None, iterations: int | None, speedup: float | None,
                 queueing: str | None) -> SwitchScheduling | None:
    """The switch-scheduling flags as run defaults (None when no flag is given); bad values are
    input errors naming the flag."""
    from simulator.errors import unknown_choice
    from simulator.topology.fabric import SwitchScheduling

    if arbiter is not None and arbiter not in DESIGN_NAMES:
        raise unknown_choice("arbiter", arbiter, DESIGN_NAMES, field="--arbiter")
    if crossbar is not None and crossbar not in CROSSBAR_MODES:
        raise unknown_choice("crossbar", crossbar, CROSSBAR_MODES, field="--crossbar")
    if iterations is not None and iterations < 1:
        raise InputError(f"must be >= 1, got {iterations}", field="--iterations")
    if speedup is not None and speedup <= 0:
        raise InputError(f"must be > 0, got {speedup:g}", field="--speedup")
    if queueing is not None and queueing not in QUEUEINGS:
        raise unknown_choice("queueing", queueing, QUEUEINGS, field="--queueing")
    if (arbiter, crossbar, iterations, speedup, queueing) == (None,) * 5:
        return None
    return SwitchScheduling(arbiter=arbiter, crossbar=crossbar, iterations=iterations, speedup=speedup,  # type: ignore[arg-type]
                            queueing=queueing)  # type: ignore[arg-type]
