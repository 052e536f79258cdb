"""``fabricsim bench TOPOLOGY --op OP --gpus N --sizes 1K:8G``: nccl-tests-style sweeps."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from simulator.cli.common import EngineOpt, PacketBytesOpt, SeedOpt, load_fabric
from simulator.reports.export import write_json
from simulator.reports.nccl_table import nccl_table, nccl_text

PROGRESS_MIN_SIZES = 4
"""Show a progress bar when the sweep has at least this many sizes."""


def register(app: typer.Typer) -> None:
    @app.command()
    def bench(
        topology: Annotated[str, typer.Argument(help="Topology YAML, e.g. topologies/hgx_h100.yaml.")],
        op: Annotated[str, typer.Option(help="all_reduce, all_gather, reduce_scatter, alltoall, broadcast, "
                                             "sendrecv, or a copy: h2d, d2h, p2p.")] = "all_reduce",
        gpus: Annotated[Optional[int], typer.Option(help="Use the first N GPUs (default: all).")] = None,
        sizes: Annotated[str, typer.Option(help="1K:8G (doubling), a list 1M,64M, or one size.")] = "1M:1G",
        algo: Annotated[str, typer.Option(help="ring, tree, direct, nvls, hierarchical or auto.")] = "auto",
        protocol: Annotated[str, typer.Option(help="LL, LL128, Simple or auto.")] = "auto",
        engine: EngineOpt = "auto",
        packet_bytes: PacketBytesOpt = None,
        seed: SeedOpt = 0,
        json_path: Annotated[Optional[str], typer.Option("--json", help="Write rows as JSON here.")] = None,
        plot: Annotated[Optional[str], typer.Option(help="Write busbw vs size (PNG) here.")] = None,
        text: Annotated[bool, typer.Option("--text", help="Plain nccl-tests text instead of a rich table.")] = False,
    ) -> None:
        """Sweep message sizes of one collective and print the nccl-tests columns (busbw in GB/s, 1 GB = 1e9 B)."""
        from simulator.reports.sweeps import SweepSpec, size_list, sweep

        fabric = load_fabric(topology)
        spec = SweepSpec(op=op, gpus=gpus or len(fabric.gpus), sizes=tuple(size_list(sizes)), algo=algo,
                         protocol=protocol, engine=engine, packet_bytes=packet_bytes, seed=seed)
        console = Console(stderr=True)
        if len(spec.sizes) >= PROGRESS_MIN_SIZES and console.is_terminal:
            with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                          TimeElapsedColumn(), console=console, transient=True) as progress:
                task = progress.add_task(f"{op} on {spec.gpus} GPUs", total=len(spec.sizes))
                rows = sweep(fabric, spec, on_row=lambda _row: progress.advance(task))
        else:
            rows = sweep(fabric, spec)
        inputs = [topology]
        if json_path:
            write_json(json_path, {"topology": topology, "op": op, "gpus": spec.gpus, "algo": algo,
                                   "engine": engine, "rows": rows}, inputs)
        if plot:
            from simulator.reports.plots import busbw_vs_size

            busbw_vs_size({fabric.name: [(r["bytes"], r["busbw_GBps"]) for r in rows]}, path=plot,
                          title=f"{op} on {spec.gpus} GPUs")
        if text:
            typer.echo(nccl_text(op, spec.gpus, rows))
        else:
            chosen = sorted({f"{r['algo']}/{r['protocol']}/{r['engine']}" for r in rows})
            Console().print(nccl_table(op, spec.gpus, rows,
                                       title=f"{fabric.name}: {op} on {spec.gpus} GPUs ({', '.join(chosen)})"))
