"""Predict published measurements (``validation/published.yaml``) and report the error of each.

Nothing here calibrates: each entry is simulated with the same parts every other run uses, and the
prediction is compared with the published figure. ``error_pct = 100 (predicted - published) /
published``; an entry passes when ``|error_pct| <= threshold``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from simulator.errors import InputError
from simulator.topology.loader import load_yaml
from simulator.topology.validate import validate_model
from simulator.units import UnitError, parse_size

if TYPE_CHECKING:  # engines load when a prediction runs, not when the CLI lists its options
    from simulator.topology.fabric import Fabric

DEFAULT_FILE = Path("validation/published.yaml")
DEFAULT_THRESHOLD_PCT = 10.0
"""Issue 5: exit non-zero if any error exceeds 10% (the target is 5%)."""


class Entry(BaseModel):
    """One published measurement of a collective (``kind: collective``, the default)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["collective"] = "collective"
    name: str
    topology: str
    """Topology file, relative to the repository root (the folder holding ``validation/``)."""
    op: str
    gpus: int = Field(ge=1)
    bytes: str | int
    """Message size as nccl-tests gives it ("8G", "512M", or bytes)."""
    algo: str = "auto"
    protocol: str = "auto"
    metric: Literal["busbw_GBps", "time_us", "algbw_GBps"]
    published: float = Field(gt=0)
    source: str = Field(min_length=3)
    known_gap: str | None = None
    """Why fabricsim disagrees with this figure, as far as we know (printed when the entry fails)."""
    timing: Literal["nccl-tests", "single", "graph"] = "nccl-tests"
    """How the measurement timed the call (``SweepSpec.timing``)."""


class KernelEntry(BaseModel):
    """One published or measured kernel (``kind: kernel``), predicted by the kernel model of ``gpu``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["kernel"]
    name: str
    gpu: str
    """Catalog GPU part (``h100``, ``h200``, ``a100``...)."""
    kernel: Literal["prefill_attention", "decode_attention", "gemm"]
    params: dict[str, Any]
    """The method's arguments (``hardware.kernels.GpuKernels``): batch, heads, kv_heads, q_tokens,
    kv_tokens (or context), head_dim, causal, split; or m, n, k."""
    metric: Literal["time_us", "tflops", "GBps"]
    published: float = Field(gt=0)
    source: str = Field(min_length=3)
    known_gap: str | None = None
    launch: Literal["graph", "eager"] = "graph"


class LayerEntry(BaseModel):
    """One measured transformer layer (``kind: layer``) on one GPU: the kernel model's layer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["layer"]
    name: str
    gpu: str
    model: dict[str, int]
    """hidden, heads, kv_heads, head_dim, ffn_hidden of one GPU's shard."""
    phase: Literal["decode", "prefill"]
    batch: int = Field(ge=1)
    context: int = Field(ge=1)
    layer_kernels: str = "pytorch"
    metric: Literal["time_us"] = "time_us"
    published: float = Field(gt=0)
    source: str = Field(min_length=3)
    known_gap: str | None = None


class ServingEntry(BaseModel):
    """One published serving measurement (``kind: serving``): a serving scenario file (one topology,
    one deployment, one rate or a fixed batch) run by ``fabricsim serve``; the figure is its row's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["serving"]
    name: str
    scenario: str
    """The serving scenario file, relative to the repository root (``validation/serving/...``)."""
    metric: Literal["latency_mean_ms", "tpot_mean_ms", "ttft_mean_ms", "output_tok_per_s", "benchmark_output_tok_per_s"]
    """A serving row's figure; ``benchmark_output_tok_per_s`` divides as published benchmarks do
    (every token over the first arrival to the last finish), ``output_tok_per_s`` over the arrival
    window."""
    published: float = Field(gt=0)
    source: str = Field(min_length=3)
    known_gap: str | None = None


def _kind(data: Any) -> str:
    return str(data.get("kind", "collective")) if isinstance(data, dict) else str(getattr(data, "kind", "collective"))


AnyEntry = Annotated[Union[Annotated[Entry, Tag("collective")], Annotated[KernelEntry, Tag("kernel")],
                           Annotated[LayerEntry, Tag("layer")], Annotated[ServingEntry, Tag("serving")]],
                     Discriminator(_kind)]


class PublishedFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    entries: list[AnyEntry] = Field(min_length=1)


def load_published(path: str | Path = DEFAULT_FILE) -> list[Entry | KernelEntry | LayerEntry | ServingEntry]:
    """Read and check a published-figures file (errors located by file and line)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such validation file", file=str(path))
    data, sources = load_yaml(path)
    entries = validate_model(PublishedFile, data, sources).entries
    for i, entry in enumerate(entries):
        if isinstance(entry, Entry):
            try:
                parse_size(str(entry.bytes))
            except UnitError as err:
                raise sources.error(("entries", i, "bytes"), str(err)) from None
        elif isinstance(entry, KernelEntry):
            try:
                _predict_kernel(entry)
            except TypeError:
                import inspect

                from simulator.hardware.kernels import GpuKernels

                names = [n for n in inspect.signature(getattr(GpuKernels, entry.kernel)).parameters
                         if n not in ("self", "name", "group")]
                raise sources.error(("entries", i, "params"), f"{sorted(entry.params)} are not the arguments of "
                                    f"{entry.kernel}; give {', '.join(names)}") from None
    return entries


def _gpu_model(part: str, launch: str = "graph"):
    from simulator.hardware.catalog import load_catalog
    from simulator.hardware.kernels import kernel_model

    device = load_catalog().device(part)
    if device.gpu is None:
        raise InputError(f"catalog part {part!r} is not a GPU", field="gpu")
    return kernel_model(part, device.gpu, launch)  # type: ignore[arg-type]


def _predict_kernel(entry: KernelEntry) -> tuple[float, str]:
    """(predicted value in the entry's metric, what bounds the kernel)."""
    gk = _gpu_model(entry.gpu, entry.launch)
    p = dict(entry.params)
    if entry.kernel == "gemm":
        cost = gk.gemm("gemm", **p)
    else:
        cost = getattr(gk, entry.kernel)(**p)
    value = {"time_us": cost.time_s * 1e6, "tflops": cost.flops / cost.time_s / 1e12,
             "GBps": cost.bytes / cost.time_s / 1e9}[entry.metric]
    return value, cost.bound


def _predict_layer(entry: LayerEntry) -> tuple[float, str]:
    from simulator.workloads.attention.layer import step_cost
    from simulator.workloads.attention.model import ModelShape

    m = ModelShape(layers=1, tp=1, batch=entry.batch, context=entry.context, **entry.model)
    step = step_cost(_gpu_model(entry.gpu), m, entry.phase, True, entry.layer_kernels)
    return step.layer_s * 1e6, step.main_bound()


def _predict_serving(entry: ServingEntry, root: Path) -> tuple[float, dict]:
    """(the figure of the scenario's one row, what ran)."""
    from simulator.runner.serve import ServeRequest, run_serve

    path = root / entry.scenario
    if not path.is_file():
        raise InputError(f"entry {entry.name!r}: no such serving scenario file", file=str(path))
    out = run_serve(ServeRequest(str(path)))
    if len(out.rows) != 1:
        raise InputError(f"entry {entry.name!r}: the scenario gives {len(out.rows)} rows; a validation entry needs "
                         "one topology, one deployment and one rate", file=str(path))
    row = out.rows[0]
    pools = out.systems[0]["pools"]
    tp = "+".join(f"tp{f['tp']}" + (f"ep{f['ep']}" if f["ep"] > 1 else "") for f in pools.values())
    return float(row[entry.metric]), {"topology": row["system"], "op": "serving", "gpus": row["gpus"], "bytes": 0,
                                      "algo": "continuous batching", "protocol": tp, "channels": None,
                                      "engine": "flow"}


def _row(entry: Any, predicted: float, threshold_pct: float, **how: Any) -> dict:
    error = 100.0 * (predicted - entry.published) / entry.published
    return {"name": entry.name, "kind": entry.kind, "metric": entry.metric, "predicted": predicted,
            "published": entry.published, "error_pct": error, "passed": abs(error) <= threshold_pct,
            "source": entry.source, "known_gap": entry.known_gap, **how}


def predict(entries: list[Entry], root: Path, threshold_pct: float = DEFAULT_THRESHOLD_PCT,
            on_row: Callable[[dict], None] | None = None) -> list[dict]:
    """Simulate every entry; rows with ``predicted``, ``published``, ``error_pct``, ``passed``."""
    from simulator.runner.sweeps import SweepSpec, sweep
    from simulator.topology.builder import build_fabric

    fabrics: dict[str, Fabric] = {}
    rows = []
    for entry in entries:
        if isinstance(entry, ServingEntry):
            value, how = _predict_serving(entry, root)
            rows.append(_row(entry, value, threshold_pct, **how))
            if on_row:
                on_row(rows[-1])
            continue
        if not isinstance(entry, Entry):  # a kernel or a layer: the kernel model of the GPU, no fabric
            value, bound = _predict_kernel(entry) if isinstance(entry, KernelEntry) else _predict_layer(entry)
            what = entry.kernel if isinstance(entry, KernelEntry) else f"{entry.layer_kernels} layer"
            rows.append(_row(entry, value, threshold_pct, topology=entry.gpu, op=what, gpus=1, bytes=0,
                             algo="kernel model", protocol=bound, channels=None, engine="-"))
            if on_row:
                on_row(rows[-1])
            continue
        topo = root / entry.topology
        if entry.topology not in fabrics:
            if not topo.is_file():
                raise InputError(f"entry {entry.name!r}: no such topology file", file=str(topo))
            fabrics[entry.topology] = build_fabric(topo)
        fabric = fabrics[entry.topology]
        nbytes = parse_size(str(entry.bytes))
        spec = SweepSpec(op=entry.op, gpus=entry.gpus, sizes=(nbytes,), algo=entry.algo, protocol=entry.protocol,
                         timing=entry.timing)
        (measured,) = sweep(fabric, spec)  # planned as bench plans the same size (one way through)
        rows.append(_row(entry, float(measured[entry.metric]), threshold_pct, topology=entry.topology, op=entry.op,
                         gpus=entry.gpus, bytes=nbytes, algo=measured["algo"], channels=measured.get("channels"),
                         protocol=measured["protocol"], engine=measured["engine"]))
        if on_row:
            on_row(rows[-1])
    return rows
