"""Scenario files: which topologies, which workloads, which engine — schema-checked like topologies.

A scenario names one or more topologies (several = a comparison) and a list of workload items,
each one of the kinds below (``kind:`` selects it). Paths are relative to the scenario file.

    name: Decode step on GB200 NVL72
    topologies: [../topologies/gb200_nvl72.yaml]
    engine: auto
    workloads:
      - {kind: collective, name: all_reduce sweep, op: all_reduce, gpus: 72, sizes: "1M:1G"}
      - kind: decode
        name: Llama-3-70B decode, TP8, batch 1
        model: {layers: 80, hidden: 8192, heads: 64, kv_heads: 8, head_dim: 128, ffn_hidden: 28672}
        batch: 1
        context: 8192
        tp: 8
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from simulator.errors import InputError, raise_all
from simulator.hardware.faults import FaultSpec
from simulator.topology.fabric import Fabric
from simulator.topology.loader import load_yaml
from simulator.topology.validate import validate_model
from simulator.workloads.attention.model import DTYPE_BYTES, ModelShape


Sizes = str
"""Message sizes as ``1K:8G`` (doubling), ``1M,64M,1G`` or one size; checked with every other value
before a run (``value_problems``), so all mistakes of a file are reported together, at FILE:LINE."""


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSpec(_Item):
    """Transformer shape (from the model's published config)."""

    layers: int = Field(ge=1)
    hidden: int = Field(ge=1)
    heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    ffn_hidden: int = Field(default=0, ge=0)
    dtype: Literal[tuple(DTYPE_BYTES)] = "bf16"  # type: ignore[valid-type]
    source: str = ""
    """Where the shape comes from (model card, config.json)."""


class CollectiveItem(_Item):
    kind: Literal["collective"]
    name: str
    op: Literal["all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "gather", "scatter",
                "sendrecv"]
    """Collective operation (nccl-tests size convention: see model.md); rooted ops use rank 0 as root."""
    gpus: int | None = Field(default=None, ge=2)
    """First N GPUs of the topology; default all."""
    sizes: Sizes = "1M:1G"
    algo: Literal["auto", "ring", "tree", "direct", "nvls", "hierarchical"] = "auto"
    protocol: Literal["auto", "LL", "LL128", "Simple", "ideal"] = "auto"
    channels: int | None = Field(default=None, ge=1, le=64)
    """NCCL channels (CTAs) per call, like NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS; default: NCCL's choice."""


class CopyItem(_Item):
    kind: Literal["copy"]
    name: str
    op: Literal["h2d", "d2h", "p2p"]
    gpus: int = Field(default=1, ge=1)
    sizes: Sizes = "64M"


class _ModelItem(_Item):
    name: str
    model: ModelSpec
    batch: int = Field(default=1, ge=1)
    context: int = Field(ge=1)

    def shape(self, tp: int) -> ModelShape:
        m = self.model
        return ModelShape(layers=m.layers, hidden=m.hidden, heads=m.heads, kv_heads=m.kv_heads,
                          head_dim=m.head_dim, batch=self.batch, context=self.context, tp=tp,
                          dtype=m.dtype, ffn_hidden=m.ffn_hidden)


class DecodeItem(_ModelItem):
    """One generated token with tensor parallelism over the first ``tp`` GPUs."""

    kind: Literal["decode"]
    tp: int = Field(ge=1)
    flash_decoding: bool = True


class PrefillItem(_ModelItem):
    kind: Literal["prefill"]
    tp: int = Field(ge=1)


class KvTransferItem(_ModelItem):
    """PagedAttention KV cache of ``batch`` x ``context`` tokens, prefill GPU -> decode GPU."""

    kind: Literal["kv_transfer"]
    src: int = Field(default=0, ge=0)
    """Rank of the prefill GPU."""
    dst: int | Literal["farthest", "nearest"] = "farthest"
    """Rank of the decode GPU, or the farthest/nearest other GPU by hops (farthest crosses the
    network on a multi-node rack, NVLink on NVL72, PCIe on a PCIe server)."""
    block_tokens: int = Field(default=16, ge=1)


class RingAttentionItem(_ModelItem):
    """Context parallelism: KV blocks rotate around a ring of ``gpus`` GPUs, overlapped with compute."""

    kind: Literal["ring_attention"]
    gpus: int = Field(ge=2)
    layers: int | None = Field(default=None, ge=1)
    """Layers to simulate (default: all of the model's)."""


class ChakraItem(_Item):
    """MLCommons Chakra execution traces, one ``.et`` file per rank (rank r on GPU r)."""

    kind: Literal["chakra"]
    """Selects this item: ``chakra``."""
    name: str
    """Label of the item in tables and JSON rows."""
    chakra: str
    """A folder of ``*.<rank>.et`` files or a prefix ``PREFIX`` of ``PREFIX.<rank>.et`` (relative to the
    scenario file)."""
    algo: str = "auto"
    """Collective algorithm for the traces' collectives."""
    protocol: str = "auto"
    """Protocol for the traces' collectives (LL, LL128, Simple or auto)."""


WorkloadItem = Annotated[Union[CollectiveItem, CopyItem, DecodeItem, PrefillItem, KvTransferItem,
                               RingAttentionItem, ChakraItem], Field(discriminator="kind")]


class JobItem(_Item):
    """One job of several sharing the fabric: its GPUs and one collective or copy of one size."""

    name: str
    """Label of the job in tables and JSON rows."""
    gpus: list[int] | None = None
    """Explicit GPU ranks; or leave out and give ``count`` (and ``placement``)."""
    count: int | None = Field(default=None, ge=1)
    """How many GPUs the placement rule picks."""
    placement: Literal["packed", "spread"] = "packed"
    """``packed``: first free GPUs in rank order; ``spread``: dealt round-robin over racks/servers."""
    op: Literal["all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "h2d", "d2h"]
    """The job's collective (or host copy)."""
    size: str = "1G"
    """Message size (nccl-tests convention)."""
    algo: str = "auto"
    """Collective algorithm."""
    protocol: str = "auto"
    """Collective protocol."""

    @model_validator(mode="after")
    def _gpus_or_count(self) -> "JobItem":
        if (self.gpus is None) == (self.count is None):
            raise ValueError("give either gpus (a list of ranks) or count (with placement)")
        return self


class ScenarioModel(_Item):
    """A whole scenario file."""

    name: str
    description: str = ""
    topologies: list[str] = Field(min_length=1)
    """Topology files (relative to the scenario file); two or more make a comparison."""
    engine: Literal["packet", "flow", "auto"] = "auto"
    seed: int = 0
    packet_bytes: int | None = Field(default=None, ge=64)
    """Packet engine transfer unit (B); unset: chosen per run, the largest packet that keeps every
    credit loop the run crosses exact, in trains where no switch output arbitrates among inputs."""
    workloads: list[WorkloadItem] = []
    """Items run one after another, each alone on the fabric."""
    jobs: list[JobItem] = []
    """Jobs run concurrently on the same fabric; each is also run alone to report its slowdown."""
    faults: list[FaultSpec] = []
    """Faults (as in a topology's ``faults:``, docs/faults.md) applied to every topology: each then
    runs healthy and degraded, side by side (as ``run --fault``)."""
    launch: Literal["graph", "eager"] = "graph"
    """How decode, prefill and Chakra kernels are launched: ``graph`` (a CUDA graph, as serving
    engines run decode: 0.9 us fixed cost per kernel on Hopper) or ``eager`` (from Python, host-bound);
    ``run --launch`` overrides it."""
    parts: list[str] = []
    """Parts or calibration files (``fabricsim calibrate`` output; relative to the scenario file)
    applied to every topology after its own ``parts:``; ``--parts`` adds more."""
    _sources: Any = PrivateAttr(default=None)
    """Where each value was written (a SourceMap), so checks against a topology name FILE:LINE."""

    @model_validator(mode="after")
    def _something_to_run(self) -> "ScenarioModel":
        if not self.workloads and not self.jobs:
            raise ValueError("give workloads, jobs, or both")
        return self


def op_scenario(topologies: list[str], op: str, sizes: str, gpus: int | None = None,
                engine: str = "auto") -> ScenarioModel:
    """A one-item scenario: ``op`` at ``sizes`` on the first ``gpus`` GPUs of every topology
    (``fabricsim compare --op``); bad values are input errors naming the field."""
    from pydantic import ValidationError

    from simulator.errors import unknown_choice
    from simulator.workloads.collectives import OPS
    from simulator.workloads.copies import COPIES

    if op not in (*OPS, *COPIES):
        raise unknown_choice("op", op, [*OPS, *COPIES], field="op")
    kind = CopyItem if op in COPIES else CollectiveItem
    try:
        item = kind.model_validate({"kind": "copy" if op in COPIES else "collective",
                                    "name": f"{op}{f' {gpus} GPUs' if gpus else ''}", "op": op,
                                    "sizes": sizes, **({"gpus": gpus} if gpus else {})})
        return ScenarioModel(name=f"{op} on {' vs '.join(Path(t).stem for t in topologies)}",
                             topologies=list(topologies), engine=engine, workloads=[item])  # type: ignore[arg-type]
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        raise InputError(first["msg"], field=str(first["loc"][-1]) if first["loc"] else None) from None


def load_scenario(path: str | Path) -> tuple[ScenarioModel, list[Path]]:
    """Validate a scenario file; return it and its topology paths resolved against the file."""
    path = Path(path)
    data, sources = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError("a scenario file is a mapping of keys", file=str(path), line=1)
    scenario = validate_model(ScenarioModel, data, sources)
    topologies = []
    for i, name in enumerate(scenario.topologies):
        topo = (path.parent / name) if not Path(name).is_absolute() else Path(name)
        if not topo.is_file():
            raise sources.error(("topologies", i), f"no such topology file {str(topo)!r}")
        topologies.append(topo)
    _check_job_ranks(scenario, sources)
    raise_all(value_problems(scenario, sources))
    scenario = _resolve_traces(scenario, path, sources)
    scenario._sources = sources
    return scenario, topologies


def _sizes_problem(text: str) -> str | None:
    """Why ``text`` is not a size, a list ``1M,64M`` or a range ``1K:8G`` (None if it is one)."""
    from simulator.units import UnitError, parse_size

    try:
        for part in text.replace(":", ",").split(","):
            parse_size(part)
    except UnitError as err:
        return str(err)
    return None


def _heads_problem(model: ModelSpec, tp: int | None) -> tuple[str, str] | None:
    """(field, why) when the attention heads cannot be split: kv_heads must divide heads, and tensor
    parallelism must split the query heads evenly and the KV heads evenly (or replicate them)."""
    if model.heads % model.kv_heads:
        return "kv_heads", (f"kv_heads: {model.kv_heads} must divide heads: {model.heads} "
                            f"(each KV head serves heads / kv_heads query heads)")
    if tp and model.heads % tp:
        return "tp", f"tp: {tp} must divide heads: {model.heads} (each GPU gets whole attention heads)"
    if tp and model.kv_heads % tp and tp % model.kv_heads:
        return "tp", (f"tp: {tp} must divide kv_heads: {model.kv_heads} or be a multiple of it "
                      f"(KV heads are split or replicated across GPUs)")
    return None


def value_problems(scenario: ScenarioModel, sources) -> list[InputError]:  # noqa: ANN001
    """Every value the schema accepts but no run could use (sizes, algorithm and protocol names,
    head counts), each at its FILE:LINE; checked before anything runs."""
    from simulator.workloads.collectives import check_algo, check_protocol

    problems: list[InputError] = []

    def names(path: tuple, algo: str, protocol: str) -> None:
        for key, value, check in (("algo", algo, check_algo), ("protocol", protocol, check_protocol)):
            try:
                check(value)
            except InputError as err:
                problems.append(sources.error((*path, key), err.message))

    for i, item in enumerate(scenario.workloads):
        here = ("workloads", i)
        if isinstance(item, (CollectiveItem, CopyItem)):
            why = _sizes_problem(item.sizes)
            if why:
                problems.append(sources.error((*here, "sizes"), why))
        if isinstance(item, CopyItem) and item.op == "p2p" and item.gpus % 2:
            problems.append(sources.error((*here, "gpus"), f"p2p copies between pairs of GPUs: gpus must be even "
                                                           f"(2 for one pair), not {item.gpus}"))
        if isinstance(item, ChakraItem):
            names(here, item.algo, item.protocol)
        if isinstance(item, _ModelItem):
            heads = _heads_problem(item.model, getattr(item, "tp", None))
            if heads:
                field, why = heads
                problems.append(sources.error((*here, "model", field) if field == "kv_heads" else (*here, field), why))
    for i, job in enumerate(scenario.jobs):
        why = _sizes_problem(job.size)
        if why:
            problems.append(sources.error(("jobs", i, "size"), why))
        names(("jobs", i), job.algo, job.protocol)
    return problems


def fabric_problems(scenario: ScenarioModel, fabric: Fabric, topology: str) -> list[InputError]:
    """Every item that cannot run on ``fabric`` (too few GPUs, no host to copy from, an algorithm
    the fabric cannot run), each at the item's FILE:LINE when the scenario came from a file."""
    from simulator.workloads.collectives import ALGORITHMS

    n = len(fabric.gpus)
    has_host = any(node.kind == "host" for node in fabric.nodes.values())
    system = f"{Path(topology).name} ({fabric.name})"
    problems: list[InputError] = []

    def problem(path: tuple, message: str) -> None:
        if scenario._sources is not None:
            problems.append(scenario._sources.error(path, message))
        else:
            problems.append(InputError(message, field=path[-1] if isinstance(path[-1], str) else None))

    def count(path: tuple, value: int | None, what: str) -> None:
        if value is not None and value > n:
            problem(path, f"{what} {value} GPUs, but {system} has {n}")

    for i, item in enumerate(scenario.workloads):
        here = ("workloads", i)
        if isinstance(item, (CollectiveItem, CopyItem)):
            count((*here, "gpus"), item.gpus, "asks for")
        if isinstance(item, CopyItem) and item.op in ("h2d", "d2h") and not has_host:
            problem((*here, "op"), f"{item.op} copies to or from a host, but {system} has no host node "
                                   f"(use p2p, or a topology with a host)")
        if isinstance(item, CollectiveItem) and item.algo != "auto" and (item.gpus or n) <= n:
            why = ALGORITHMS[item.algo].applicable(fabric, tuple(fabric.gpus[:item.gpus or n]))
            if why:
                problem((*here, "algo"), f"{item.algo} cannot run on {system}: {why}")
        if isinstance(item, (DecodeItem, PrefillItem)):
            count((*here, "tp"), item.tp, "tensor parallelism over")
        if isinstance(item, RingAttentionItem):
            count((*here, "gpus"), item.gpus, "asks for")
        if isinstance(item, KvTransferItem):
            for key in ("src", "dst"):
                rank = getattr(item, key)
                if isinstance(rank, int) and rank >= n:
                    problem((*here, key), f"rank {rank} does not exist: {system} has ranks 0..{n - 1}")
    for i, job in enumerate(scenario.jobs):
        count(("jobs", i, "count"), job.count, "asks for")
        if job.gpus and max(job.gpus) >= n:
            problem(("jobs", i, "gpus"), f"rank {max(job.gpus)} does not exist: {system} has ranks 0..{n - 1}")
        if job.op in ("h2d", "d2h") and not has_host:
            problem(("jobs", i, "op"), f"{job.op} needs a host node, but {system} has none")
    return problems


def check_on_fabrics(scenario: ScenarioModel, fabrics: list[Fabric], topologies: list) -> None:
    """Raise every problem of ``scenario`` on every fabric at once (exit 2 before anything runs)."""
    raise_all([p for fabric, topo in zip(fabrics, topologies) for p in fabric_problems(scenario, fabric, str(topo))])


def _check_job_ranks(scenario: ScenarioModel, sources) -> None:  # noqa: ANN001
    """Explicit GPU lists of jobs must not overlap (placement rules are checked on the fabric)."""
    owner: dict[int, str] = {}
    for i, job in enumerate(scenario.jobs):
        for rank in job.gpus or []:
            if rank in owner:
                raise sources.error(("jobs", i, "gpus"), f"rank {rank} is already GPU of job {owner[rank]!r}")
            owner[rank] = job.name


def _resolve_traces(scenario: ScenarioModel, path: Path, sources) -> ScenarioModel:  # noqa: ANN001
    """Chakra items with their trace path made absolute and its files checked (errors at the item's line)."""
    from simulator.workloads.traces.chakra import trace_files

    items = list(scenario.workloads)
    for i, item in enumerate(items):
        if isinstance(item, ChakraItem):
            where = Path(item.chakra) if Path(item.chakra).is_absolute() else path.parent / item.chakra
            try:
                trace_files(where)
            except InputError as err:
                raise sources.error(("workloads", i, "chakra"), err.message) from None
            items[i] = item.model_copy(update={"chakra": str(where)})
    return scenario.model_copy(update={"workloads": items})
