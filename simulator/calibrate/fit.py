"""Fit the kernel model's constants (``parts/kernels.yaml``, ``ArchitectureKernels``) to one run of
``microbench.py``, and compare every microbenchmark point with what the fitted model predicts.

Pure Python and numpy (no GPU, no scipy): ``fit(doc)`` takes the JSON document a run wrote. How each
constant is derived (each one's ``sources`` entry says the same):

- ``graph_kernel_s``, ``eager_kernel_s``: the per-kernel time of 200 back-to-back tiny kernels in
  one CUDA graph, and launched eagerly.
- ``cta_Bps``, ``hbm_efficiency``, ``mlp_sharpness``: least squares in log space of the stream
  curve, ``R(n) = ((min(n, SMs x resident_ctas_per_sm) cta_Bps)^-k + (eff peak)^-k)^(-1/k)``
  (Levenberg-Marquardt, numeric Jacobian), ``peak`` the GPU part's HBM bandwidth.
- ``l2_cold_latency_factor``: a small kernel after a weight-streaming GEMV against alone (switch).
- ``class_latency_s``, ``row_latency_s``: copy and elementwise from the small-tensor kernels (time
  less the fixed cost); norm and softmax by least squares of time on row length over the one-CTA-per-
  row kernels at few rows (intercept and slope); activation and reduction from their 1 MiB kernel.
- ``class_efficiency``: each class's 256 MiB kernel (copy, add, gelu, sum, rms_norm, softmax):
  its rate (bytes over time less the fixed cost), with the CTA-bound term of the soft minimum taken
  out at the model's CTA count, over the peak; ``gemm`` the same for the weight stream of the M=1
  GEMM with the most weights; ``attention``: the rate of the split-KV decode kernels at the largest
  B x H x T over the peak (the KV-cache kernel the model's decode runs; see ``ATTENTION_CLASS_NOTE``).
- ``attention_cta_Bps``, ``split_kv_latency_s``, ``combine_split_s``: least squares in log time
  over every split-KV decode point (Levenberg-Marquardt), the model's own split heuristic giving
  each point's CTAs and splits: the per-CTA KV rate, the call's critical-path latency and the
  combine loop's time per split.
- ``tensor_efficiency``: 4096^3 through the model's tile-wave time; ``tensor_sustained_efficiency``:
  the median rate of 8192^3 and 16384^3 over the dense peak; ``flash_attention_efficiency`` and
  ``attention_cta_latency_s``: least squares in log time over the causal prefill points through the
  model's schedule of the forward kernel.
- ``power_fraction``: nvidia-smi's median board power in each state over the part's power cap.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from simulator.errors import InputError

GPU_PARTS = (("GB200", "gb200"), ("B200", "b200"), ("H200", "h200"), ("H100", "h100"), ("A100", "a100"))
"""GPU name (as CUDA reports it, e.g. 'NVIDIA H200') -> catalog part, by substring (issue 23's
mapping), the longest name first (GB200 before B200)."""
STREAM_TOLERANCE = 0.05
"""The fitted stream curve must reproduce every point within 5% (issue 23's acceptance bar)."""
ELEMENTWISE_SIZE = 256 * 2 ** 20
"""Tensor size whose kernels give the class efficiencies (issue 23: 256 MiB, far past L2)."""
CLASS_OPS = {"copy": ("copy",), "elementwise": ("add",), "activation": ("gelu",), "reduction": ("row_sum", "sum"),
             "norm": ("rms_norm",), "softmax": ("softmax",)}
"""Kernel class -> the microbenchmark ops that measure it, the first one a run has (issue 23;
``reduction``: the row sum, as the datasheet's 2.69 TB/s 'sum', else an older run's whole-tensor sum)."""
ROW_LATENCY_MAX_ROWS = 64
"""Row kernels with at most this many rows are latency-bound (one CTA per row, far fewer CTAs than
the GPU holds) and give the class latency and the per-element row latency."""
LATENCY_SIZE = 2 ** 20
"""Tensor size whose kernels give the class latencies (the datasheet's 1 MiB: fixed cost dominates)."""
ELEMENTWISE_CTA_BYTES = 1024
"""Bytes per CTA of an elementwise kernel, as GpuKernels.elementwise counts them (hardware/kernels.py:
512 two-byte elements per CTA, ATen's vectorized loop)."""
STREAM_SHARPNESS_STARTS = (1.0, 2.0, 4.0)
"""assumption: starting values of k for the stream fit (the best of the three fits is kept)."""
ATTENTION_CLASS_NOTE = (
    "the class is the split-KV kernel's; PyTorch SDPA runs its plain forward kernel instead when the "
    "split heuristic gives one split, which the model costs as the forward kernel on its padded query "
    "tile (compute-bound; its points are checked against split=False, not fitted here)")
SUSTAINED_SQUARES = (8192, 16384)
"""GEMMs whose median rate is tensor_sustained_efficiency (issue 23)."""
TILE_SQUARE = 4096
"""The GEMM that gives tensor_efficiency (issue 23)."""
POWER_STATES_FITTED = ("idle", "copy", "memory", "tensor", "pcie")
"""hardware.kernels.POWER_STATES; a state the run lacks keeps its built-in fraction."""


# ---- small numerical tools ----------------------------------------------------------------------
def levenberg_marquardt(residuals: Callable[[np.ndarray], np.ndarray], x0: Sequence[float],
                        iterations: int = 200, tol: float = 1e-12) -> tuple[np.ndarray, float]:
    """Minimize ``sum(residuals(x)^2)`` from ``x0`` (numeric central-difference Jacobian)."""
    x = np.asarray(x0, dtype=float)
    r = residuals(x)
    cost, lam = float(r @ r), 1e-3
    for _ in range(iterations):
        jac = np.empty((r.size, x.size))
        for j in range(x.size):
            h = 1e-6 * max(1.0, abs(x[j]))
            step = np.zeros_like(x)
            step[j] = h
            jac[:, j] = (residuals(x + step) - residuals(x - step)) / (2 * h)
        jtj, jtr = jac.T @ jac, jac.T @ r
        improved = False
        while lam < 1e12:
            try:
                dx = np.linalg.solve(jtj + lam * np.diag(np.diag(jtj) + 1e-12), -jtr)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            r_new = residuals(x + dx)
            cost_new = float(r_new @ r_new)
            if np.isfinite(cost_new) and cost_new < cost:
                x, r, lam, improved = x + dx, r_new, max(lam / 10, 1e-12), True
                done = cost - cost_new < tol * max(cost, 1e-30)
                cost = cost_new
                break
            lam *= 10
        if not improved or done:
            break
    return x, cost


def soft_min(a: float, b: float, k: float) -> float:
    """As ``hardware.kernels.soft_min``."""
    return (a ** -k + b ** -k) ** (-1.0 / k)


def unsoft(rate: float, cta_bound: float, k: float) -> float:
    """The saturation ``s`` with ``soft_min(cta_bound, s, k) == rate`` (``rate`` itself when the
    CTA-bound term alone is already at or below it)."""
    rest = rate ** -k - cta_bound ** -k
    return rest ** (-1.0 / k) if rest > 0 else rate


# ---- the data -----------------------------------------------------------------------------------
def gpu_part(name: str) -> str:
    """The catalog part of a GPU named as CUDA names it (``NVIDIA H200`` -> ``h200``)."""
    upper = name.upper()
    for key, part in GPU_PARTS:
        if key in upper:
            return part
    known = ", ".join(k for k, _ in sorted(GPU_PARTS, key=lambda kp: kp[1]))
    raise InputError(f"unknown GPU {name!r}: fabricsim calibrate knows {known}")


def _records(doc: Mapping[str, Any], bench: str) -> list[dict[str, Any]]:
    return [r for r in doc.get("records", []) if r.get("bench") == bench and "error" not in r and "time_s" in r]


def _need(rows: list, what: str, source: str) -> list:
    if not rows:
        raise InputError(f"the run has no {what}; run the microbenchmarks again", file=source)
    return rows


def check_document(doc: Any, source: str = "<run>") -> None:
    """A microbench document: a header naming the GPU and a list of records."""
    if not isinstance(doc, dict) or not isinstance(doc.get("header"), dict) or not isinstance(doc.get("records"), list):
        raise InputError("not a fabricsim calibrate microbenchmark run (no header and records)", file=source)
    if not doc["header"].get("gpu"):
        raise InputError("the run's header names no GPU", file=source)


# ---- the fit ------------------------------------------------------------------------------------
@dataclass
class Row:
    """One microbenchmark point: measured against the fitted model."""

    bench: str
    point: str
    measured: float
    predicted: float | None
    unit: str = "s"
    """``s`` (a time) or ``W``."""
    achieved: str = ""
    """What the measurement achieved (GB/s or TFLOP/s), for reading the table."""
    note: str = ""

    @property
    def error(self) -> float | None:
        """(predicted - measured) / measured."""
        if self.predicted is None or not self.measured:
            return None
        return (self.predicted - self.measured) / self.measured

    def as_dict(self) -> dict[str, Any]:
        return {"bench": self.bench, "point": self.point, "measured": self.measured, "predicted": self.predicted,
                "unit": self.unit, "error": self.error, "achieved": self.achieved, "note": self.note}


@dataclass
class Calibration:
    """What one run fits: the override values with their sources, and the check of every point."""

    gpu: str
    part: str
    architecture: str
    date: str
    header: dict[str, Any]
    values: dict[str, Any]
    """Field -> value in base units (dicts for class_efficiency and power_fraction)."""
    sources: dict[str, str]
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def worst(self) -> dict[str, Row]:
        """Bench -> its point with the largest |error|."""
        out: dict[str, Row] = {}
        for row in self.rows:
            if row.error is not None and (row.bench not in out or abs(row.error) > abs(out[row.bench].error or 0)):
                out[row.bench] = row
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "part": self.part, "architecture": self.architecture, "date": self.date,
                "header": self.header, "values": self.values, "sources": self.sources,
                "rows": [r.as_dict() for r in self.rows],
                "worst": {b: r.as_dict() for b, r in self.worst().items()}, "notes": self.notes}


class _Models:
    """GpuKernels of the part with the base constants of its architecture and some fields replaced."""

    def __init__(self, part: str, catalog: Any = None) -> None:
        from simulator.hardware.catalog import load_catalog
        from simulator.hardware.kernels import load_kernel_table

        device = (catalog or load_catalog()).device(part)
        if device.gpu is None:
            raise InputError(f"catalog part {part!r} is not a GPU")
        self.spec = device.gpu
        self.part = part
        self.base = load_kernel_table().architecture(self.spec.architecture)

    def model(self, values: Mapping[str, Any], launch: str = "graph"):
        from simulator.hardware.kernels import ArchitectureKernels, GpuKernels

        merged = self.base.model_dump()
        for key, value in values.items():
            merged[key] = {**merged[key], **value} if isinstance(value, dict) else value
        merged["sources"] = {**self.base.sources, **{k: "fit in progress" for k in values}}
        return GpuKernels(self.part, self.spec, ArchitectureKernels.model_validate(merged), launch)  # type: ignore[arg-type]


def _decode_splits_log(names: Iterable[str]) -> int | None:
    """``Log_max_splits`` of FlashAttention-2's combine kernel template, when one ran."""
    for name in names:
        m = re.search(r"splitkv_combine_kernel<.*>\s*,\s*\d+\s*,\s*(\d+)\s*,\s*(?:true|false)\s*>", name)
        if m:
            return int(m.group(1))
    return None


def fit(doc: Mapping[str, Any], catalog: Any = None, source: str = "<run>") -> Calibration:
    """The kernel constants one microbenchmark run gives, and every point checked against them.

    ``doc``: the JSON document of ``microbench.py``; ``source``: its file name, for errors.
    Raises ``InputError`` for an unknown GPU or a run that lacks a bench the fit needs."""
    check_document(doc, source)
    head = dict(doc["header"])
    gpu = str(head["gpu"])
    part = gpu_part(gpu)
    models = _Models(part, catalog)
    spec, base = models.spec, models.base
    date = str(head.get("date", ""))[:10] or "unknown date"
    peak, sms = spec.hbm_Bps, spec.sms
    notes: list[str] = []
    if head.get("sms") and int(head["sms"]) != sms:
        notes.append(f"the GPU reports {head['sms']} SMs, the catalog part {part!r} {sms}: the model uses {sms}")

    def src(bench: str, how: str) -> str:
        return f"measured, {gpu}, {date}, fabricsim calibrate ({bench}, {how})"

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}

    # fixed cost
    fixed = {r.get("mode"): r for r in _records(doc, "fixed")}
    for mode, key in (("graph", "graph_kernel_s"), ("eager", "eager_kernel_s")):
        if mode in fixed:
            values[key] = float(fixed[mode]["time_s"])
            how = "in one CUDA graph" if mode == "graph" else "launched eagerly from Python"
            sources[key] = src("fixed", f"{fixed[mode].get('kernels', 200)} back-to-back 1-element adds {how}, "
                                        f"median of replays: {values[key] * 1e6:.2f} us per kernel")
    graph_s = values.get("graph_kernel_s", base.graph_kernel_s)

    # stream: cta_Bps, hbm_efficiency, mlp_sharpness
    stream = sorted(_need(_records(doc, "stream"), "stream points", source), key=lambda r: r["ctas"])
    slots = sms * base.resident_ctas_per_sm
    n = np.array([min(r["ctas"], slots) for r in stream], dtype=float)
    rate = np.array([r["bytes"] / max(r["time_s"] - graph_s, 1e-12) for r in stream])

    def stream_res(x: np.ndarray) -> np.ndarray:
        cta, sat, k = np.exp(x)
        return np.log(((n * cta) ** -k + sat ** -k) ** (-1.0 / k)) - np.log(rate)

    starts = [(rate[0] / max(n[0], 1), rate.max(), k0) for k0 in STREAM_SHARPNESS_STARTS]
    best = min((levenberg_marquardt(stream_res, np.log(s)) for s in starts), key=lambda xc: xc[1])
    cta, sat, k = (float(v) for v in np.exp(best[0]))
    if sat > peak:
        notes.append(f"the stream curve saturates at {sat / 1e9:,.0f} GB/s, above the part's {peak / 1e9:,.0f} GB/s "
                     "peak: hbm_efficiency held at 1")

        def capped(x: np.ndarray) -> np.ndarray:
            return stream_res(np.array([x[0], math.log(peak), x[1]]))

        x2, _ = levenberg_marquardt(capped, [math.log(cta), math.log(k)])
        cta, sat, k = math.exp(x2[0]), peak, math.exp(x2[1])
    fitted = np.array([r["bytes"] / soft_min(min(r["ctas"], slots) * cta, sat, k) + graph_s for r in stream])
    worst_stream = float(np.max(np.abs(fitted / np.array([r["time_s"] for r in stream]) - 1)))
    values.update(cta_Bps=cta, hbm_efficiency=sat / peak, mlp_sharpness=k)
    span = f"{len(stream)} CTA counts {stream[0]['ctas']}-{stream[-1]['ctas']}"
    sources["cta_Bps"] = src("stream", f"least squares of R(n) in log space over {span} of a Triton streaming copy "
                                       f"moving {stream[0]['bytes'] / 2 ** 30:g} GiB: {cta / 1e9:.1f} GB/s per CTA")
    sources["hbm_efficiency"] = src("stream", f"the same fit: saturation {sat / 1e12:.2f} TB/s = {sat / peak:.3f} of "
                                              f"the {peak / 1e12:g} TB/s peak")
    sources["mlp_sharpness"] = src("stream", f"the same fit: k = {k:.2f}, every point's time within "
                                             f"{worst_stream * 100:.1f}%")
    if worst_stream > STREAM_TOLERANCE:
        notes.append(f"the fitted stream curve misses a point by {worst_stream * 100:.1f}% "
                     f"(more than {STREAM_TOLERANCE * 100:g}%)")

    # kernel classes: the rate at 256 MiB; the latency of short kernels (small tensors, one-row kernels)
    ew_all = [r for r in _records(doc, "elementwise") if "op" in r]
    ew = {r["op"]: r for r in ew_all if r.get("tensor_bytes") == ELEMENTWISE_SIZE}
    ew_small = {r["op"]: r for r in ew_all if r.get("tensor_bytes") == LATENCY_SIZE}
    classes: dict[str, float] = {}
    parts_src: list[str] = []

    def ew_ctas(kind: str, r: Mapping[str, Any]) -> int:
        return int(r["rows"]) if r.get("rows") else max(1, math.ceil(r["bytes"] / ELEMENTWISE_CTA_BYTES))

    for kind, ops in CLASS_OPS.items():
        r = next((ew[op] for op in ops if op in ew), None)
        if r is None:
            continue
        achieved = r["bytes"] / max(r["time_s"] - graph_s, 1e-12)
        classes[kind] = min(unsoft(achieved, min(ew_ctas(kind, r), slots) * cta, k) / peak, 1.0)
        parts_src.append(f"{r['op']} {achieved / 1e12:.2f} TB/s -> {classes[kind]:.3f}")

    latencies: dict[str, float] = {}
    row_lat: dict[str, float] = {}
    lat_src: list[str] = []
    small = _records(doc, "small")
    for kind in ("copy", "elementwise"):  # one round trip: the small-tensor kernels, time less the fixed cost
        pts = [r["time_s"] - graph_s for r in small if r.get("kind") == kind]
        if pts:
            latencies[kind] = max(0.0, statistics.median(pts))
            lat_src.append(f"{kind}: median of {len(pts)} kernels on 16-256 KiB, {latencies[kind] * 1e6:.2f} us")
    rows_pts = [r for r in _records(doc, "rows") if r["rows"] <= ROW_LATENCY_MAX_ROWS]
    for kind in ("norm", "softmax"):  # one-CTA-per-row kernels at few rows: latency = a + row x b
        pts = [r for r in rows_pts if r.get("kind") == kind]
        if len({r["row"] for r in pts}) >= 2:
            x = np.array([r["row"] for r in pts], dtype=float)
            y = np.array([r["time_s"] - graph_s for r in pts])
            slope, intercept = np.polyfit(x, y, 1)
            latencies[kind], row_lat[kind] = max(0.0, float(intercept)), max(0.0, float(slope))
            lat_src.append(f"{kind}: {len(pts)} kernels over 1-{ROW_LATENCY_MAX_ROWS} rows of "
                           f"{int(x.min())}-{int(x.max())}, least squares of time less the fixed cost on row length: "
                           f"{latencies[kind] * 1e6:.2f} us + {row_lat[kind] * 1e9:.3f} ns per element")
    for kind, op in (("activation", "gelu"), ("reduction", "row_sum")):  # a 1 MiB kernel past its bytes' time
        r = ew_small.get(op)
        if r is not None and kind in classes:
            t = r["time_s"] - graph_s
            bytes_s = r["bytes"] / soft_min(min(ew_ctas(kind, r), slots) * cta, classes[kind] * peak, k)
            if t > bytes_s:
                latencies[kind] = t
                lat_src.append(f"{kind}: {op} 1 MiB, {t * 1e6:.2f} us beyond the fixed cost (its bytes take "
                               f"{bytes_s * 1e6:.2f} us)")
    if latencies:
        values["class_latency_s"] = latencies
        sources["class_latency_s"] = src("small, rows, elementwise", "; ".join(lat_src))
    if row_lat:
        values["row_latency_s"] = row_lat
        sources["row_latency_s"] = src("rows", "the slopes of the same fits: " + ", ".join(
            f"{kind} {v * 1e9:.3f} ns per element" for kind, v in row_lat.items()))
    # L2 cold: a small kernel after a GEMV that streamed more than L2, against the same kernel alone
    switch = {tuple(r["cycle"]): r["time_s"] for r in _records(doc, "switch") if "cycle" in r}
    factors, cold_src = [], []
    for op in ("rms_norm", "add"):
        alone, after, stream = switch.get((op,)), switch.get(("gemv", op)), switch.get(("gemv",))
        if alone and after and stream and alone > graph_s:
            factors.append((after - stream - graph_s) / (alone - graph_s))
            cold_src.append(f"{op} {alone * 1e6:.2f} us alone, {(after - stream) * 1e6:.2f} us after the GEMV")
    if factors:
        values["l2_cold_latency_factor"] = max(1.0, statistics.median(factors))
        sources["l2_cold_latency_factor"] = src("switch", "1 x 8192 bf16 kernels replayed alone and each after a "
                                                          "GEMV streaming a 117 MB weight, latency beyond the fixed "
                                                          "cost: " + "; ".join(cold_src)
                                                          + f": x {values['l2_cold_latency_factor']:.2f}")

    # gemm: the weight stream of the M=1 GEMM with the most weights
    m1 = [r for r in _records(doc, "gemm") if r["m"] == 1]
    if m1:
        r = max(m1, key=lambda g: g["n"] * g["k"])
        cost = models.model(values).gemm("gemm", 1, r["n"], r["k"])
        achieved = cost.bytes / max(r["time_s"] - graph_s, 1e-12)
        classes["gemm"] = min(unsoft(achieved, min(cost.ctas, slots) * cta, k) / peak, 1.0)
        parts_src.append(f"gemm: the weights of 1x{r['n']}x{r['k']} bf16 at {achieved / 1e12:.2f} TB/s, "
                         f"{cost.ctas} CTAs -> {classes['gemm']:.3f}")
    if classes:
        values["class_efficiency"] = dict(classes)

    # decode attention: attention class and attention_cta_Bps, alternately (each needs the other)
    decode = _records(doc, "decode_attention")
    split_pts = [r for r in decode if r.get("split_kv", True)]
    plain_pts = [r for r in decode if not r.get("split_kv", True)]
    acta = base.attention_cta_Bps

    def dcost(model: Any, r: Mapping[str, Any], split: bool = True):
        return model.decode_attention(r["batch"], r["heads"], r.get("kv_heads", r["heads"]),
                                                   r["context"], r.get("head_dim", 128), split=split)

    now = models.model(values)
    top: list[dict[str, Any]] = []
    if split_pts:
        most = max(r["batch"] * r["heads"] * r["context"] for r in split_pts)
        top = [r for r in split_pts if r["batch"] * r["heads"] * r["context"] == most]
    att_eff = base.class_efficiency["attention"]
    if top:  # the plateau itself: (bytes / time less the fixed costs and the combine kernel) / peak
        effs = []
        for r in top:
            c = dcost(now, r)
            main_bytes = float(r["batch"] * r["context"] * 2 * r.get("kv_heads", r["heads"]) * r.get("head_dim", 128) * 2
                               + 2 * r["batch"] * r["heads"] * r.get("head_dim", 128) * 2)
            combine = c.time_s - (main_bytes / now.hbm_Bps(c.ctas, "attention") + graph_s)
            effs.append(main_bytes / max(r["time_s"] - graph_s - combine, 1e-12) / peak)
        att_eff = min(statistics.median(effs), 1.0)
        values.setdefault("class_efficiency", {})["attention"] = att_eff
    if len(split_pts) >= 3:  # then the per-CTA rate and the two latencies, the plateau held, in log space
        lat0, comb0 = base.split_kv_latency_s, base.combine_split_s

        def decode_res(x: np.ndarray) -> np.ndarray:
            a_bps, lat, comb = np.exp(x)
            trial = models.model({**values, "attention_cta_Bps": float(a_bps), "split_kv_latency_s": float(lat),
                                  "combine_split_s": float(comb)})
            return np.array([math.log(dcost(trial, r).time_s / r["time_s"]) for r in split_pts])

        x, _ = levenberg_marquardt(decode_res, np.log([acta, max(lat0, 1e-7), max(comb0, 1e-8)]))
        acta, lat, comb = (float(v) for v in np.exp(x))
        values.update(attention_cta_Bps=acta, split_kv_latency_s=lat, combine_split_s=comb)
        how = (f"least squares in log time over the {len(split_pts)} split-KV SDPA decode points (bf16, MHA, head "
               "dim 128, splits from the model's copy of FlashAttention-2's heuristic), jointly with")
        sources["attention_cta_Bps"] = src("decode_attention", f"{how} split_kv_latency_s and combine_split_s: "
                                                               f"{acta / 1e9:.1f} GB/s per CTA")
        sources["split_kv_latency_s"] = src("decode_attention", f"{how} attention_cta_Bps and combine_split_s: "
                                                                f"{lat * 1e6:.2f} us per call beyond two fixed costs")
        sources["combine_split_s"] = src("decode_attention", f"{how} attention_cta_Bps and split_kv_latency_s: "
                                                             f"{comb * 1e9:.0f} ns per split of the combine loop (one "
                                                             "L2 round trip is ~350 cycles at 1.8-2 GHz)")
    if top:
        shapes = ", ".join(f"B={r['batch']} H={r['heads']} T={r['context']}" for r in top)
        parts_src.append(f"attention: split-KV decode at the largest B x H x T ({shapes}), median rate less the fixed "
                         f"costs and the combine kernel -> {att_eff:.3f} ({ATTENTION_CLASS_NOTE})")
    if classes or top:
        sources["class_efficiency"] = src("elementwise, gemm, decode_attention",
                                          "bf16 256 MiB kernels, bytes read + written over time less the fixed cost, "
                                          "the CTA-bound term of the soft minimum taken out, over the peak: "
                                          + "; ".join(parts_src))
    if plain_pts:
        rates = [(r["bytes"] / r["time_s"]) for r in plain_pts]
        notes.append(f"PyTorch SDPA ran FlashAttention's plain forward kernel (no split) at {len(plain_pts)} decode "
                     f"shapes: {min(rates) / 1e12:.2f}-{max(rates) / 1e12:.2f} TB/s, against "
                     f"{att_eff * peak / 1e12:.2f} TB/s for the split-KV kernel; {ATTENTION_CLASS_NOTE}")

    # tensor cores
    squares: dict[int, dict[str, Any]] = {}  # a shape measured twice (4096^3: square and transformer lists): median
    for size in sorted({r["m"] for r in _records(doc, "gemm") if r["m"] == r["n"] == r["k"]}):
        same = [r for r in _records(doc, "gemm") if r["m"] == r["n"] == r["k"] == size]
        squares[size] = {**same[0], "time_s": statistics.median(r["time_s"] for r in same), "repeats": len(same)}
    if TILE_SQUARE in squares:
        r = squares[TILE_SQUARE]
        tm, tn = base.gemm_tile_m, base.gemm_tile_n
        tiles = math.ceil(r["m"] / tm) * math.ceil(r["n"] / tn)
        waves = math.ceil(tiles / sms)
        t_work = max(r["time_s"] - graph_s, 1e-12)
        te = waves * 2.0 * tm * tn * r["k"] * sms / (spec.bf16_flops * t_work)
        values["tensor_efficiency"] = min(te, 1.0)
        runs = f" (median of {r['repeats']} runs)" if r.get("repeats", 1) > 1 else ""
        sources["tensor_efficiency"] = src("gemm", f"bf16 {TILE_SQUARE}^3{runs} at {r['flops'] / r['time_s'] / 1e12:.0f} "
                                                   f"TFLOP/s: {tiles} tiles of {tm} x {tn} in {waves} waves on {sms} "
                                                   f"SMs -> {te:.3f} of the per-SM dense peak")
    sustained = [squares[s] for s in SUSTAINED_SQUARES if s in squares]
    if sustained:
        rates = [r["flops"] / max(r["time_s"] - graph_s, 1e-12) for r in sustained]
        tse = min(statistics.median(rates) / spec.bf16_flops, 1.0)
        values["tensor_sustained_efficiency"] = tse
        shown = ", ".join(f"{r['m']}^3 {x / 1e12:.0f}" for r, x in zip(sustained, rates))
        sources["tensor_sustained_efficiency"] = src("gemm", f"bf16 {shown} TFLOP/s, median over the "
                                                             f"{spec.bf16_flops / 1e12:g} TFLOP/s dense peak: {tse:.3f}")
    if "tensor_efficiency" in values and "tensor_sustained_efficiency" in values \
            and values["tensor_efficiency"] < values["tensor_sustained_efficiency"]:
        notes.append("the 4096^3 tile rate is below the sustained rate of the larger squares")

    # prefill
    pre = [r for r in _records(doc, "prefill_attention") if r.get("causal", True)]
    if pre:  # efficiency and per-CTA latency through the model's own schedule of the forward kernel
        def prefill_res(x: np.ndarray) -> np.ndarray:
            fae_x, lat_x = np.exp(x)
            trial = models.model({**values, "flash_attention_efficiency": min(float(fae_x), 1.0),
                                  "attention_cta_latency_s": float(lat_x)})
            return np.array([math.log(trial.prefill_attention(
                r["batch"], r["heads"], r["heads"], r["context"], r["context"], r.get("head_dim", 128),
                causal=r.get("causal", True)).time_s / r["time_s"]) for r in pre])

        x, _ = levenberg_marquardt(prefill_res, np.log([base.flash_attention_efficiency,
                                                        max(base.attention_cta_latency_s, 1e-7)]))
        fae, alat = min(float(math.exp(x[0])), 1.0), float(math.exp(x[1]))
        values.update(flash_attention_efficiency=fae, attention_cta_latency_s=alat)
        shown = ", ".join(f"H={r['heads']} T={r['context']} {r['flops'] / r['time_s'] / 1e12:.0f}" for r in pre)
        how = (f"least squares in log time over the {len(pre)} SDPA flash causal prefill points (head dim 128; "
               f"{shown} TFLOP/s) through the model's schedule of the forward kernel (CTAs over SMs, causal blocks)")
        sources["flash_attention_efficiency"] = src("prefill_attention", f"{how}: {fae:.3f} of the dense peak")
        sources["attention_cta_latency_s"] = src("prefill_attention", f"{how}: {alat * 1e6:.2f} us per CTA")

    # power
    power = {r["state"]: r for r in doc.get("records", []) if r.get("bench") == "power" and "watts" in r}
    fractions = {s: power[s]["watts"] / spec.board_power_W for s in POWER_STATES_FITTED if s in power}
    if fractions:
        bad = [s for s, v in fractions.items() if not 0 < v <= 1]
        for s in bad:
            notes.append(f"power {s}: {power[s]['watts']:.0f} W is not within the part's "
                         f"{spec.board_power_W:.0f} W cap: left at the built-in fraction")
            del fractions[s]
    if fractions:
        values["power_fraction"] = fractions
        shown = ", ".join(f"{s} {power[s]['watts']:.0f} W at {power[s]['sm_mhz']:.0f} MHz" for s in fractions)
        sources["power_fraction"] = src("power", f"nvidia-smi power.draw, median over {power[next(iter(fractions))].get('seconds', 3):g} s "
                                                 f"of each load, over the part's {spec.board_power_W:.0f} W cap: {shown}")
    if head.get("power_limit_W") and abs(float(head["power_limit_W"]) - spec.board_power_W) > 1:
        notes.append(f"the board's power limit is {head['power_limit_W']} W, the part's cap {spec.board_power_W:.0f} W")
    return Calibration(gpu, part, spec.architecture, str(head.get("date", "")), head, values, sources, [], notes)


# ---- the check ----------------------------------------------------------------------------------
def _rate(x: float, unit: str) -> str:
    if unit == "B":
        return f"{x / 1e9:,.0f} GB/s" if x >= 1e10 else f"{x / 1e9:,.1f} GB/s"
    return f"{x / 1e12:,.0f} TFLOP/s" if x >= 1e13 else f"{x / 1e12:,.1f} TFLOP/s"


def check(cal: Calibration, doc: Mapping[str, Any], model_graph: Any, model_eager: Any) -> list[Row]:
    """Every microbenchmark point of ``doc`` against ``model_graph`` (a GpuKernels with the
    calibration applied; ``model_eager`` the same in eager mode)."""
    rows: list[Row] = []
    m = model_graph
    for r in _records(doc, "fixed"):
        model = model_graph if r["mode"] == "graph" else model_eager
        rows.append(Row("fixed", f"{r['mode']} kernel", r["time_s"], model.kernel_s))
    for r in sorted(_records(doc, "stream"), key=lambda x: x["ctas"]):
        c = m.memory("stream", float(r["bytes"]), int(r["ctas"]), "stream")
        rows.append(Row("stream", f"{r['ctas']} CTAs", r["time_s"], c.time_s, achieved=_rate(r["bytes"] / r["time_s"], "B")))
    for r in _records(doc, "elementwise"):
        c = m.elementwise(r["op"], float(r["bytes"]), r["kind"], rows=r.get("rows"), row=r.get("row", 0) or 0)
        size = r["tensor_bytes"] / 2 ** 20
        rows.append(Row("elementwise", f"{r['op']} {size:g} MiB", r["time_s"], c.time_s,
                        achieved=_rate(r["bytes"] / r["time_s"], "B")))
    for r in _records(doc, "rows"):
        c = m.elementwise(r["op"], float(r["bytes"]), r["kind"], rows=r["rows"], row=r["row"])
        rows.append(Row("rows", f"{r['op']} {r['rows']}x{r['row']}", r["time_s"], c.time_s,
                        achieved=_rate(r["bytes"] / r["time_s"], "B")))
    for r in _records(doc, "small"):
        c = m.elementwise(r["op"], float(r["bytes"]), r["kind"])
        rows.append(Row("small", f"{r['op']} {r['tensor_bytes'] // 1024} KiB", r["time_s"], c.time_s))
    for r in _records(doc, "gemm"):
        c = m.gemm("gemm", r["m"], r["n"], r["k"])
        square = r["m"] == r["n"] == r["k"]
        rows.append(Row("gemm", f"{r['m']}x{r['n']}x{r['k']}", r["time_s"], c.time_s,
                        achieved=_rate(r["flops"] / r["time_s"], "F") if square or r["m"] >= 512
                        else _rate(r["bytes"] / r["time_s"], "B"), note=c.bound))
    for r in _records(doc, "decode_attention"):
        split = bool(r.get("split_kv", True))
        c = m.decode_attention(r["batch"], r["heads"], r.get("kv_heads", r["heads"]), r["context"],
                               r.get("head_dim", 128), split=split)
        note = c.detail
        per_call = r.get("kernels_per_call")
        if per_call is not None and abs(per_call - c.kernels) > 0.01:
            note += f"; kernels: model {c.kernels}, measured {per_call:g}"
        log = _decode_splits_log(r.get("kernels", []))
        if log is not None and split:
            splits = c.ctas // max(1, r["batch"] * r.get("kv_heads", r["heads"]))
            lo, hi = (2 ** (log - 1), 2 ** log) if log > 1 else (2, 2)
            if not lo < splits <= hi and not (log == 1 and splits == 2):
                note += f"; splits: model {splits}, the kernel's template <= {hi}"
        heads = f"{r['heads']}" if r.get("kv_heads", r["heads"]) == r["heads"] else f"{r['heads']}/{r['kv_heads']}"
        rows.append(Row("decode", f"B={r['batch']} H={heads} T={r['context']}" + ("" if split else " plain"),
                        r["time_s"], c.time_s, achieved=_rate(r["bytes"] / r["time_s"], "B"), note=note))
    for r in _records(doc, "prefill_attention"):
        c = m.prefill_attention(r["batch"], r["heads"], r["heads"], r["context"], r["context"],
                                r.get("head_dim", 128), causal=r.get("causal", True))
        rows.append(Row("prefill", f"H={r['heads']} T={r['context']}", r["time_s"], c.time_s,
                        achieved=_rate(r["flops"] / r["time_s"], "F")))
    for r in _records(doc, "pcie"):
        rows.append(Row("pcie", f"{r['direction']} {'pinned' if r['pinned'] else 'pageable'}", r["time_s"], None,
                        achieved=_rate(r["bytes"] / r["time_s"], "B"), note="not in the kernel model"))
    for r in doc.get("records", []):
        if r.get("bench") == "power" and "watts" in r:
            state = r["state"]
            predicted = m.power_W(state) if state in m.arch.power_fraction else None
            rows.append(Row("power", state, r["watts"], predicted, unit="W", achieved=f"{r['sm_mhz']:.0f} MHz",
                            note="" if predicted is not None else "not a model state"))
    return rows


__all__ = ["Calibration", "Row", "check", "check_document", "fit", "gpu_part",
           "levenberg_marquardt", "soft_min", "unsoft"]
