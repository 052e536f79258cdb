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
        model: llama-3-70b
        batch: 1
        context: 8192
        tp: 8

``model:`` is a named model of ``simulator/workloads/models.yaml`` (``llama-3-70b``, ``llama-3-8b``,
``llama-3.1-405b``...: published config.json numbers with their source), a named model with some
fields overridden (``{preset: llama-3-70b, dtype: fp8}``), or every number written out
(``{layers: 80, hidden: 8192, heads: 64, kv_heads: 8, head_dim: 128, ffn_hidden: 28672, vocab: 128256}``).
Decode, prefill and ring attention need ``ffn_hidden`` and ``vocab`` (the MLP, the embedding and
the LM head are part of the step and of the HBM footprint); a KV transfer moves only the cache and
may leave them out. Before anything runs, each decode, prefill and ring-attention item's weights +
KV cache + activations per GPU are checked against the GPU's HBM (``allow_oversubscribe: true``
turns the error into a warning).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from simulator.errors import InputError, raise_all
from simulator.shipped import beside as shipped_beside
from simulator.engine.choices import EngineName
from simulator.hardware.faults import FaultSpec
from simulator.hardware.protocols import IDEAL, PROTOCOL_NAMES
from simulator.topology.fabric import Fabric
from simulator.topology.loader import load_yaml
from simulator.topology.placement import Placement
from simulator.topology.validate import validate_model
from simulator.workloads.attention.layer import DEFAULT_STACK, LAYER_STACKS
from simulator.workloads.collectives import ALGORITHM_NAMES
from simulator.workloads.collectives.ops import OPS
from simulator.workloads.attention.model import DTYPE_BYTES, ModelShape


Sizes = str
"""Message sizes as ``1K:8G`` (doubling), ``1M,64M,1G`` or one size; checked with every other value
before a run (``value_problems``), so all mistakes of a file are reported together, at FILE:LINE."""


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_CONFIG_KEYS = {
    "layers": ("transformer layers", "num_hidden_layers"),
    "hidden": ("hidden size", "hidden_size"),
    "heads": ("query heads", "num_attention_heads"),
    "kv_heads": ("key/value heads", "num_key_value_heads"),
    "head_dim": ("dimension of one head", "head_dim, or hidden_size / num_attention_heads"),
    "ffn_hidden": ("the MLP inner width", "intermediate_size"),
    "vocab": ("the vocabulary size, rows of the embedding and the LM head", "vocab_size"),
}
"""Each shape field: what it is and the key of a Hugging Face config.json that gives it."""


class ModelSpec(_Item):
    """Transformer shape: a named model (``model: llama-3-70b``, ``simulator/workloads/models.yaml``),
    a named model with overrides (``{preset: llama-3-70b, dtype: fp8}``), or the published config's
    numbers written out."""

    allows_moe: ClassVar[bool] = False
    """Whether a mixture-of-experts model may be named (``fabricsim serve``'s model may; decode,
    prefill and ring-attention items model a dense MLP, so there it is an error)."""
    optional: ClassVar[tuple[str, ...]] = ()
    """Shape fields this kind of item may leave out (none: decode, prefill and ring attention run
    the whole layer and hold the whole model)."""
    preset: str = ""
    """Named model whose published numbers fill every field not written here (models.yaml; the
    Hugging Face id works too); empty when every number is written out."""
    layers: int = Field(ge=1)
    """Transformer layers (config.json num_hidden_layers)."""
    hidden: int = Field(ge=1)
    """Hidden size (config.json hidden_size)."""
    heads: int = Field(ge=1)
    """Attention (query) heads (config.json num_attention_heads)."""
    kv_heads: int = Field(ge=1)
    """Key/value heads, GQA (config.json num_key_value_heads)."""
    head_dim: int = Field(ge=1)
    """Dimension of one head (config.json head_dim, or hidden_size / num_attention_heads)."""
    ffn_hidden: int = Field(ge=0)
    """MLP inner width of the gated MLP (config.json intermediate_size); required: 0, written out,
    means a model without an MLP."""
    vocab: int = Field(ge=0)
    """Vocabulary size (config.json vocab_size): the embedding and the LM head, vocab x hidden each;
    required: 0, written out, leaves both out."""
    dtype: Literal[tuple(DTYPE_BYTES)] = "bf16"  # type: ignore[valid-type]
    """Element type of weights, activations and KV cache."""
    source: str = ""
    """Where the shape comes from (model card, config.json); a preset fills in its own."""

    @model_validator(mode="before")
    @classmethod
    def _preset_and_required(cls, data: Any) -> Any:
        """Expand a named model (a string, or ``preset:``) under the fields written beside it, and
        name every missing shape field with what it is and where a config.json gives it."""
        from simulator.errors import unknown_choice
        from simulator.workloads.models import SHAPE_FIELDS, find_preset, preset_names

        if isinstance(data, str):
            data = {"preset": data}
        if not isinstance(data, dict):
            return data
        name = data.get("preset")
        if isinstance(name, str) and name:
            found = find_preset(name)
            if found is None:
                raise ValueError(unknown_choice("model", name, preset_names()).message
                                 + " (simulator/workloads/models.yaml; or write the numbers out)")
            key, preset = found
            if preset.served_only and not cls.allows_moe:
                raise ValueError(f"model {key!r} has a mixture of experts or latent attention; decode, prefill "
                                 "and ring-attention items model a dense MLP and GQA: serve it with fabricsim serve "
                                 "(a serving scenario)")
            written = {k: v for k, v in data.items() if k != "preset"}
            changed = sorted(k for k in written if k in SHAPE_FIELDS and written[k] != getattr(preset, k))
            base = preset.fields()
            if changed and "source" not in written:
                base["source"] = f"{preset.source}; {', '.join(changed)} overridden in the scenario"
            data = {**base, **written, "preset": key}
            return data
        missing = [k for k in _CONFIG_KEYS if k not in data and k not in cls.optional]
        if missing:
            said = [f"{k} ({_CONFIG_KEYS[k][0]}: config.json {_CONFIG_KEYS[k][1]})" for k in missing]
            what = said[0] if len(said) == 1 else f"{', '.join(said[:-1])} and {said[-1]}"
            raise ValueError(f"missing {what}; or name a model instead of the numbers "
                             f"(model: llama-3-70b; known: {', '.join(preset_names())})")
        return data


class KvModelSpec(ModelSpec):
    """Transformer shape of a KV transfer: as for the other items, but only layers, kv_heads and
    head_dim matter (the cache is what moves), so ``ffn_hidden`` and ``vocab`` may be left out."""

    optional: ClassVar[tuple[str, ...]] = ("ffn_hidden", "vocab")
    ffn_hidden: int = Field(default=0, ge=0)
    """MLP inner width (config.json intermediate_size); not used by a KV transfer."""
    vocab: int = Field(default=0, ge=0)
    """Vocabulary size (config.json vocab_size); not used by a KV transfer."""


class PlacementSpec(_Item):
    """Which GPUs an item runs on (``simulator/topology/placement.py``), next to its GPU count
    (``gpus``, or ``tp``): at most one count per unit, or a rank list, or a host list (which may
    take a count per unit too). Left out: the first GPUs in rank order.

        placement: {per_rack: 64}                 # with gpus: 128 on two NVL72 racks: 64 + 64, trays whole
        placement: {ranks: 0-63,72-135}
        placement: {hosts: "rack[0-1]-tray[0-15]"}
    """

    per_rack: int | None = Field(default=None, ge=1)
    """GPUs from each rack (NVLink domain: an NVL72 rack, an HGX server), racks in rank order; with
    a count, as many racks as it needs, the last one holding the remainder."""
    per_tray: int | None = Field(default=None, ge=1)
    """GPUs from each compute tray (``rack<R>-tray<T>``; 4 GPUs on GB200)."""
    per_node: int | None = Field(default=None, ge=1)
    """GPUs from each node (the topology's enclosures: ``hgx0``, ``rack3``, ``compute5``)."""
    ranks: str | list[int] | None = None
    """Explicit ranks in job order: ``0-63,72-135`` or a list."""
    hosts: str | None = None
    """Slurm-style host list: ``rack[0-1]-tray[0-15]``, ``hgx[0-3]``, enclosure or GPU names."""

    def request(self) -> Placement:
        """As the placement module's request."""
        ranks = self.ranks if self.ranks is None or isinstance(self.ranks, str) else tuple(self.ranks)
        return Placement(per_rack=self.per_rack, per_tray=self.per_tray, per_node=self.per_node, ranks=ranks,
                         hosts=self.hosts)


def item_placement(item: Any) -> Placement | None:
    """The placement request of a workload item (None: first GPUs in rank order)."""
    spec = getattr(item, "placement", None)
    return spec.request() if isinstance(spec, PlacementSpec) else None


PLACEMENT_NAMES = {"per_rack": "placement.per_rack", "per_tray": "placement.per_tray",
                   "per_node": "placement.per_node", "ranks": "placement.ranks", "hosts": "placement.hosts"}
"""How the placement module names a scenario item's placement fields in errors (a dotted path under the item)."""


class CollectiveItem(_Item):
    kind: Literal["collective"]
    name: str
    op: Literal[OPS]  # type: ignore[valid-type]
    """Collective operation (nccl-tests size convention: see model.md); rooted ops use rank 0 as root."""
    gpus: int | None = Field(default=None, ge=2)
    """GPUs of the topology, the first N in rank order unless ``placement`` says where; default all
    (or what the placement gives)."""
    placement: PlacementSpec | None = None
    """Which GPUs (below); default the first ``gpus`` in rank order."""
    sizes: Sizes = "1M:1G"
    algo: Literal[("auto", *ALGORITHM_NAMES)] = "auto"  # type: ignore[valid-type]
    protocol: Literal[("auto", *PROTOCOL_NAMES, IDEAL)] = "auto"  # type: ignore[valid-type]
    channels: int | None = Field(default=None, ge=1, le=64)
    """NCCL channels (CTAs) per call, like NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS; default: NCCL's choice."""


class CopyItem(_Item):
    kind: Literal["copy"]
    name: str
    op: Literal["h2d", "d2h", "p2p"]
    gpus: int = Field(default=1, ge=1)
    """Number of GPUs copying at once: the first N ranks, or where ``placement`` puts them."""
    placement: PlacementSpec | None = None
    """Which GPUs copy (as for collectives); default the first ``gpus`` in rank order."""
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
                          dtype=m.dtype, ffn_hidden=m.ffn_hidden, vocab=m.vocab)


LayerKernels = Literal[tuple(LAYER_STACKS)]  # type: ignore[valid-type]


class DecodeItem(_ModelItem):
    """One generated token with tensor parallelism over ``tp`` GPUs (the first, or ``placement``'s)."""

    kind: Literal["decode"]
    tp: int = Field(ge=1)
    """Tensor-parallel degree: the first ``tp`` GPUs, or where ``placement`` puts them."""
    placement: PlacementSpec | None = None
    """Which GPUs hold the ``tp`` shards (as for collectives); default the first ``tp`` in rank order."""
    flash_decoding: bool = True
    layer_kernels: LayerKernels = DEFAULT_STACK  # type: ignore[valid-type]
    """Kernel sequence of a layer: ``pytorch`` (a reference PyTorch layer, what fabricsim is checked
    against) or ``fused`` (a serving engine's fused kernels, vLLM's)."""


class PrefillItem(_ModelItem):
    kind: Literal["prefill"]
    tp: int = Field(ge=1)
    """As for decode."""
    placement: PlacementSpec | None = None
    """As for decode."""
    layer_kernels: LayerKernels = DEFAULT_STACK  # type: ignore[valid-type]
    """As for decode."""


class KvTransferItem(_ModelItem):
    """PagedAttention KV cache of ``batch`` x ``context`` tokens, prefill GPU -> decode GPU."""

    kind: Literal["kv_transfer"]
    model: KvModelSpec
    """Transformer shape (below); ``ffn_hidden`` and ``vocab`` may be left out."""
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
    """Layers to simulate (default: all of the model's); the HBM check counts the whole model."""
    placement: Literal["contiguous", "zigzag"] = "contiguous"
    """How the context is cut over the ring: ``contiguous`` (GPU i holds the i-th T/P tokens; the
    causal mask leaves GPU i idle on P - 1 - i of the P steps) or ``zigzag`` (2P chunks, GPU i holds
    chunks i and 2P - 1 - i: every step costs every GPU the same)."""


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
    engine: EngineName = "auto"
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
    allow_oversubscribe: bool = False
    """Run decode, prefill and ring-attention items whose weights + KV cache + activations exceed the
    GPU's HBM anyway, with a warning instead of an error (``run --allow-oversubscribe`` sets it)."""
    _sources: Any = PrivateAttr(default=None)
    """Where each value was written (a SourceMap), so checks against a topology name FILE:LINE."""
    _warnings: list = PrivateAttr(default_factory=list)
    """Warnings of the checks against the fabrics (``check_on_fabrics``): one line each, FILE:LINE first.
    The list is shared with ``model_copy`` copies, so a copy's checks reach the original."""

    @model_validator(mode="after")
    def _something_to_run(self) -> "ScenarioModel":
        if not self.workloads and not self.jobs:
            raise ValueError("give workloads, jobs, or both")
        return self


def op_scenario(topologies: list[str], op: str, sizes: str, gpus: int | None = None,
                engine: str = "auto", placement: Placement | None = None) -> ScenarioModel:
    """A one-item scenario: ``op`` at ``sizes`` on ``gpus`` GPUs of every topology, the first in
    rank order or where ``placement`` puts them (``fabricsim compare --op``); bad values are input
    errors naming the field (placement errors name the flags)."""
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
                                    "sizes": sizes, **({"gpus": gpus} if gpus else {}),
                                    **({"placement": _placement_data(placement)} if placement else {})})
        return ScenarioModel(name=f"{op} on {' vs '.join(Path(t).stem for t in topologies)}",
                             topologies=list(topologies), engine=engine, workloads=[item])  # type: ignore[arg-type]
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        raise InputError(first["msg"], field=str(first["loc"][-1]) if first["loc"] else None) from None


def _placement_data(placement: Placement) -> dict:
    """A placement request as a scenario item's ``placement:`` mapping."""
    ranks = placement.ranks if placement.ranks is None or isinstance(placement.ranks, str) else list(placement.ranks)
    data = {"per_rack": placement.per_rack, "per_tray": placement.per_tray, "per_node": placement.per_node,
            "ranks": ranks, "hosts": placement.hosts}
    return {k: v for k, v in data.items() if v is not None}


def load_scenario(path: str | Path) -> tuple[ScenarioModel, list[Path]]:
    """Validate a scenario file; return it and its topology paths resolved against the file."""
    path = Path(path)
    data, sources = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError("a scenario file is a mapping of keys", file=str(path), line=1)
    if "deployments" in data and "workloads" not in data and "jobs" not in data:
        raise InputError(f"is a serving scenario (deployments:), not a scenario of workloads: run it with "
                         f"fabricsim serve {path}", file=str(path), line=1)
    if {"base", "axes"} <= set(data) and "workloads" not in data:
        raise InputError(f"is a sweep file (base: and axes:), not a scenario: run it with fabricsim sweep {path}",
                         file=str(path), line=1)
    scenario = validate_model(ScenarioModel, data, sources)
    topologies = resolve_topologies(scenario.topologies, path, sources)
    _check_job_ranks(scenario, sources)
    raise_all(value_problems(scenario, sources))
    scenario = _resolve_traces(scenario, path, sources)
    scenario._sources = sources
    return scenario, topologies


def resolve_topologies(names: list[str], path: Path, sources) -> list[Path]:  # noqa: ANN001 - a SourceMap
    """The topology files a scenario file at ``path`` names: each a file beside it or a shipped
    topology's name; a missing one is an error at its line."""
    topologies = []
    for i, name in enumerate(names):
        topo = shipped_beside(name, path.parent, "topologies")  # a file beside the scenario, or a shipped name
        if not topo.is_file():
            raise sources.error(("topologies", i), f"no such topology file {str(topo)!r} "
                                                   "(nor a shipped topology of that name: see fabricsim list)")
        topologies.append(topo)
    return topologies


def scenario_files(path: str | Path, topologies: list[str | Path] | None = None) -> list[Path]:
    """Every file that running the scenario file ``path`` reads: the file and what it ``extends:``,
    its ``parts:`` files, the Chakra traces its items name, and each topology's own files
    (``topology_files``); ``topologies`` replaces the file's own (``compare --scenario``). For the
    output guard: a part that cannot be listed (a trace folder with no traces) adds nothing."""
    from simulator.topology.builder import topology_files
    from simulator.workloads.traces.chakra import trace_files

    path = Path(path)
    data, sources = load_yaml(path)
    data = data if isinstance(data, dict) else {}
    files = [Path(f) for f in sources.files]

    def beside(name: Any) -> Path:
        return Path(str(name)) if Path(str(name)).is_absolute() else path.parent / str(name)

    files += [beside(name) for name in _list(data.get("parts"))]
    for item in _list(data.get("workloads")):
        if isinstance(item, dict) and item.get("kind") == "chakra" and isinstance(item.get("chakra"), str):
            try:
                files += trace_files(beside(item["chakra"]))
            except InputError:
                pass  # load_scenario reports it at the item's line
    for topo in topologies if topologies is not None else [shipped_beside(t, path.parent, "topologies")
                                                           for t in _list(data.get("topologies"))]:
        if Path(topo).is_file():
            files += topology_files(topo)
    return files


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


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
        if isinstance(item, RingAttentionItem):
            parts = item.gpus * (2 if item.placement == "zigzag" else 1)
            if item.context % parts:
                cut = (f"{parts} equal chunks (2 per GPU, zigzag)" if item.placement == "zigzag"
                       else f"{item.gpus} equal blocks (one per GPU)")
                lower, upper = item.context // parts * parts, -(-item.context // parts) * parts
                problems.append(sources.error((*here, "context"), (
                    f"{item.context} tokens do not split into {cut}; "
                    f"use a multiple of {parts} ({lower or parts} or {upper})")))
    for i, job in enumerate(scenario.jobs):
        why = _sizes_problem(job.size)
        if why:
            problems.append(sources.error(("jobs", i, "size"), why))
        names(("jobs", i), job.algo, job.protocol)
    return problems


def fabric_problems(scenario: ScenarioModel, fabric: Fabric, topology: str) -> list[InputError]:
    """Every item that cannot run on ``fabric`` (too few GPUs, no host to copy from, an algorithm
    the fabric cannot run), each at the item's FILE:LINE when the scenario came from a file."""
    from simulator.workloads.collectives import ALGORITHMS, choices

    n = len(fabric.gpus)
    has_host = any(node.kind == "host" for node in fabric.nodes.values())
    system = f"{Path(topology).name} ({fabric.name})"
    problems: list[InputError] = []

    def problem(path: tuple, message: str) -> None:
        if scenario._sources is not None:
            problems.append(scenario._sources.error(path, message))
        else:
            field = path[-1] if isinstance(path[-1], str) else None
            if len(path) > 1 and path[-2] == "placement":  # compare --op: the placement came from its flags
                from simulator.topology.placement import FLAGS

                field = FLAGS.get(str(path[-1]), field)
            problems.append(InputError(message, field=field))

    def count(path: tuple, value: int | None, what: str) -> None:
        if value is not None and value > n:
            problem(path, f"{what} {value} GPUs, but {system} has {n}")

    for i, item in enumerate(scenario.workloads):
        here = ("workloads", i)
        if isinstance(item, (CollectiveItem, CopyItem)):
            count((*here, "gpus"), item.gpus, "asks for")
        placed = placed_gpus(item, fabric, problem, here)
        if isinstance(item, CopyItem) and item.op in ("h2d", "d2h") and not has_host:
            problem((*here, "op"), f"{item.op} copies to or from a host, but {system} has no host node "
                                   f"(use p2p, or a topology with a host)")
        if isinstance(item, CollectiveItem) and choices(item.algo) is None and (item.gpus or n) <= n and placed:
            why = ALGORITHMS[item.algo].applicable(fabric, placed)
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


def placed_gpus(item: Any, fabric: Fabric, problem: Any, here: tuple) -> tuple[str, ...] | None:
    """The GPUs an item runs on (its ``placement``, else the first in rank order), or None after
    reporting why they cannot be placed to ``problem(path, message)`` (path under the item)."""
    from simulator.topology.placement import place

    count_key = "tp" if isinstance(item, (DecodeItem, PrefillItem)) else "gpus"
    count = getattr(item, count_key, None)
    if not isinstance(item, (CollectiveItem, CopyItem, DecodeItem, PrefillItem)):
        return None
    if count is not None and count > len(fabric.gpus):
        return None  # reported as too many GPUs
    try:
        return place(fabric, count, item_placement(item), names={"gpus": count_key, **PLACEMENT_NAMES})
    except InputError as err:
        problem((*here, *str(err.field).split(".")), err.message)
        return None


def gpu_hbm_bytes(fabric: Fabric, gpu: str) -> tuple[str, float]:
    """(part name, HBM bytes) of ``gpu``: the fabric's own GPU spec (its parts and calibration files
    applied), else the catalog's."""
    from simulator.hardware.catalog import load_catalog

    part = fabric.nodes[gpu].part
    spec = getattr(fabric, "gpu_specs", {}).get(part)
    if spec is None:
        spec = load_catalog().device(part).gpu
    if spec is None:
        raise InputError(f"part {part!r} of {gpu} has no GPU figures (hbm_bytes) to check the model against")
    return part, float(spec.hbm_bytes)


def item_footprint(item: _ModelItem, fabric: Fabric) -> dict | None:
    """Per-GPU HBM footprint (``attention.memory.footprint``) of a decode, prefill or ring-attention
    item on ``fabric``'s first GPU, with its ``hbm_B`` and ``fits``; None for other items or when the
    item asks for more GPUs than the fabric has (reported as that)."""
    from simulator.workloads.attention.memory import footprint

    if not fabric.gpus:
        return None
    if isinstance(item, (DecodeItem, PrefillItem)) and item.tp <= len(fabric.gpus):
        shape, phase, cp = item.shape(item.tp), item.kind, 1
    elif isinstance(item, RingAttentionItem) and item.gpus <= len(fabric.gpus):
        shape, phase, cp = item.shape(1), "ring_attention", item.gpus
    else:
        return None
    part, hbm = gpu_hbm_bytes(fabric, fabric.gpus[0])
    return {**footprint(shape, phase, cp, hbm), "gpu": part}


def memory_problems(scenario: ScenarioModel, fabric: Fabric, topology: str) -> list[InputError]:
    """Every decode, prefill and ring-attention item whose weights + KV cache + activations per GPU
    exceed the HBM of ``fabric``'s GPU, at the item's FILE:LINE (with ``allow_oversubscribe`` the
    message says it runs anyway: a warning's text)."""
    from simulator.workloads.attention.memory import describe

    problems: list[InputError] = []
    for i, item in enumerate(scenario.workloads):
        f = item_footprint(item, fabric) if isinstance(item, _ModelItem) else None
        if f is None or f["fits"]:
            continue
        if isinstance(item, RingAttentionItem):
            fix = "raise gpus, lower batch or context"
            if f["weights_B"] > f["hbm_B"]:
                fix = "the weights alone do not fit and ring attention here has no tensor parallelism: use a smaller model"
        else:
            fix = "raise tp, lower batch or context"
        message = f"needs {describe(f)} but {f['gpu']} has {f['hbm_B'] / 1e9:.0f} GB (on {Path(topology).name}); "
        message += ("running anyway (allow_oversubscribe: true): the time assumes it fits"
                    if scenario.allow_oversubscribe else f"{fix}, or set allow_oversubscribe: true")
        path = ("workloads", i)
        if scenario._sources is not None:
            problems.append(scenario._sources.error(path, message))
        else:
            problems.append(InputError(message, field=f"workloads[{i}]"))
    return problems


def check_on_fabrics(scenario: ScenarioModel, fabrics: list[Fabric], topologies: list) -> list[str]:
    """Raise every problem of ``scenario`` on every fabric at once (exit 2 before anything runs).
    Items that do not fit in HBM are problems too, unless ``allow_oversubscribe``: then each is a
    warning line, returned and kept in ``scenario._warnings`` (shared with the scenario it was copied
    from) for the command to print and write with its results."""
    problems, over = [], []
    for fabric, topo in zip(fabrics, topologies):
        problems += fabric_problems(scenario, fabric, str(topo))
        over += memory_problems(scenario, fabric, str(topo))
    if not scenario.allow_oversubscribe:
        problems += over
    raise_all(_unique(problems))
    warnings = _unique([str(e) for e in over]) if scenario.allow_oversubscribe else []
    scenario._warnings.extend(w for w in warnings if w not in scenario._warnings)
    return warnings


def _unique(items: list) -> list:
    """``items`` without repeats (by text), in order: a degraded copy of a fabric repeats its problems."""
    seen, out = set(), []
    for item in items:
        if str(item) not in seen:
            seen.add(str(item))
            out.append(item)
    return out


def _check_job_ranks(scenario: ScenarioModel, sources) -> None:  # noqa: ANN001
    """Explicit GPU lists of jobs must not overlap (placement rules are checked on the fabric)."""
    owner: dict[int, str] = {}
    for i, job in enumerate(scenario.jobs):
        for rank in job.gpus or []:
            if rank in owner:
                raise sources.error(("jobs", i, "gpus"), f"rank {rank} is already GPU of job {owner[rank]!r}")
            owner[rank] = job.name


def _resolve_traces(scenario: ScenarioModel, path: Path, sources) -> ScenarioModel:  # noqa: ANN001
    """Chakra items with their trace path made absolute and its files checked: no trace files at all
    is an error at the item's line, a problem inside the traces (a rank missing or inconsistent with
    the others) one naming that rank's file (``chakra.load_traces``)."""
    from simulator.workloads.traces.chakra import load_traces, trace_files

    items = list(scenario.workloads)
    for i, item in enumerate(items):
        if isinstance(item, ChakraItem):
            where = Path(item.chakra) if Path(item.chakra).is_absolute() else path.parent / item.chakra
            try:
                trace_files(where)
            except InputError as err:
                if err.file != str(where):
                    raise  # names the rank's file
                raise sources.error(("workloads", i, "chakra"), err.message) from None
            load_traces(where)
            items[i] = item.model_copy(update={"chakra": str(where)})
    return scenario.model_copy(update={"workloads": items})
