"""Serving scenario files: a model, the load, the SLOs and deployments, on one or more topologies.

    name: Llama-3-70B on GB200 NVL72 and nine HGX H100 nodes
    topologies: [../topologies/gb200_nvl72.yaml, ../topologies/hopper_ib_rack.yaml]
    model: llama-3-70b
    load:
      arrival: poisson
      rates: [10, 20, 40]          # requests per second, the whole system
      duration: 60 s
      prompt_tokens: {lognormal: {mean: 2048, sigma: 0.6}}
      output_tokens: {lognormal: {mean: 256, sigma: 0.6}}
    slo: {ttft: 2 s, tpot: 50 ms}
    deployments:
      - {name: 9 x TP8, tp: 8}
      - name: 3 prefill + 6 decode TP8
        prefill: {tp: 8, instances: 3}
        decode: {tp: 8, instances: 6}

A deployment is one pool of instances (each ``tp`` GPUs, or ``ep`` at expert parallelism), or a
``prefill`` pool and a ``decode`` pool (disaggregated serving: KV moves between them over the
fabric). Pools take the topology's GPUs in rank order, prefill before decode; ``instances`` left
out means as many as the GPUs hold. Times carry units (``2 s``, ``50 ms``): a bare number is an
error, as an SLO without its unit is ambiguous. Every value is checked before anything runs, each
mistake at its FILE:LINE.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from simulator.errors import InputError
from simulator.engine.choices import EngineName
from simulator.topology.loader import load_yaml
from simulator.topology.validate import validate_model
from simulator.units import UnitError, parse_quantity
from simulator.workloads.attention.model import ModelShape
from simulator.workloads.models import MLA_FIELDS, MOE_FIELDS, SHAPE_FIELDS, ServedShape
from simulator.workloads.scenario import ModelSpec, resolve_topologies
from simulator.workloads.serving.capacity import DEFAULT_BLOCK_TOKENS, DEFAULT_GPU_MEMORY_UTILIZATION
from simulator.workloads.serving.requests import (FixedLength, GammaArrivals, LognormalLength, PoissonArrivals,
                                                  UniformLength)
from simulator.workloads.serving.scheduler import DEFAULT_CONTEXT_BUCKET_TOKENS

DEFAULT_MAX_NUM_SEQS = 256
"""vLLM's ``SchedulerConfig.max_num_seqs`` default (256 in vLLM 0.4-0.8)."""
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192
"""assumption: vLLM V1's token budget for an API server on a GPU of 70 GiB or more (its
``EngineArgs`` defaults by usage context; 2048 on smaller GPUs); a deployment may set its own."""
ALL_REDUCE_POLICIES = {
    "vllm": "vLLM's custom all-reduce when the group's 2, 4, 6 or 8 GPUs share one host and NVLink (it "
            "maps peer buffers with CUDA IPC, which does not cross hosts: a TP8 group over two NVL72 compute "
            "trays runs NCCL): one-shot (every GPU reads every peer's buffer: fabricsim's direct algorithm) "
            "below 512 KiB on up to 4 GPUs and 256 KiB on 6 or 8 (at every size on 2), two-shot (a direct "
            "reduce-scatter, then a direct all-gather, in one kernel) up to 8 MiB, NCCL's choice above",
    "nccl": "NCCL's tuner for every all-reduce (vLLM with --disable-custom-all-reduce)",
}
"""How a deployment's tensor-parallel all-reduces are run, by name (help and docs read this)."""
CUSTOM_ALL_REDUCE_GPUS = (2, 4, 6, 8)
"""vLLM csrc/custom_all_reduce.cuh (``REDUCE_CASE``): the group sizes its kernels are built for."""
CUSTOM_ALL_REDUCE_MAX_BYTES = 8 * 1024 * 1024
"""vLLM vllm/distributed/device_communicators/custom_all_reduce.py (``max_size = 8192 * 1024``):
larger messages go to NCCL."""


def custom_all_reduce_one_shot_bytes(gpus: int) -> int:
    """Below this size vLLM's custom all-reduce runs its one-shot kernel (csrc/custom_all_reduce.cuh,
    ``allreduce``: always on 2 GPUs; ``world_size <= 4 && bytes < 512 * 1024`` or ``world_size <= 8 &&
    bytes < 256 * 1024`` on a full NVLink group), else its two-shot kernel."""
    if gpus == 2:
        return CUSTOM_ALL_REDUCE_MAX_BYTES
    return 512 * 1024 if gpus <= 4 else 256 * 1024


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def duration_s(value: Any, what: str, allow_zero: bool = False) -> float:
    """A time written with its unit (``2 s``, ``50 ms``) in seconds; a bare number is refused, and so
    is 0 unless ``allow_zero``."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"{what} {value!r} has no unit; write it with one, such as '2 s' or '50 ms'")
    try:
        seconds = parse_quantity(value, "time")
    except UnitError as err:
        raise ValueError(f"{what}: {err}") from None
    if not any(c.isalpha() for c in value):
        raise ValueError(f"{what} {value!r} has no unit; write it with one, such as '2 s' or '50 ms'")
    if not (seconds > 0 or (allow_zero and seconds == 0)):
        raise ValueError(f"{what} {value!r} must be a time {'>=' if allow_zero else '>'} 0")
    return seconds


class ServedModelSpec(ServedShape, ModelSpec):
    """The served model: a dense or mixture-of-experts transformer, GQA or latent attention
    (``models.yaml`` names, or the numbers; the MoE and MLA fields, ``models.ServedShape``, as in a
    Hugging Face config.json)."""

    allows_moe: ClassVar[bool] = True

    def shape(self, tp: int, ep: int = 1) -> ModelShape:
        numbers = {k: getattr(self, k) for k in (*SHAPE_FIELDS, *MOE_FIELDS, *MLA_FIELDS)}
        return ModelShape(**numbers, batch=1, context=1, tp=tp, dtype=self.dtype, ep=ep)


class LengthSpec(_Item):
    """Token lengths: exactly one of ``fixed``, ``uniform`` or ``lognormal``."""

    fixed: int | None = Field(default=None, ge=1)
    uniform: tuple[int, int] | None = None
    """[low, high] tokens, both included."""
    lognormal: dict[Literal["mean", "sigma"], float] | None = None
    """``{mean: tokens, sigma: log-space standard deviation}``."""

    @model_validator(mode="after")
    def _one(self) -> "LengthSpec":
        given = [k for k in ("fixed", "uniform", "lognormal") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of fixed: N, uniform: [low, high] or lognormal: {mean: N, sigma: S}")
        if self.uniform is not None and not 1 <= self.uniform[0] <= self.uniform[1]:
            raise ValueError(f"uniform {list(self.uniform)} must be [low, high] with 1 <= low <= high")
        if self.lognormal is not None and set(self.lognormal) != {"mean", "sigma"}:
            raise ValueError("lognormal needs mean (tokens) and sigma")
        return self

    def distribution(self):  # noqa: ANN201
        if self.fixed is not None:
            return FixedLength(self.fixed)
        if self.uniform is not None:
            return UniformLength(*self.uniform)
        return LognormalLength(self.lognormal["mean"], self.lognormal["sigma"])  # type: ignore[index]


class LoadSpec(_Item):
    """The requests: a seeded arrival process at each of ``rates``, or a trace file replayed."""

    arrival: Literal["poisson", "gamma"] = "poisson"
    cv: float = Field(default=1.0, gt=0)
    """Coefficient of variation of the gaps (gamma; 1 is Poisson, more is burstier)."""
    rates: list[float] = []
    """Requests per second offered to the whole system; each rate is one run."""
    duration: str = "60 s"
    """How long requests keep arriving at each rate (with a unit)."""
    requests: int | None = Field(default=None, ge=1)
    """A fixed number of requests per rate instead of ``duration``."""
    prompt_tokens: LengthSpec | None = None
    output_tokens: LengthSpec | None = None
    trace: str | None = None
    """A trace file (relative to the scenario) replayed as written, instead of an arrival process."""
    format: Literal["azure", "burstgpt"] = "azure"
    """The trace's format: the Azure LLM inference trace or BurstGPT CSV."""

    @field_validator("rates")
    @classmethod
    def _rates(cls, value: list[float]) -> list[float]:
        for r in value:
            if not r > 0:
                raise ValueError(f"rate {r} must be > 0 requests per second")
        return value

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, value: str) -> str:
        duration_s(value, "duration")
        return value

    @model_validator(mode="after")
    def _process_or_trace(self) -> "LoadSpec":
        if self.trace is None:
            if not self.rates:
                raise ValueError("give rates: [requests per second, ...] (or a trace: file)")
            if self.prompt_tokens is None or self.output_tokens is None:
                raise ValueError("give prompt_tokens and output_tokens (or a trace: file)")
        elif self.rates or self.prompt_tokens or self.output_tokens:
            raise ValueError("a trace gives its own arrivals and lengths: leave out rates, prompt_tokens, "
                             "output_tokens")
        return self

    @property
    def duration_s(self) -> float:
        return duration_s(self.duration, "duration")

    def process(self, rate: float):  # noqa: ANN201
        return PoissonArrivals(rate) if self.arrival == "poisson" else GammaArrivals(rate, self.cv)


class SloSpec(_Item):
    """Service-level objectives; each with its unit (``2 s``, ``50 ms``)."""

    ttft: str | None = None
    """Time to first token."""
    tpot: str | None = None
    """Time per output token after the first."""

    @field_validator("ttft", "tpot", mode="before")
    @classmethod
    def _unit(cls, value: Any, info) -> Any:  # noqa: ANN001
        if value is not None:
            duration_s(value, info.field_name)
        return value

    def seconds(self) -> tuple[float | None, float | None]:
        return (None if self.ttft is None else duration_s(self.ttft, "ttft"),
                None if self.tpot is None else duration_s(self.tpot, "tpot"))


class PoolSpec(_Item):
    """Instances of one kind: ``tp`` GPUs each (``ep`` at expert parallelism), vLLM's limits."""

    tp: int = Field(default=1, ge=1)
    """Tensor-parallel GPUs of one attention group."""
    ep: int = Field(default=1, ge=1)
    """Expert-parallel GPUs of one MoE instance (a multiple of tp: ep / tp attention groups, each
    scheduling its own batch, share its MoE layers through all-to-alls); 1: experts split over tp."""
    instances: int | None = Field(default=None, ge=1)
    """Instances of the pool; left out: as many as the GPUs left hold."""
    max_num_seqs: int = Field(default=DEFAULT_MAX_NUM_SEQS, ge=1)
    max_num_batched_tokens: int = Field(default=DEFAULT_MAX_NUM_BATCHED_TOKENS, ge=1)
    chunked_prefill: bool = True
    gpu_memory_utilization: float = Field(default=DEFAULT_GPU_MEMORY_UTILIZATION, gt=0, le=1)
    preemption: Literal["recompute", "swap"] = "recompute"
    """When KV blocks run out: recompute the preempted request's KV later (vLLM V1), or swap it to
    host memory over PCIe and back (vLLM V0's swap mode; the copies simulated on the topology)."""

    @model_validator(mode="after")
    def _ep_of_tp(self) -> "PoolSpec":
        if self.ep > 1 and self.ep % self.tp:
            raise ValueError(f"ep {self.ep} is not a multiple of tp {self.tp}")
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError(f"max_num_batched_tokens {self.max_num_batched_tokens} is below max_num_seqs "
                             f"{self.max_num_seqs}; give at least {self.max_num_seqs} (vLLM's rule)")
        return self

    @property
    def gpus_per_instance(self) -> int:
        return max(self.tp, self.ep)


class DeploymentSpec(PoolSpec):
    """One way of serving on a topology: one pool (aggregated) or ``prefill`` + ``decode`` pools."""

    name: str
    prefill: PoolSpec | None = None
    decode: PoolSpec | None = None
    prefix_cache_hit_fraction: float = Field(default=0.0, ge=0, lt=1)
    imbalance: float = Field(default=1.0, ge=1)
    """Expert load of the busiest GPU over the mean (MoE at ep > 1)."""
    all_reduce: Literal[tuple(ALL_REDUCE_POLICIES)] = "vllm"  # type: ignore[valid-type]
    block_tokens: int = Field(default=DEFAULT_BLOCK_TOKENS, ge=1)
    context_bucket_tokens: int = Field(default=DEFAULT_CONTEXT_BUCKET_TOKENS, ge=1)
    iteration_overhead: str = "0 s"
    """Host time per iteration the GPU waits for (scheduling, input preparation, sampling); 0: hidden
    behind the GPU's work (vLLM V1's asynchronous scheduling)."""

    @field_validator("iteration_overhead", mode="before")
    @classmethod
    def _overhead(cls, value: str) -> str:
        duration_s(value, "iteration_overhead", allow_zero=True)
        return value

    @model_validator(mode="after")
    def _both_pools(self) -> "DeploymentSpec":
        if (self.prefill is None) != (self.decode is None):
            raise ValueError("disaggregated serving needs both a prefill: and a decode: pool")
        if self.block_tokens and self.context_bucket_tokens % self.block_tokens:
            raise ValueError(f"context_bucket_tokens {self.context_bucket_tokens} is not a multiple of "
                             f"block_tokens {self.block_tokens}")
        return self

    @property
    def disaggregated(self) -> bool:
        return self.prefill is not None

    @property
    def overhead_s(self) -> float:
        return parse_quantity(self.iteration_overhead, "time")

    def pools(self) -> list[tuple[str, PoolSpec]]:
        """(role, pool) in GPU order: ``prefill`` then ``decode``, or one ``serve`` pool."""
        if self.prefill is not None and self.decode is not None:
            return [("prefill", self.prefill), ("decode", self.decode)]
        return [("serve", self)]


class ServingScenario(_Item):
    """A whole serving scenario file (module docstring)."""

    name: str
    description: str = ""
    topologies: list[str] = Field(min_length=1)
    seed: int = 0
    engine: EngineName = "flow"
    """Engine the collectives and KV transfers are simulated on, at each message size an iteration
    asks (the flow engine by default: thousands of sizes and instances)."""
    launch: Literal["graph", "eager"] = "graph"
    """Kernel launches: a CUDA graph (vLLM V1's piecewise graphs) or eager."""
    parts: list[str] = []
    model: ServedModelSpec
    load: LoadSpec
    slo: SloSpec = SloSpec()
    deployments: list[DeploymentSpec] = Field(min_length=1)


def load_serving(path: str | Path) -> tuple[ServingScenario, list[Path], Any]:
    """Validate a serving scenario file; return it, its topology paths and its source map."""
    path = Path(path)
    data, sources = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError("a serving scenario file is a mapping of keys", file=str(path), line=1)
    if "deployments" not in data and ("workloads" in data or "jobs" in data):
        raise InputError(f"is a scenario of workloads, not a serving scenario: run it with fabricsim run {path}",
                         file=str(path), line=1)
    scenario = validate_model(ServingScenario, data, sources)
    topologies = resolve_topologies(scenario.topologies, path, sources)
    if scenario.load.trace is not None:
        trace = Path(scenario.load.trace)
        trace = trace if trace.is_absolute() else path.parent / trace
        if not trace.is_file():
            raise sources.error(("load", "trace"), f"no such trace file {str(trace)!r}")
        scenario = scenario.model_copy(update={"load": scenario.load.model_copy(update={"trace": str(trace)})})
    names = [d.name for d in scenario.deployments]
    for i, name in enumerate(names):
        if names.index(name) != i:
            raise sources.error(("deployments", i, "name"), f"deployment name {name!r} is used twice; "
                                                            "give each a name of its own")
    return scenario, topologies, sources
