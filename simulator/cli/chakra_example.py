"""``fabricsim chakra-example PREFIX``: write an example Chakra trace (a tensor-parallel layer)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("chakra-example")
    def chakra_example(
        prefix: Annotated[str, typer.Argument(help="Output prefix: writes PREFIX.0.et .. PREFIX.<tp-1>.et.")],
        tp: Annotated[int, typer.Option(help="Tensor-parallel ranks (one trace file each).", min=2)] = 8,
        tokens: Annotated[int, typer.Option(help="Batch x sequence length.", min=1)] = 4096,
        hidden: Annotated[int, typer.Option(help="Model width.", min=1)] = 8192,
        ffn: Annotated[int, typer.Option(help="SwiGLU FFN width.", min=1)] = 28672,
    ) -> None:
        """Write one forward pass of a Megatron-style TP transformer layer as Chakra ET files
        (default: Llama-3-70B shape, 4096 tokens, TP 8); run it with a scenario item
        ``{kind: chakra, chakra: PREFIX}``."""
        from simulator.errors import InputError
        from simulator.reports.export import check_output
        from simulator.workloads.traces.chakra import write_trace
        from simulator.workloads.traces.chakra_example import LayerShape, tp_layer_nodes

        base = Path(prefix)
        if prefix.endswith("/") or base.is_dir():
            raise InputError(f"{prefix}: is a folder; give a prefix such as {base / 'layer'} "
                             f"(writes {base / 'layer'}.0.et ..)", field="PREFIX")
        paths = [base.parent / f"{base.name}.{r}.et" for r in range(tp)]
        check_output(paths[0], flag="PREFIX")  # the folder exists and can be written
        existing = [p for p in paths if p.exists()]
        if existing:
            raise InputError(f"{existing[0]} exists; choose another prefix (nothing was written)", file=prefix)
        shape = LayerShape(hidden=hidden, ffn=ffn, tokens=tokens, tp=tp)
        for path, nodes in zip(paths, tp_layer_nodes(shape)):
            write_trace(path, nodes, world_size=tp)
        typer.echo(f"wrote {len(paths)} trace files {paths[0]} .. {paths[-1]}")
