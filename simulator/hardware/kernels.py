"""What one GPU kernel costs: the model that attention, the transformer layer, Chakra COMP nodes and
NCCL's kernels all ask.

A kernel's time is its fixed cost (launch, ramp-up and tail: in a CUDA graph or launched eagerly)
plus the longer of its memory time and its tensor-core time:

- **Memory-level parallelism.** A CTA keeps a bounded number of bytes in flight, so by Little's law
  ``n`` CTAs draw at most ``n x cta_Bps``; HBM saturates below its peak (``efficiency x peak``). The
  achieved rate is their soft minimum, ``R(n) = ((n cta_Bps)^-k + (eff peak)^-k)^(-1/k)``, with ``n``
  the CTAs resident at once. A kernel with fewer CTAs than SMs is bound by its CTAs, not by a
  fraction of the peak.
- **Kernel class.** Each class (copy, elementwise, activation, reduction, norm, softmax, the weight
  stream of a GEMM, attention's KV read) saturates at its own fraction of the HBM peak.
- **Tensor cores.** A GEMM's output is tiled (128 x 128); tiles run on the SMs in waves and a partial
  wave or a padded tile costs a whole one; sustained tensor work runs at the clock the board power cap
  allows (``tensor_sustained_efficiency``).
- **FlashAttention.** Prefill runs FlashAttention-2's forward kernel (CTAs = batch x heads x query
  blocks of 128) at ``flash_attention_efficiency`` of the dense peak; decode runs its split-KV kernel
  with the library's own split heuristic (``flash_decoding_splits``) and, when it splits, a combine
  kernel.

Parameters per architecture live in ``parts/kernels.yaml``; a calibration file (``fabricsim
calibrate``) overrides fields of one architecture. Everything here is pure arithmetic and cached: a
serving run asks the same shapes millions of times.
"""

from __future__ import annotations

import functools
import heapq
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from pydantic import Field, ValidationError, field_validator

from simulator.errors import InputError
from simulator.hardware.devices import GpuSpec
from simulator.hardware.part import BytesPerSecond, Part, Seconds
from simulator.hardware.yamlfile import YamlFile

PARTS_FILE = Path(__file__).with_name("parts") / "kernels.yaml"

STREAM = "stream"
"""The streaming copy kernel of the CTA-count microbenchmark: saturates at ``hbm_efficiency``."""
KERNEL_CLASSES = ("copy", "elementwise", "activation", "reduction", "norm", "softmax", "gemm", "attention")
"""Kernel classes by what a byte costs them: each saturates HBM at its own fraction of the peak."""
POWER_STATES = ("idle", "copy", "memory", "tensor", "pcie")
"""Board power states: idle; HBM copy (streaming, little compute); memory-bound compute (attention,
decode GEMMs); tensor-bound; PCIe copy."""
BOUNDS = ("fixed cost", "CTA concurrency", "HBM", "tensor cores", "power cap")
"""What bounds a kernel: its fixed cost, too few CTAs to draw HBM, HBM itself, the tensor cores, or
the board power cap holding the SM clock down."""
LaunchMode = Literal["graph", "eager"]
LAUNCH_MODES = ("graph", "eager")
CALIBRATION_SECTIONS = ("calibration", "kernels")
"""Top-level sections a calibration file may hold (``calibration``: who measured what, where)."""
SKINNY_TILE_N = 64
"""Output columns per CTA of cuBLAS's skinny GEMMs (fewer rows than a tile), while 64-column tiles
number at most two per SM: the H200 run's kernel names at M = 1-64 (nvjet_sm90_tst_64x8,
64x32, 64x64; 128x8 for N = 28,672)."""
SPLIT_K_FILL = 0.85
"""A GEMM splits K when its tiles fill at most this fraction of the SMs (assumption, from the H200
run's kernel names: split-K at 20 and 112 tiles of 64 columns on 132 SMs, none at 128; the 85% is
FlashAttention-2's wave-efficiency bar for the same decision)."""
SPLIT_K_MIN = 256
"""Shortest K slice of a split-K GEMM CTA (assumption: below a few 64-deep k-blocks per CTA the
fp32 partial sums cost more than the parallelism brings)."""
FLASH_MAX_SPLITS = 128
"""FlashAttention-2 flash_api.cpp: num_splits_heuristic(..., 128): at most 128 KV splits."""
FLASH_SPLIT_BLOCK_M = 64
"""FlashAttention-2 set_params_splitkv: 'kBlockM = 64 only for the splitKV kernels'."""
FLASH_FWD_BLOCK_M = 128
"""FlashAttention-2 forward, head dim 128: 128 query rows per CTA (flash_fwd_launch_template.h
run_mha_fwd_hdim128: Flash_fwd_kernel_traits<128, 128, 64, 4, ...>; the kernel name the H200 run
recorded)."""
FLASH_FWD_BLOCK_N = 64
"""FlashAttention-2 forward, head dim 128: 64 key rows per main-loop step (the same traits)."""
LIST_SCHEDULE_MAX_CTAS = 4096
"""Above this many CTAs the greedy schedule of a FlashAttention forward kernel is taken in closed
form (total / SMs + half the longest CTA, the middle of Graham's list-scheduling bound) instead of
CTA by CTA (assumption: at 30+ waves the two differ by under 2%; the closed form keeps a serving
run's varied prefill chunks cheap)."""


def flash_split_block_n(head_dim: int) -> int:
    """KV rows per block of FlashAttention-2's split-KV kernel (flash_api.cpp set_params_splitkv:
    ``head_size <= 64 ? 256 : (head_size <= 128 ? 128 : 64)``)."""
    return 256 if head_dim <= 64 else 128 if head_dim <= 128 else 64


def flash_decoding_splits(batch_nheads_mblocks: int, num_sms: int, num_n_blocks: int,
                          max_splits: int = FLASH_MAX_SPLITS) -> int:
    """FlashAttention-2's ``num_splits_heuristic`` (csrc/flash_attn/flash_api.cpp), as written there:
    no split when the CTAs almost fill the SMs; else the fewest splits whose wave efficiency reaches
    85% of the best. ``num_sms`` is the library's SM count x 2 (128 threads per CTA)."""
    if batch_nheads_mblocks >= 0.8 * num_sms:
        return 1
    max_splits = min(max_splits, num_sms, num_n_blocks)

    def eligible(s: int) -> bool:
        return s == 1 or math.ceil(num_n_blocks / s) != math.ceil(num_n_blocks / (s - 1))

    eff = {}
    for s in range(1, max_splits + 1):
        if eligible(s):
            waves = batch_nheads_mblocks * s / num_sms
            eff[s] = waves / math.ceil(waves)
    best = max(eff.values(), default=0.0)
    for s in range(1, max_splits + 1):
        if s in eff and eff[s] >= 0.85 * best:
            return s
    return 1


class ArchitectureKernels(Part):
    """What a kernel costs on one GPU architecture (fractions are of the GPU part's own peaks)."""

    graph_kernel_s: Seconds = Field(gt=0)
    """Fixed cost of one kernel inside a CUDA graph (s): launch, ramp-up, tail."""
    eager_kernel_s: Seconds = Field(gt=0)
    """Fixed cost of one kernel launched eagerly from Python (s): host-bound."""
    cta_Bps: BytesPerSecond = Field(gt=0)
    """HBM rate one streaming CTA draws on its own (bytes in flight / loaded latency)."""
    hbm_efficiency: float = Field(gt=0, le=1)
    """Streaming rate at saturation, as a fraction of the HBM peak."""
    mlp_sharpness: float = Field(gt=0)
    """Exponent k of the soft minimum between CTA-bound and HBM-bound rates."""
    resident_ctas_per_sm: int = Field(gt=0)
    """CTAs of a streaming kernel one SM holds at once (more CTAs run in later waves)."""
    class_efficiency: dict[str, float]
    """Kernel class -> HBM rate at saturation as a fraction of the peak."""
    class_latency_s: dict[str, Seconds] = Field(default_factory=dict)
    """Kernel class -> the shortest time a kernel of the class takes beyond its fixed cost (s), however
    few bytes it moves: its dependent memory round trips (one for a streaming kernel; a reduction's
    passes, block-wide and cross-CTA combines). A kernel lasts the longer of this and its bytes' time
    (each CTA's first loads take a round trip; Little's law covers the rest). Not listed: none."""
    l2_cold_latency_factor: float = Field(default=1.0, ge=1)
    """How much longer a memory kernel's latency is when L2 holds none of its data (s / s): after a
    kernel that streamed more than L2 (a layer's weight GEMMs), its dependent round trips go to HBM,
    not L2. The class and row latencies are measured hot (a kernel replayed back to back)."""
    row_latency_s: dict[str, Seconds] = Field(default_factory=dict)
    """Row-kernel class (norm, softmax, reduction) -> latency per element of a row (s): one CTA walks
    its row in a serial loop of dependent steps (two passes for a norm: sum of squares, then scale),
    so a decode step's one-row norm lasts in proportion to the hidden size."""
    attention_cta_Bps: BytesPerSecond = Field(gt=0)
    """KV rate one FlashAttention split-KV CTA draws on its own."""
    attention_ctas_per_sm: int = Field(gt=0)
    """FlashAttention CTAs one SM holds at once (the library's heuristic counts SMs x this)."""
    attention_cta_latency_s: Seconds = Field(ge=0)
    """A FlashAttention forward CTA's prologue and epilogue (s): its Q tile in from HBM before the
    first MMA, its O tile out after the last; on the SM's critical path once per CTA."""
    split_kv_latency_s: Seconds = Field(ge=0)
    """Critical path of a split-KV decode call beyond its kernels' fixed costs (s): one CTA's
    dependent round trips (Q and the first K/V tile in, the partial output and LSE out) and the
    combine kernel's LSE pass; not hidden when each CTA reads only a few KV blocks."""
    combine_split_s: Seconds = Field(ge=0)
    """Time per split of the combine kernel's serial loop over the splits' partial outputs (s):
    FlashAttention-2 combine_attn_seqk_parallel reads split after split, one L2 round trip each."""
    tensor_efficiency: float = Field(gt=0, le=1)
    """Dense GEMM rate on whole waves of tiles, as a fraction of the dense peak."""
    tensor_sustained_efficiency: float = Field(gt=0, le=1)
    """The most sustained tensor work reaches under the board power cap (fraction of the dense peak)."""
    tensor_sustained_efficiency_fp8: float | None = Field(default=None, gt=0, le=1)
    """The same for FP8 GEMMs (fraction of the FP8 dense peak); None: as bf16. FP8 does twice the
    FLOPs per cycle for less than twice the power, so the cap holds it to a smaller fraction."""
    gemm_tile_m: int = Field(gt=0)
    """GEMM output tile rows (one CTA per tile)."""
    gemm_tile_n: int = Field(gt=0)
    """GEMM output tile columns."""
    flash_attention_efficiency: float = Field(gt=0, le=1)
    """FlashAttention forward (prefill) on full waves, as a fraction of the dense peak."""
    power_fraction: dict[str, float]
    """Power state -> board power as a fraction of the GPU's cap (``POWER_STATES``)."""

    @field_validator("class_efficiency")
    @classmethod
    def _classes(cls, value: dict[str, float]) -> dict[str, float]:
        return _fractions(value, KERNEL_CLASSES, "kernel class")

    @field_validator("class_latency_s", "row_latency_s")
    @classmethod
    def _latencies(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(KERNEL_CLASSES))
        if unknown:
            raise ValueError(f"unknown kernel class {unknown[0]!r}; choose {', '.join(KERNEL_CLASSES)}")
        bad = [k for k, v in value.items() if v < 0]
        if bad:
            raise ValueError(f"{bad[0]}: a latency cannot be negative")
        return value

    @field_validator("power_fraction")
    @classmethod
    def _states(cls, value: dict[str, float]) -> dict[str, float]:
        return _fractions(value, POWER_STATES, "power state")


def _fractions(value: dict[str, float], names: Sequence[str], what: str) -> dict[str, float]:
    unknown = sorted(set(value) - set(names))
    if unknown:
        raise ValueError(f"unknown {what} {unknown[0]!r}; choose {', '.join(names)}")
    missing = [n for n in names if n not in value]
    if missing:
        raise ValueError(f"no {what} {missing[0]!r} (every one of {', '.join(names)} is needed)")
    bad = [k for k, v in value.items() if not 0 < v <= 1]
    if bad:
        raise ValueError(f"{bad[0]}: {value[bad[0]]} is not a fraction in (0, 1]")
    return value


class KernelTable(Part):
    architectures: dict[str, ArchitectureKernels]

    def architecture(self, name: str) -> ArchitectureKernels:
        try:
            return self.architectures[name]
        except KeyError:
            raise InputError(f"no kernel constants for architecture {name!r}; known: "
                             f"{', '.join(sorted(self.architectures))}", file=str(PARTS_FILE)) from None


def _validation_error(doc: YamlFile, err: ValidationError, prefix: Sequence[str | int] = ()) -> InputError:
    first = err.errors()[0]
    loc = [p for p in first["loc"] if p not in ("function-after", "function-before")]
    msg = first["msg"].removeprefix("Value error, ")
    keys = [*prefix, *loc]
    return InputError(msg, file=str(doc.path), line=doc.line_of(keys), field=".".join(str(k) for k in keys))


@functools.lru_cache(maxsize=None)
def load_kernel_table(overrides: tuple[str, ...] = ()) -> KernelTable:
    """The built-in kernel constants with the ``kernels:`` sections of ``overrides`` applied in order,
    field by field (a calibration file replaces what it measured and keeps the rest). Cached.

    Raises ``InputError`` at FILE:LINE for an unknown architecture or field, or a bad value."""
    base = YamlFile(PARTS_FILE)
    try:
        table = KernelTable.model_validate(base.data)
    except ValidationError as err:
        raise _validation_error(base, err) from None
    for path in overrides:
        table = apply_overrides(table, YamlFile(Path(path)))
    return table


def apply_overrides(table: KernelTable, doc: YamlFile) -> KernelTable:
    """``table`` with the ``kernels:`` section of one parts or calibration file applied."""
    section = (doc.data or {}).get("kernels") if isinstance(doc.data, dict) else None
    if section is None:
        return table
    if not isinstance(section, dict):
        raise InputError("kernels: expected a mapping of architecture names to fields", file=str(doc.path),
                         line=doc.line_of(["kernels"]), field="kernels")
    archs = dict(table.architectures)
    for arch, fields in section.items():
        where = ["kernels", arch]
        if arch not in archs:
            raise InputError(f"unknown architecture {arch!r}; choose {', '.join(sorted(archs))}",
                             file=str(doc.path), line=doc.line_of(where), field=".".join(map(str, where)))
        if not isinstance(fields, dict):
            raise InputError("expected a mapping of fields", file=str(doc.path), line=doc.line_of(where),
                             field=".".join(map(str, where)))
        if not isinstance(fields.get("sources", {}), dict):
            raise InputError("sources: expected a mapping of field names to sources", file=str(doc.path),
                             line=doc.line_of([*where, "sources"]), field=".".join(map(str, [*where, "sources"])))
        stray = sorted(set(fields.get("sources") or {}) - set(fields))
        if stray:
            raise InputError(f"a source for {stray[0]!r}, which this file does not set (a built-in value must keep "
                             "its own source)", file=str(doc.path), line=doc.line_of([*where, "sources", stray[0]]),
                             field=".".join(map(str, [*where, "sources", stray[0]])))
        known = set(ArchitectureKernels.model_fields)
        for key in fields:
            if key not in known:
                raise InputError(f"unknown field {key!r}; choose {', '.join(sorted(known - {'sources'}))}",
                                 file=str(doc.path), line=doc.line_of([*where, key]),
                                 field=".".join(map(str, [*where, key])))
        old = archs[arch]
        merged: dict[str, Any] = old.model_dump()
        for key, value in fields.items():
            if key == "sources":
                continue
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value
        merged["sources"] = {**old.sources, **(fields.get("sources") or {})}
        missing = [k for k in fields if k != "sources" and k not in (fields.get("sources") or {})]
        if missing:
            key = missing[0]
            raise InputError(f"no source for {key} (add sources.{key}: 'measured, <GPU>, <date>, <script>' "
                             "or 'assumption: <reasoning>')", file=str(doc.path), line=doc.line_of([*where, key]),
                             field=".".join(map(str, [*where, key])))
        try:
            archs[arch] = ArchitectureKernels.model_validate(merged)
        except ValidationError as err:
            raise _validation_error(doc, err, where) from None
    return table.model_copy(update={"architectures": archs})


@dataclass(frozen=True, slots=True)
class KernelCost:
    """What one operation's kernels cost on one GPU."""

    name: str
    time_s: float
    kernels: int
    """Kernels launched (each pays the fixed cost)."""
    bound: str
    """One of ``BOUNDS``."""
    fixed_s: float
    """The fixed cost of those kernels, part of ``time_s``."""
    flops: float = 0.0
    bytes: float = 0.0
    """HBM bytes read and written."""
    ctas: int = 0
    sm_occupancy: float = 0.0
    """Fraction of SMs holding at least one CTA of the operation's main kernel."""
    power_state: str = "memory"
    group: str = "other"
    """``attention``, ``gemm`` or ``other``: the columns of a layer's breakdown."""
    detail: str = ""

    @property
    def achieved_Bps(self) -> float:
        work = self.time_s - self.fixed_s
        return self.bytes / work if work > 0 else 0.0


def soft_min(a: float, b: float, k: float) -> float:
    """((a^-k + b^-k)^(-1/k)): the smaller of a and b, rounded where they meet."""
    return (a ** -k + b ** -k) ** (-1.0 / k)


@dataclass(frozen=True, eq=False)
class GpuKernels:
    """The kernel cost model of one GPU part, in one launch mode. Hashed by identity (``kernel_model``
    returns one instance per GPU part, mode and calibration), so its answers are cached."""

    gpu: str
    spec: GpuSpec
    arch: ArchitectureKernels
    launch: LaunchMode = "graph"

    @property
    def kernel_s(self) -> float:
        """Fixed cost of one kernel in this launch mode."""
        return self.arch.graph_kernel_s if self.launch == "graph" else self.arch.eager_kernel_s

    def sustained_efficiency(self, dtype: str) -> float:
        """The most sustained tensor work reaches under the board power cap, of ``dtype``'s peak."""
        a = self.arch
        return (a.tensor_sustained_efficiency_fp8 or a.tensor_sustained_efficiency) if dtype == "fp8" \
            else a.tensor_sustained_efficiency

    def peak_flops(self, dtype: str) -> float:
        return (self.spec.fp8_flops or self.spec.bf16_flops) if dtype == "fp8" else self.spec.bf16_flops

    # ---- memory ---------------------------------------------------------------------------------
    def efficiency(self, kind: str) -> float:
        """HBM rate at saturation of kernel class ``kind`` as a fraction of the peak."""
        return self.arch.hbm_efficiency if kind == STREAM else self.arch.class_efficiency[kind]

    @functools.lru_cache(maxsize=65536)
    def hbm_Bps(self, ctas: int, kind: str = "copy") -> float:
        """HBM rate ``ctas`` CTAs of a ``kind`` kernel (``KERNEL_CLASSES`` or ``stream``) draw together (B/s)."""
        a = self.arch
        if kind == "attention":
            active, per_cta = min(ctas, self.spec.sms * a.attention_ctas_per_sm), a.attention_cta_Bps
        else:
            active, per_cta = min(ctas, self.spec.sms * a.resident_ctas_per_sm), a.cta_Bps
        sat = self.spec.hbm_Bps * self.efficiency(kind)
        return soft_min(max(1, active) * per_cta, sat, a.mlp_sharpness)

    def _memory_bound(self, ctas: int, kind: str) -> str:
        """``CTA concurrency`` when the CTAs draw under 80% of what the class could (assumption:
        the point where the soft minimum has left the saturated plateau), else ``HBM``."""
        sat = self.spec.hbm_Bps * self.efficiency(kind)
        return "CTA concurrency" if self.hbm_Bps(ctas, kind) < 0.8 * sat else "HBM"

    @functools.lru_cache(maxsize=65536)
    def memory(self, name: str, nbytes: float, ctas: int, kind: str = "elementwise", kernels: int = 1,
               flops: float = 0.0, group: str = "other", state: str = "copy", row: int = 0,
               cold: bool = False) -> KernelCost:
        """A memory-bound kernel moving ``nbytes`` (read + written) with ``ctas`` CTAs: its fixed
        cost plus the longer of its bytes' time and its latency (``class_latency_s``, and for a row
        kernel ``row`` elements x ``row_latency_s``; x ``l2_cold_latency_factor`` when ``cold``: the
        kernel runs after one that streamed more than L2)."""
        a = self.arch
        fixed = kernels * self.kernel_s
        work = nbytes / self.hbm_Bps(ctas, kind) if nbytes else 0.0
        latency = a.class_latency_s.get(kind, 0.0) + row * a.row_latency_s.get(kind, 0.0)
        if cold:
            latency *= a.l2_cold_latency_factor
        bound = "fixed cost" if fixed + latency >= work else self._memory_bound(ctas, kind)
        return KernelCost(name, fixed + kernels * max(latency, work / kernels), kernels, bound, fixed, flops,
                          nbytes, ctas, min(1.0, ctas / self.spec.sms), state, group, kind)

    def elementwise(self, name: str, nbytes: float, kind: str = "elementwise", group: str = "other",
                    rows: int | None = None, row: int = 0, cold: bool = False) -> KernelCost:
        """A PyTorch-style elementwise kernel (one CTA per 512 elements of 2 bytes: 128 threads x 4,
        assumption from ATen's vectorized elementwise loop) or a row kernel (norm, softmax: one CTA
        per row, ``rows`` rows of ``row`` elements); ``cold``: see ``memory``."""
        ctas = rows if rows is not None else max(1, math.ceil(nbytes / 1024))
        return self.memory(name, float(nbytes), int(ctas), kind, group=group, row=int(row), cold=cold)

    # ---- tensor cores ---------------------------------------------------------------------------
    @functools.lru_cache(maxsize=65536)
    def gemm(self, name: str, m: int, n: int, k: int, dtype: str = "bf16", group: str = "gemm") -> KernelCost:
        """``[m, k] x [k, n]`` with 2-byte (or FP8 1-byte) operands.

        Tiles of ``gemm_tile_m x gemm_tile_n`` outputs (``SKINNY_TILE_N`` columns for a skinny GEMM),
        one CTA each; a GEMM whose tiles fill at most ``SPLIT_K_FILL`` of the SMs (skinny at decode,
        or small) splits K over SMs / tiles CTAs per tile (at least two, as cuBLAS splits 112 tiles
        on 132 SMs), each a slice of at least ``SPLIT_K_MIN``, and a second kernel adds the fp32
        partial sums (cuBLAS's ``splitKreduce_kernel``, in the H200 run's profiles: a fixed cost and
        one round trip). The partial sums stay in L2: with tiles x splits <= SMs they are at most
        4 B x 128 x 128 x SMs (8.7 MB on 132 SMs), under every GPU's L2. Tensor time: ceil(CTAs /
        SMs) waves, each one CTA's FLOPs at the per-SM rate, never faster than the power-capped
        sustained rate. Memory time: operands and output through HBM at the rate the CTAs draw. The
        longer wins."""
        a, s = self.arch, 1 if dtype == "fp8" else 2
        tm, tn, sms = a.gemm_tile_m, a.gemm_tile_n, self.spec.sms
        if m < tm and math.ceil(n / SKINNY_TILE_N) <= 2 * sms:
            tn = SKINNY_TILE_N
        tiles = math.ceil(m / tm) * math.ceil(n / tn)
        splits_k = tiles <= SPLIT_K_FILL * sms and k >= 2 * SPLIT_K_MIN
        split = max(2, min(sms // tiles, k // SPLIT_K_MIN)) if splits_k else 1
        ctas = tiles * split
        waves = math.ceil(ctas / sms)
        peak = self.peak_flops(dtype)
        flops = 2.0 * m * n * k
        t_tiles = waves * 2.0 * tm * tn * math.ceil(k / split) / (peak * a.tensor_efficiency / sms)
        t_power = flops / (peak * self.sustained_efficiency(dtype))
        t_tensor = max(t_tiles, t_power)
        nbytes = float((m * k + k * n) * s + m * n * 2)
        t_mem = nbytes / self.hbm_Bps(ctas, "gemm")
        kernels = 2 if split > 1 else 1
        fixed = kernels * self.kernel_s
        reduce = a.class_latency_s.get("elementwise", 0.0) if split > 1 else 0.0
        work = max(t_tensor, t_mem)
        if fixed + reduce >= work:
            bound = "fixed cost"
        elif t_tensor >= t_mem:
            bound = "power cap" if t_power >= t_tiles else "tensor cores"
        else:
            bound = self._memory_bound(ctas, "gemm")
        detail = (f"{m}x{n}x{k}, {tiles} tiles" + (f" x {split} K-splits + reduce" if split > 1 else "")
                  + f", {waves} wave(s)")
        return KernelCost(name, fixed + reduce + work, kernels, bound, fixed, flops, nbytes, ctas,
                          min(1.0, ctas / sms), "tensor" if t_tensor >= t_mem else "memory", group, detail)

    # ---- attention ------------------------------------------------------------------------------
    def _attention_sm_flops(self, dtype: str) -> float:
        """FLOP/s one SM's tensor cores give a FlashAttention-2 CTA (its share of
        ``flash_attention_efficiency`` x the dense peak)."""
        return self.peak_flops(dtype) * self.arch.flash_attention_efficiency / self.spec.sms

    @functools.lru_cache(maxsize=65536)
    def _flash_forward_makespan(self, ctas_per_head: tuple[int, ...], repeats: int, dtype: str,
                                head_dim: int) -> tuple[float, float]:
        """(makespan, executed FLOPs) of FlashAttention-2's forward kernel whose CTAs, in launch order
        (``blockIdx.x`` = query block fastest, then batch, then head), are ``repeats`` copies of
        ``ctas_per_head`` (key blocks of ``FLASH_FWD_BLOCK_N`` each query block reads).

        Each CTA's tile work (``FLASH_FWD_BLOCK_M`` x ``FLASH_FWD_BLOCK_N`` x d x 4 FLOPs per key
        block, padded rows included) runs on one SM at the SM's share of the FlashAttention rate,
        after its ``attention_cta_latency_s``; the block scheduler hands the next CTA to the first SM
        that frees (greedy list scheduling).
        So a causal kernel with fewer CTAs than SMs lasts as long as its longest CTA, and one with a
        few waves pays for the uneven ones at its end."""
        unit = FLASH_FWD_BLOCK_M * FLASH_FWD_BLOCK_N * head_dim * 4.0
        rate = self._attention_sm_flops(dtype)
        flops = sum(ctas_per_head) * repeats * unit
        work = [self.arch.attention_cta_latency_s + b * unit / rate for b in ctas_per_head]
        n, sms = len(work) * repeats, self.spec.sms
        total = sum(work) * repeats
        if n == 0 or flops == 0:
            return 0.0, 0.0
        if len(set(work)) == 1:
            return math.ceil(n / sms) * work[0], flops
        if n > LIST_SCHEDULE_MAX_CTAS:
            return total / sms + max(work) / 2, flops
        free = [0.0] * min(sms, n)
        for _ in range(repeats):
            for w in work:
                heapq.heapreplace(free, free[0] + w)
        return max(free), flops

    def _forward_blocks(self, q_tokens: int, kv_tokens: int, causal: bool) -> tuple[int, ...]:
        """Key blocks each query block of the forward kernel reads: all of them, or under a causal
        mask (bottom-right aligned, as FlashAttention-2 aligns it when q < kv) those up to the
        block's last row."""
        blocks = []
        for m in range(math.ceil(q_tokens / FLASH_FWD_BLOCK_M)):
            last = min(q_tokens, (m + 1) * FLASH_FWD_BLOCK_M)
            seen = min(kv_tokens, kv_tokens - q_tokens + last) if causal else kv_tokens
            blocks.append(max(0, math.ceil(seen / FLASH_FWD_BLOCK_N)))
        return tuple(blocks)

    @functools.lru_cache(maxsize=65536)
    def decode_attention(self, batch: int, heads: int, kv_heads: int, context: int, head_dim: int,
                         dtype: str = "bf16", split: bool = True, shared_kv: bool = False) -> KernelCost:
        """One layer's decode attention (one new query token per sequence) on this GPU.

        ``split`` (vLLM, ``flash_attn_with_kvcache``): FlashAttention-2's split-KV kernel. With one
        query token and GQA the query heads of a KV group ride in one CTA
        (``seqlenq_ngroups_swapped``), so there are batch x kv_heads x ceil(group / 64) CTAs, times
        the KV splits its heuristic picks. Each CTA reads its share of the KV cache: the reads are
        bound by the CTAs in flight (``attention_cta_Bps``) or by HBM, or by its tensor work on a
        64-row query tile (padded rows included), and a call pays ``split_kv_latency_s``. A split
        run adds a combine kernel that loops over the splits (``combine_split_s`` each) reading
        their fp32 partial outputs.

        Not ``split`` (plain FlashAttention, as PyTorch SDPA runs it when the heuristic gives one
        split): the forward kernel with its 128-row query tile holding one real row per query head of
        a KV group, so its tensor work is 128 / group x the useful FLOPs, scheduled over the SMs as
        ``prefill_attention`` is.

        ``shared_kv`` (multi-head latent attention with its up-projections absorbed, as FlashMLA runs
        decode): keys and values are one cached latent of ``head_dim`` elements per token, read once,
        and every query head attends to it (``kv_heads`` 1); the FLOPs stay 4 x head_dim per query
        head and key (MLA's values are the latent's first kv_lora_rank elements: 6% fewer for
        DeepSeek-V3's 512 of 576)."""
        if not split:  # GQA: the group's query heads are the query rows of one KV head (seqlenq_ngroups_swapped)
            group = max(1, heads // kv_heads)
            return self.prefill_attention(batch, kv_heads, kv_heads, group, context, head_dim, dtype, causal=False)
        s = 1 if dtype == "fp8" else 2
        a = self.arch
        group = max(1, heads // kv_heads)
        mblocks = math.ceil(group / FLASH_SPLIT_BLOCK_M)
        bhm = batch * kv_heads * mblocks
        block_n = flash_split_block_n(head_dim)
        nblocks = math.ceil(context / block_n)
        slots = self.spec.sms * a.attention_ctas_per_sm
        splits = flash_decoding_splits(bhm, slots, nblocks)
        ctas = bhm * splits
        kv = float(batch * context * (1 if shared_kv else 2) * kv_heads * head_dim * s)
        io = float(2 * batch * heads * head_dim * s)
        flops = 4.0 * batch * heads * context * head_dim
        per_cta = math.ceil(nblocks / splits) * FLASH_SPLIT_BLOCK_M * block_n * head_dim * 4.0
        waves = math.ceil(ctas / self.spec.sms)
        t_flops = waves * per_cta / self._attention_sm_flops(dtype)
        t_mem = (kv + io) / self.hbm_Bps(ctas, "attention")
        fixed = self.kernel_s
        work = max(t_mem, t_flops)
        bound = ("fixed cost" if fixed >= work else "tensor cores" if t_flops > t_mem
                 else self._memory_bound(ctas, "attention"))
        main = KernelCost("attention", fixed + a.split_kv_latency_s + work, 1, bound, fixed, flops, kv + io, ctas,
                          min(1.0, ctas / self.spec.sms), "memory", "attention",
                          f"{ctas} CTAs ({bhm} x {splits} split{'s' if splits > 1 else ''})")
        if splits == 1:
            return main
        partial = float(splits * batch * heads * (head_dim + 1) * 4 + batch * heads * head_dim * s)
        # its latency is the loop over splits (combine_split_s) and split_kv_latency_s, not a torch reduction's
        combine = self.memory("combine", partial, batch * heads, "elementwise", group="attention", state="memory")
        t_combine = combine.time_s + splits * a.combine_split_s
        t = main.time_s + t_combine
        worst = main if main.time_s >= t_combine else combine
        return KernelCost("attention", t, 2, worst.bound, main.fixed_s + combine.fixed_s, flops,
                          main.bytes + combine.bytes, ctas, main.sm_occupancy, "memory", "attention",
                          main.detail + " + combine")

    @functools.lru_cache(maxsize=65536)
    def prefill_attention(self, batch: int, heads: int, kv_heads: int, q_tokens: int, kv_tokens: int,
                          head_dim: int, dtype: str = "bf16", causal: bool = True) -> KernelCost:
        """FlashAttention-2's forward kernel over ``q_tokens`` queries against ``kv_tokens`` keys.

        CTAs: batch x heads x ceil(q / 128), each reading the key blocks its query block sees (a
        causal mask skips the blocks above the diagonal); their tile work is scheduled over the SMs
        (``_flash_forward_makespan``). HBM: Q, K, V and O once. Reported FLOPs are the useful ones
        (4 x d per query row and key it sees, per head)."""
        s = 1 if dtype == "fp8" else 2
        blocks = self._forward_blocks(q_tokens, kv_tokens, causal)
        ctas = batch * heads * len(blocks)
        t_flops, _ = self._flash_forward_makespan(blocks, batch * heads, dtype, head_dim)
        seen = (q_tokens * (kv_tokens - q_tokens) + q_tokens * (q_tokens + 1) / 2
                if causal and kv_tokens >= q_tokens else q_tokens * kv_tokens)
        flops = 4.0 * batch * heads * seen * head_dim
        sms = self.spec.sms
        waves = math.ceil(ctas / sms)
        nbytes = float(batch * (2 * q_tokens * heads + 2 * kv_tokens * kv_heads) * head_dim * s)
        t_mem = nbytes / self.hbm_Bps(ctas, "attention")
        fixed = self.kernel_s
        work = max(t_flops, t_mem)
        bound = ("fixed cost" if fixed >= work else "tensor cores" if t_flops >= t_mem
                 else self._memory_bound(ctas, "attention"))
        return KernelCost("attention", fixed + work, 1, bound, fixed, flops, nbytes, ctas,
                          min(1.0, ctas / sms), "tensor" if t_flops >= t_mem else "memory", "attention",
                          f"{ctas} CTAs, {waves} wave(s)")

    # ---- a generic kernel (Chakra COMP nodes) ---------------------------------------------------
    @functools.lru_cache(maxsize=65536)
    def generic(self, name: str, flops: float, nbytes: float, dtype: str = "bf16") -> KernelCost:
        """A kernel known only by its FLOPs and bytes: a full-GPU kernel at the sustained tensor rate
        and the saturated streaming rate, whichever is longer, plus one fixed cost."""
        t_c = flops / (self.peak_flops(dtype) * self.sustained_efficiency(dtype))
        t_m = nbytes / (self.spec.hbm_Bps * self.arch.hbm_efficiency)
        fixed = self.kernel_s
        work = max(t_c, t_m)
        bound = "fixed cost" if fixed >= work else "tensor cores" if t_c >= t_m else "HBM"
        return KernelCost(name, fixed + work, 1, bound, fixed, flops, nbytes, self.spec.sms, 1.0,
                          "tensor" if t_c >= t_m else "memory", "other")

    # ---- power ----------------------------------------------------------------------------------
    def power_W(self, state: str) -> float:
        """Board power in ``state`` (W)."""
        return self.spec.board_power_W * self.arch.power_fraction[state]


def kernel_model(gpu: str, spec: GpuSpec, launch: LaunchMode = "graph",
                 overrides: Sequence[str | Path] = ()) -> GpuKernels:
    """The kernel model of GPU part ``gpu`` (spec from its device part), with calibration overrides;
    one instance per (part, mode, overrides), so the caches of its methods are shared."""
    if launch not in LAUNCH_MODES:
        raise InputError(f"unknown launch mode {launch!r}; choose {', '.join(LAUNCH_MODES)}", field="launch")
    return _kernel_model(gpu, spec.model_dump_json(), launch, tuple(str(p) for p in overrides))


@functools.lru_cache(maxsize=256)
def _kernel_model(gpu: str, spec_json: str, launch: str, overrides: tuple[str, ...]) -> GpuKernels:
    spec = GpuSpec.model_validate_json(spec_json)
    return GpuKernels(gpu, spec, load_kernel_table(overrides).architecture(spec.architecture), launch)  # type: ignore[arg-type]


def has_kernel_section(data: Mapping[str, Any] | None) -> bool:
    return isinstance(data, dict) and "kernels" in data


__all__ = ["ArchitectureKernels", "BOUNDS", "STREAM", "CALIBRATION_SECTIONS", "GpuKernels", "KERNEL_CLASSES",
           "KernelCost", "KernelTable", "LAUNCH_MODES", "LaunchMode", "POWER_STATES", "apply_overrides",
           "flash_decoding_splits", "flash_split_block_n", "kernel_model", "load_kernel_table", "soft_min"]
