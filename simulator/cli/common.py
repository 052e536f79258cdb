"""Options and helpers shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Callable, Optional

import typer

from simulator.errors import InputError

if TYPE_CHECKING:  # the CLI imports the model only when a command runs (fast --help)
    from rich.console import Console
    from simulator.topology.fabric import Fabric, SwitchScheduling

EngineOpt = Annotated[str, typer.Option(help="packet, flow, or auto (flow for very large runs).")]
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


def launch_flag(value: str | None) -> str | None:
    """``--launch`` checked: graph, eager or unset."""
    from simulator.errors import unknown_choice
    from simulator.hardware.kernels import LAUNCH_MODES

    if value is not None and value not in LAUNCH_MODES:
        raise unknown_choice("launch mode", value, LAUNCH_MODES, field="--launch")
    return value


def parts_flags(values: list[str] | None) -> list[str]:
    """``--parts`` files, each checked to exist (an error names the flag)."""
    for value in values or []:
        if not Path(value).is_file():
            raise InputError(f"no such parts or calibration file: {value}", field="--parts")
    return list(values or [])


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


def load_fabric(path: str, faults: list[str] | None = None, *, healthy: bool = False) -> Fabric:
    """Build a topology file (a path, or a shipped topology's name) into a fabric with the file's
    faults and ``--fault`` flags applied (``healthy``: neither); a missing file is an input error,
    not a traceback."""
    from simulator.topology.builder import build_fabric

    found = topology_path(path)
    if not found.is_file():
        raise InputError("no such topology file (nor a shipped topology of that name: see fabricsim list)", file=path)
    specs, locate = fault_specs(faults or [])
    return build_fabric(found, specs, healthy=healthy, locate_fault=locate)


def fault_specs(values: list[str]) -> tuple[list, Callable[[int, str | None, str], InputError]]:
    """``--fault`` values -> fault specs and the function that places an error about the i-th of
    them: at FILE:LINE for faults read from a file, else at the ``--fault`` flag."""
    specs, where = fault_flags(values)

    def locate(i: int, key: str | None, message: str) -> InputError:
        if where[i] is not None:
            sources, j = where[i]
            return sources.error(("faults", j) + ((key,) if key else ()), message)
        return InputError(f"{specs[i].describe()}: {message}", field="--fault")

    return specs, locate


def fault_flags(values: list[str]) -> tuple[list, list]:
    """``--fault`` values -> (fault specs, where each was written: (SourceMap, index) or None for a
    flag). A value naming a file reads its ``faults:`` list (``topology.fault_file``: errors at
    FILE:LINE; a missing ``x.yaml`` is "no such fault file"), anything else is ``KIND:key=value,...``
    (errors name ``--fault``)."""
    from simulator.hardware.faults import FaultSpec, parse_fault_flag
    from simulator.topology.fault_file import looks_like_file, read_fault_file

    specs: list = []
    where: list = []
    for value in values:
        if Path(value).exists() or looks_like_file(value):  # a fault file, or a topology with faults:
            found, sources = read_fault_file(value)
            specs += found
            where += [(sources, j) for j in range(len(found))]
            continue
        try:
            specs.append(FaultSpec.model_validate(parse_fault_flag(value)))
            where.append(None)
        except ValueError as err:  # pydantic's ValidationError is a ValueError
            first = err.errors(include_url=False)[0] if hasattr(err, "errors") else None
            msg = first["msg"].removeprefix("Value error, ") if first else str(err)
            at = ".".join(str(x) for x in first["loc"]) if first and first["loc"] else ""
            raise InputError(f"{value!r}: {at + ': ' if at else ''}{msg}", field="--fault") from None
    return specs, where


def fault_files(values: list[str] | None) -> list[Path]:
    """The files among ``--fault`` values, with each file they ``extends:`` (inputs of the run)."""
    from simulator.topology.loader import load_yaml

    out: list[Path] = []
    for value in values or []:
        if Path(value).is_file():
            out += [Path(f) for f in load_yaml(value)[1].files]
    return out


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
