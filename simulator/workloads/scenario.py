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
from typing import Annotated, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from simulator.errors import InputError
from simulator.topology.loader import load_yaml
from simulator.topology.validate import validate_model
from simulator.workloads.attention.model import DTYPE_BYTES, ModelShape
from simulator.workloads.sizes import size_list


def _check_sizes(text: str) -> str:
    try:
        size_list(text)
    except InputError as err:
        raise ValueError(err.message) from None
    return text


Sizes = Annotated[str, AfterValidator(_check_sizes)]
"""Message sizes as ``1K:8G`` (doubling), ``1M,64M,1G`` or one size; checked when the file loads."""


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
    op: Literal["all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"]
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
    workloads: list[WorkloadItem] = []
    """Items run one after another, each alone on the fabric."""
    jobs: list[JobItem] = []
    """Jobs run concurrently on the same fabric; each is also run alone to report its slowdown."""

    @model_validator(mode="after")
    def _something_to_run(self) -> "ScenarioModel":
        if not self.workloads and not self.jobs:
            raise ValueError("give workloads, jobs, or both")
        return self


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
    return _resolve_traces(scenario, path, sources), topologies


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
