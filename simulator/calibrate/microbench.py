"""Microbenchmarks that feed the kernel model (``simulator/hardware/kernels.py``), on one CUDA GPU.

Imports only the standard library at module level and PyTorch/Triton (and rich, for a progress bar,
when it is there) inside functions, so it runs as ``python3 -m simulator.calibrate.microbench
OUT.json`` on a GPU host that has PyTorch and nothing else of fabricsim's dependencies
(``--dry-run`` lists what would be measured and needs no PyTorch; ``--only stream,gemm`` runs some).

Every timed kernel is replayed from one CUDA graph holding many calls (launch gaps as a
graph-serving engine sees them) and timed with CUDA events; the median of several replays is kept.
The fixed-cost bench also times the same tiny kernel launched eagerly from Python. Writes one JSON
document, ``{"header": {...}, "records": [{"bench": ..., parameters..., "time_s": ...}, ...]}``,
after every bench (a run cut short keeps what it measured); a case that fails is recorded with an
``error`` and the run goes on.

The benches (what ``simulator/calibrate/fit.py`` turns into kernel constants):

1. ``stream``: a Triton streaming copy (8 warps, 4096 fp32 per loop step, persistent grid-stride
   loop) moving 2 GiB (1 GiB read + 1 GiB written) at 1 ... 2,112 CTAs.
2. ``fixed``: 200 back-to-back one-element adds in one graph, and the same launched eagerly.
3. ``elementwise``: copy, add, gelu, sum, row_sum, rms_norm, layer_norm, softmax (rows of 8192) on bf16
   tensors of 256 MiB and 1 MiB; bytes = reads + writes.
   ``rows``: RMSNorm and softmax over 1-1,024 rows of 4,096 and 8,192 (decode and chunk sizes);
   ``small``: copy, add, mul, neg on 16 KiB and 256 KiB tensors (a decode step's activations);
   ``switch``: small kernels on 1 x 8192 back to back in one graph, the same one or several in turn.
4. ``gemm``: torch.matmul bf16, squares 1024 ... 16384 and transformer shapes M x (N, K).
5. ``decode_attention``: SDPA (FlashAttention backend, else the default, recorded) with q
   [B, H, 1, 128] and k, v [B, H, T, 128], plus the CUDA kernels launched per call (profiler).
6. ``prefill_attention``: SDPA flash, causal, q = k = v [1, H, T, 128].
   Also grouped-query decode (``DECODE_GQA``: fewer KV heads, ``enable_gqa``).
7. ``layer``: one whole transformer layer in plain PyTorch (``_layer_fn``), decode and prefill, at
   Llama-3-70B TP8 and Llama-3-8B shard shapes: a check of the model's composition, not an input to
   the fit.
8. ``pcie``: host-to-device and device-to-host copies of 256 MiB, pinned and pageable.
9. ``power``: board power and SM clock (nvidia-smi) over 3 s of idle, an HBM copy loop, a bf16
   GEMM 8192^3 loop, a decode-attention loop and a pinned host-to-device copy loop.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable

GIB = 2 ** 30
MIB = 2 ** 20
# Sizes and shapes marked "issue 23" are that specification of the run (item 2).
STREAM_CTAS = (1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2112)
"""CTA counts of the streaming copy (assumption: powers of two below the 132 SMs of an H100/H200,
then fractions and multiples of 132, up to 16 CTAs per SM)."""
STREAM_BYTES = 2 * GIB
"""Bytes one streaming copy moves, read + written (issue 23: 2 GiB, far past the 50-60 MB L2)."""
STREAM_BLOCK = 4096
"""fp32 elements per loop step of a streaming CTA (issue 23)."""
STREAM_WARPS = 8
"""Warps per streaming CTA (issue 23; 8 CTAs of 8 warps fill an SM's 64 warps, H100 whitepaper)."""
FIXED_KERNELS = 200
"""Tiny kernels back to back in one graph, and launched eagerly (issue 23)."""
ELEMENTWISE_SIZES = (256 * MIB, 1 * MIB)
"""Tensor sizes of the elementwise classes (issue 23): 256 MiB (past L2, saturating) and 1 MiB."""
ROW = 8192
"""Row length of the norm and softmax kernels (issue 23; a 70B model's hidden size)."""
ELEMENTWISE_OPS = (  # (op, kernel class, bytes touched / tensor bytes: reads + writes, derived from the op)
    ("copy", "copy", 2), ("add", "elementwise", 3), ("gelu", "activation", 2), ("sum", "reduction", 1),
    ("row_sum", "reduction", 1), ("rms_norm", "norm", 2), ("layer_norm", "norm", 2), ("softmax", "softmax", 2))
"""``sum`` reduces the whole tensor to one number; ``row_sum`` each row of ``ROW`` (as the norms do)."""
ROW_KERNEL_SHAPES = tuple((r, c) for c in (4096, 8192) for r in (1, 8, 64, 1024))
"""(rows, row length) of the row-kernel bench: RMSNorm and softmax at a decode step's and a prefill
chunk's token counts and a Llama-3-8B / 70B hidden size (their config.json: 4096, 8192)."""
SMALL_ELEMENTWISE_BYTES = (16 * 1024, 256 * 1024)
"""Tensor sizes of the small-kernel bench: a decode step's activations (batch 1 x 8192 bf16 = 16 KiB)
and a batch of 16 (256 KiB), for copy, add, mul and neg."""
SWITCH_CYCLES = (("add",), ("add", "mul", "neg", "copy"), ("add", "mul", "neg", "copy", "silu", "gelu", "sum", "rms_norm"),
                 ("rms_norm",), ("rms_norm", "add"), ("gemv",), ("gemv", "rms_norm"), ("gemv", "add"))
"""Kernel cycles of the switch bench on 1 x 8192 bf16 (a decode step's activation): one kernel back to
back, or several different ones in turn, as a layer runs them (each kernel's time per call); ``gemv``
streams a 8192 x 7168 weight (117 MB, past L2) between them, as a layer's projections do."""
SQUARES = (1024, 2048, 4096, 8192, 16384)
"""Square bf16 GEMMs (issue 23)."""
GEMM_M = (1, 8, 32, 64, 128, 512, 4096)
"""GEMM rows (issue 23): decode batches (1 ... 128), a chunked prefill (512) and a prefill (4096)."""
GEMM_NK = ((1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584), (6144, 4096), (4096, 4096),
           (28672, 4096), (4096, 14336))
"""(N, K) of a transformer's projections (issue 23): Llama-70B at TP 8 (QKV 1280x8192, O 8192x1024, gate/up
7168x8192, down 8192x3584) and Llama-8B at TP 1 (QKV 6144x4096, O 4096x4096, gate/up 28672x4096,
down 4096x14336)."""
DECODE_B = (1, 4, 16, 64)
"""Decode batch sizes (issue 23)."""
DECODE_H = (1, 8, 32)
"""Decode heads, MHA: as many KV heads (issue 23)."""
DECODE_T = (1024, 4096, 16384, 32768)
"""Decode context lengths (issue 23)."""
HEAD_DIM = 128
"""Head dimension of every attention bench (issue 23)."""
DECODE_GQA = ((8, 1), (32, 8), (64, 8))
"""(query heads, KV heads) of grouped-query decode: Llama-3-70B's TP8 shard, Llama-3-8B, Llama-3-70B
at TP1 (their config.json: 64/8 and 32/8 heads)."""
DECODE_GQA_B = (1, 8, 32, 64)
"""Batch sizes of grouped-query decode (assumption: a serving engine's decode batches)."""
DECODE_GQA_T = (4096, 16384)
"""Context lengths of grouped-query decode."""
LAYER_MODELS = {"llama3-70b-tp8": dict(hidden=8192, heads=8, kv_heads=1, ffn=3584),
                "llama3-8b": dict(hidden=4096, heads=32, kv_heads=8, ffn=14336)}
"""Whole-layer shapes (one GPU's shard): Llama-3-70B at TP 8 and Llama-3-8B at TP 1 (config.json:
hidden 8192/4096, 64/32 heads, 8 KV heads, intermediate 28672/14336; head dim 128)."""
LAYER_DECODE_B = (1, 8, 32, 64)
"""Decode batches of the whole-layer bench."""
LAYER_DECODE_T = (4096, 16384)
"""Decode contexts of the whole-layer bench."""
LAYER_PREFILL_T = (1024, 4096)
"""Prompt lengths of the whole-layer prefill bench (batch 1)."""
DECODE_MAX_KV = 20 * GIB
"""Decode shapes whose K and V together pass this are skipped (issue 23: 20 GiB)."""
PREFILL_H = (8, 32, 64)
"""Prefill heads, batch 1 (issue 23)."""
PREFILL_T = (1024, 4096, 16384)
"""Prefill sequence lengths (issue 23)."""
PCIE_BYTES = 256 * MIB
"""Host-device copy size (issue 23)."""
POWER_SECONDS = 3.0
"""Seconds of nvidia-smi samples per power state (issue 23: 3 s), after POWER_SETTLE_S of load."""
POWER_SETTLE_S = 1.0
"""assumption: the board's power and clock settle within 1 s of a load starting (nvidia-smi's
power.draw is itself averaged over about a second)."""
POWER_STATES = ("idle", "copy", "tensor", "memory", "pcie", "tensor_4096")
"""The kernel model's power states, and ``tensor_4096`` (a bf16 GEMM 4096^3 loop: its sustained
rate and clock against the short replays of the gemm bench; not a model state)."""
REPLAY_TARGET_S = 0.02
"""assumption: one graph replay of ~20 ms (many calls of a short kernel) keeps the event timer's
~microsecond resolution and the replay's launch below 0.1% of the time."""
REPLAYS = 5
"""Replays timed per case; their median is kept (assumption: 5 replays of ~20 ms each, the median
robust to one disturbed replay, keep the whole run near a minute)."""
# Rough H200 rates used only to size a graph's call count so one replay lasts ~REPLAY_TARGET_S
# (never a result; assumption: round figures near parts/kernels.yaml's hopper constants).
EST_STREAM_SAT_Bps = 4e12
"""assumption: streaming copy plateau, for the stream bench's call count."""
EST_CTA_Bps = 60e9
"""assumption: one streaming CTA's rate (parts/kernels.yaml's hopper cta_Bps, rounded)."""
EST_ELEMENTWISE_Bps = 3e12
"""assumption: an elementwise kernel's rate, for its call count."""
EST_HBM_Bps = 3.5e12
"""assumption: a skinny GEMM's or decode attention's rate, for their call counts."""
EST_TENSOR_FLOPS = 7e14
"""assumption: a sustained bf16 GEMM rate, for the GEMM call count."""
EST_FLASH_FLOPS = 3e14
"""assumption: a FlashAttention-2 forward rate on Hopper, for the prefill call count."""
EST_SHORT_S, EST_GEMM_S, EST_ATTENTION_S = 3e-6, 4e-6, 8e-6
"""assumption: per-call floors (launch, ramp) of an elementwise kernel, a GEMM, an SDPA call."""


# ---- the plan: what would be measured (no PyTorch needed) ---------------------------------------
def _case(bench: str, **params: Any) -> dict[str, Any]:
    return {"bench": bench, **params}


def plan() -> list[dict[str, Any]]:
    """Every case, in run order, with ``skip`` set on those that will not run and why."""
    cases: list[dict[str, Any]] = [_case("fixed", mode="graph"), _case("fixed", mode="eager")]
    cases += [_case("stream", ctas=n, bytes=STREAM_BYTES) for n in STREAM_CTAS]
    for size in ELEMENTWISE_SIZES:
        for op, kind, touches in ELEMENTWISE_OPS:
            rows = size // 2 // ROW if kind in ("norm", "softmax") or op == "row_sum" else None
            cases.append(_case("elementwise", op=op, kind=kind, tensor_bytes=size, bytes=touches * size,
                               **({"rows": rows, "row": ROW} if rows else {})))
    for rows, row in ROW_KERNEL_SHAPES:
        for op, kind in (("rms_norm", "norm"), ("softmax", "softmax")):
            cases.append(_case("rows", op=op, kind=kind, rows=rows, row=row, bytes=2 * 2 * rows * row))
    for size in SMALL_ELEMENTWISE_BYTES:
        for op, kind, touches in (("copy", "copy", 2), ("add", "elementwise", 3), ("mul", "elementwise", 3),
                                  ("neg", "elementwise", 2)):
            cases.append(_case("small", op=op, kind=kind, tensor_bytes=size, bytes=touches * size))
    for cycle in SWITCH_CYCLES:
        cases.append(_case("switch", cycle=list(cycle), kernels=len(cycle), tensor_bytes=2 * ROW))
    shapes = [(n, n, n) for n in SQUARES] + [(m, n, k) for m in GEMM_M for n, k in GEMM_NK]
    for m, n, k in shapes:
        cases.append(_case("gemm", m=m, n=n, k=k, flops=2.0 * m * n * k, bytes=2.0 * (m * k + k * n + m * n)))
    for b in DECODE_B:
        for h in DECODE_H:
            for t in DECODE_T:
                kv = 2 * b * h * t * HEAD_DIM * 2
                c = _case("decode_attention", batch=b, heads=h, kv_heads=h, context=t, head_dim=HEAD_DIM,
                          bytes=float(kv + 2 * b * h * HEAD_DIM * 2), flops=4.0 * b * h * t * HEAD_DIM)
                if kv > DECODE_MAX_KV:
                    c["skip"] = f"K and V take {kv / GIB:.0f} GiB > {DECODE_MAX_KV / GIB:.0f} GiB"
                cases.append(c)
    for h, hkv in DECODE_GQA:
        for b in DECODE_GQA_B:
            for t in DECODE_GQA_T:
                kv = 2 * b * hkv * t * HEAD_DIM * 2
                cases.append(_case("decode_attention", batch=b, heads=h, kv_heads=hkv, context=t,
                                   head_dim=HEAD_DIM, bytes=float(kv + 2 * b * h * HEAD_DIM * 2),
                                   flops=4.0 * b * h * t * HEAD_DIM))
    for name, shape in LAYER_MODELS.items():
        for b in LAYER_DECODE_B:
            for t in LAYER_DECODE_T:
                cases.append(_case("layer", model=name, phase="decode", batch=b, context=t, head_dim=HEAD_DIM,
                                   **shape))
        for t in LAYER_PREFILL_T:
            cases.append(_case("layer", model=name, phase="prefill", batch=1, context=t, head_dim=HEAD_DIM, **shape))
    for h in PREFILL_H:
        for t in PREFILL_T:
            cases.append(_case("prefill_attention", batch=1, heads=h, context=t, head_dim=HEAD_DIM, causal=True,
                               flops=4.0 * h * t * t * HEAD_DIM / 2, bytes=4.0 * h * t * HEAD_DIM * 2))
    for pinned in (True, False):
        for direction in ("h2d", "d2h"):
            cases.append(_case("pcie", direction=direction, pinned=pinned, bytes=PCIE_BYTES))
    cases += [_case("power", state=s, seconds=POWER_SECONDS) for s in POWER_STATES]
    return cases


BENCH_ORDER = ("fixed", "stream", "elementwise", "rows", "small", "switch", "gemm", "prefill_attention", "pcie", "power",
               "decode_attention", "layer")
"""Run order: decode attention (the profiler's start-up time varies) last, so the time budget falls on it."""


# ---- timing -------------------------------------------------------------------------------------
def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


NO_TORCH = "fabricsim calibrate needs PyTorch with CUDA: pip install 'fabricsim[calibrate]'"
"""Why a machine without PyTorch cannot measure."""


def available() -> str | None:
    """None when a CUDA GPU can be measured here, else why not (one line)."""
    torch = _torch()
    if torch is None:
        return NO_TORCH
    if not torch.cuda.is_available():
        return f"fabricsim calibrate needs a CUDA GPU; PyTorch {torch.__version__} sees none"
    return None


def _calls(estimate_s: float, lo: int = 2, hi: int = 200) -> int:
    """Calls per graph so one replay lasts about REPLAY_TARGET_S."""
    return max(lo, min(hi, int(REPLAY_TARGET_S / max(estimate_s, 1e-7))))


def graph_time_s(fn: Callable[[], Any], calls: int, replays: int = REPLAYS) -> float:
    """Seconds per call of ``fn`` replayed ``calls`` times from one CUDA graph (median of replays)."""
    torch = _torch()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()  # warm-up (Triton compilation, cuBLAS heuristics, workspaces) outside the graph
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / calls)
    del graph
    return statistics.median(times)


def kernels_launched(fn: Callable[[], Any], calls: int = 3) -> tuple[list[str], float]:
    """The CUDA kernels ``fn`` launches (sorted names) and how many per call (torch.profiler)."""
    torch = _torch()
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if str(getattr(e.device_type, "name", e.device_type)).endswith("CUDA")
             and not e.name.startswith(("Memcpy", "Memset", "[memory]"))]
    return sorted(set(names)), len(names) / calls


# ---- the benches --------------------------------------------------------------------------------
_STATE: dict[str, Any] = {}
"""Tensors and kernels one bench sets up once for all its cases (cleared after each bench)."""


def _once(key: str, make: Callable[[], Any]) -> Any:
    if key not in _STATE:
        _STATE[key] = make()
    return _STATE[key]


def _stream_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def stream_copy(src, dst, n, BLOCK: tl.constexpr):
        pid, step = tl.program_id(0), tl.num_programs(0)
        for start in range(pid * BLOCK, n, step * BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)

    return stream_copy


def bench_fixed(cases, emit, tick) -> None:
    torch = _torch()
    x = torch.zeros(1, device="cuda")
    for case in cases:
        if case["mode"] == "graph":
            t = graph_time_s(lambda: x.add_(1), FIXED_KERNELS)
        else:
            for _ in range(50):
                x.add_(1)
            torch.cuda.synchronize()
            times = []
            for _ in range(REPLAYS):
                t0 = time.perf_counter()
                for _ in range(FIXED_KERNELS):
                    x.add_(1)
                torch.cuda.synchronize()
                times.append((time.perf_counter() - t0) / FIXED_KERNELS)
            t = statistics.median(times)
        emit({**case, "kernels": FIXED_KERNELS, "time_s": t})
        tick(f"fixed cost, {case['mode']}: {t * 1e6:.2f} us per kernel")


def bench_stream(cases, emit, tick) -> None:
    torch = _torch()
    copy = _once("stream_kernel", _stream_kernel)
    n = STREAM_BYTES // 2 // 4
    src = _once("stream_src", lambda: torch.empty(n, dtype=torch.float32, device="cuda").uniform_())
    dst = _once("stream_dst", lambda: torch.empty_like(src))
    for case in cases:
        ctas = case["ctas"]
        est = STREAM_BYTES / min(EST_STREAM_SAT_Bps, ctas * EST_CTA_Bps)
        t = graph_time_s(lambda: copy[(ctas,)](src, dst, n, BLOCK=STREAM_BLOCK, num_warps=STREAM_WARPS),
                         _calls(est, 2, 50), 3)
        emit({**case, "warps": STREAM_WARPS, "block": STREAM_BLOCK, "time_s": t})
        tick(f"stream {ctas} CTAs: {STREAM_BYTES / t / 1e9:,.0f} GB/s")


def bench_elementwise(cases, emit, tick) -> None:
    torch = _torch()
    F = torch.nn.functional
    tensors: dict[int, tuple] = _once("elementwise", dict)
    for case in cases:
        size = case["tensor_bytes"]
        if size not in tensors:
            tensors.clear()
            torch.cuda.empty_cache()
            a = torch.randn(size // 2, dtype=torch.bfloat16, device="cuda")
            tensors[size] = (a, torch.randn_like(a), torch.empty_like(a), a.view(-1, ROW),
                             torch.ones(ROW, dtype=torch.bfloat16, device="cuda"),
                             torch.zeros(ROW, dtype=torch.bfloat16, device="cuda"))
        a, b, out, rows, w, bias = tensors[size]
        fn = {"copy": lambda: out.copy_(a), "add": lambda: torch.add(a, b, out=out), "gelu": lambda: F.gelu(a),
              "sum": lambda: a.sum(), "row_sum": lambda: rows.sum(dim=-1), "rms_norm": lambda: F.rms_norm(rows, (ROW,), w),
              "layer_norm": lambda: F.layer_norm(rows, (ROW,), w, bias),
              "softmax": lambda: torch.softmax(rows, dim=-1)}[case["op"]]
        t = graph_time_s(fn, _calls(case["bytes"] / EST_ELEMENTWISE_Bps + EST_SHORT_S, 5, 200))
        emit({**case, "time_s": t})
        tick(f"{case['op']} {size / MIB:.0f} MiB: {case['bytes'] / t / 1e9:,.0f} GB/s")


def bench_rows(cases, emit, tick) -> None:
    """Row kernels (RMSNorm, softmax) at the token counts of a decode step and a prefill chunk."""
    torch = _torch()
    F = torch.nn.functional
    for case in cases:
        rows, row = case["rows"], case["row"]
        x = torch.randn(rows, row, dtype=torch.bfloat16, device="cuda")
        w = torch.ones(row, dtype=torch.bfloat16, device="cuda")
        fn = (lambda: F.rms_norm(x, (row,), w)) if case["op"] == "rms_norm" else (lambda: torch.softmax(x, dim=-1))
        names, per_call = kernels_launched(fn)
        t = graph_time_s(fn, _calls(case["bytes"] / EST_ELEMENTWISE_Bps + EST_SHORT_S, 5, 200))
        emit({**case, "kernels": names, "kernels_per_call": per_call, "time_s": t})
        tick(f"{case['op']} {rows} x {row}: {t * 1e6:.2f} us, {per_call:g} kernels")
        del x, w


def bench_small(cases, emit, tick) -> None:
    """Elementwise kernels on a decode step's small tensors (what a fixed cost is made of)."""
    torch = _torch()
    for case in cases:
        n = case["tensor_bytes"] // 2
        a = torch.randn(n, dtype=torch.bfloat16, device="cuda")
        b, out = torch.randn_like(a), torch.empty_like(a)
        fn = {"copy": lambda: out.copy_(a), "add": lambda: torch.add(a, b, out=out),
              "mul": lambda: torch.mul(a, b, out=out), "neg": lambda: torch.neg(a, out=out)}[case["op"]]
        t = graph_time_s(fn, _calls(EST_SHORT_S, 5, 200))
        emit({**case, "time_s": t})
        tick(f"{case['op']} {case['tensor_bytes'] // 1024} KiB: {t * 1e6:.2f} us")
        del a, b, out


def bench_switch(cases, emit, tick) -> None:
    """Small kernels back to back in one graph: the same one, or different ones in turn."""
    torch = _torch()
    F = torch.nn.functional
    x = torch.randn(1, ROW, dtype=torch.bfloat16, device="cuda")
    y, out = torch.randn_like(x), torch.empty_like(x)
    w = torch.ones(ROW, dtype=torch.bfloat16, device="cuda")
    big = torch.randn(ROW, 7168, dtype=torch.bfloat16, device="cuda")
    ops = {"gemv": lambda: torch.matmul(x, big), "add": lambda: torch.add(x, y, out=out), "mul": lambda: torch.mul(x, y, out=out),
           "neg": lambda: torch.neg(x, out=out), "copy": lambda: out.copy_(x), "silu": lambda: F.silu(x),
           "gelu": lambda: F.gelu(x), "sum": lambda: x.sum(dim=-1), "rms_norm": lambda: F.rms_norm(x, (ROW,), w)}
    for case in cases:
        fns = [ops[o] for o in case["cycle"]]

        def cycle():
            for f in fns:
                f()

        t = graph_time_s(cycle, _calls(len(fns) * EST_SHORT_S, 5, 200 // len(fns)))
        emit({**case, "time_s": t, "time_per_kernel_s": t / len(fns)})
        tick(f"switch {'+'.join(case['cycle'])}: {t / len(fns) * 1e6:.2f} us per kernel")


def bench_gemm(cases, emit, tick) -> None:
    torch = _torch()
    for case in cases:
        m, n, k = case["m"], case["n"], case["k"]
        a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
        b = torch.randn(k, n, dtype=torch.bfloat16, device="cuda")
        est = max(case["flops"] / EST_TENSOR_FLOPS, case["bytes"] / EST_HBM_Bps) + EST_GEMM_S
        names, per_call = kernels_launched(lambda: torch.matmul(a, b), 2)
        t = graph_time_s(lambda: torch.matmul(a, b), _calls(est, 2, 200))
        emit({**case, "dtype": "bf16", "kernels": names, "kernels_per_call": per_call, "time_s": t})
        tick(f"gemm {m}x{n}x{k}: {case['flops'] / t / 1e12:,.0f} TFLOP/s, {case['bytes'] / t / 1e9:,.0f} GB/s")
        del a, b


def _sdpa(q, k, v, causal: bool = False, gqa: bool = False):
    """An SDPA call on the FlashAttention backend, else PyTorch's default choice: (fn, backend).
    ``gqa``: fewer KV heads than query heads (``enable_gqa``)."""
    torch = _torch()
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel

    extra = {"enable_gqa": True} if gqa else {}

    def flash():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, **extra)

    try:
        flash()
        torch.cuda.synchronize()
        return flash, "flash"
    except RuntimeError:
        return (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, **extra)), "default"


def bench_decode_attention(cases, emit, tick) -> None:
    torch = _torch()
    for case in cases:
        b, h, t_ctx = case["batch"], case["heads"], case["context"]
        hkv = case.get("kv_heads", h)
        q = torch.randn(b, h, 1, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
        k = torch.randn(b, hkv, t_ctx, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
        v = torch.randn_like(k)
        fn, backend = _sdpa(q, k, v, gqa=hkv != h)
        names, per_call = kernels_launched(fn)
        t = graph_time_s(fn, _calls(case["bytes"] / EST_HBM_Bps + EST_ATTENTION_S, 3, 200))
        split = any("splitkv" in nm.lower() for nm in names)
        emit({**case, "backend": backend, "kernels": names, "kernels_per_call": per_call, "split_kv": split,
              "time_s": t})
        tick(f"decode B={b} H={h}/{hkv} T={t_ctx}: {case['bytes'] / t / 1e9:,.0f} GB/s, {per_call:g} kernels"
             f"{' (split-KV)' if split else ''}, {backend}")
        del q, k, v, fn


def bench_prefill_attention(cases, emit, tick) -> None:
    torch = _torch()
    for case in cases:
        h, t_ctx = case["heads"], case["context"]
        q = torch.randn(1, h, t_ctx, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
        k, v = torch.randn_like(q), torch.randn_like(q)
        fn, backend = _sdpa(q, k, v, causal=True)
        t = graph_time_s(fn, _calls(case["flops"] / EST_FLASH_FLOPS + EST_ATTENTION_S, 2, 100))
        emit({**case, "backend": backend, "time_s": t})
        tick(f"prefill H={h} T={t_ctx}: {case['flops'] / t / 1e12:,.0f} TFLOP/s, {backend}")
        del q, k, v, fn


def _layer_fn(case: dict[str, Any]):
    """One transformer layer of a Llama-style model in plain PyTorch (as a reference implementation
    writes it: RMSNorm, fused QKV projection, rotary embedding, KV-cache write, SDPA with GQA, output
    projection and residual add, RMSNorm, gate/up projection, SiLU x up, down projection and residual
    add), bf16, no tensor parallelism across GPUs (the shapes are one GPU's shard)."""
    torch = _torch()
    F = torch.nn.functional
    bf = dict(dtype=torch.bfloat16, device="cuda")
    hid, h, hkv, ffn, d = case["hidden"], case["heads"], case["kv_heads"], case["ffn"], case["head_dim"]
    b, t = case["batch"], case["context"]
    decode = case["phase"] == "decode"
    tokens, q_len = (b, 1) if decode else (b * t, t)
    w_qkv = torch.randn(hid, (h + 2 * hkv) * d, **bf) * 0.02
    w_o = torch.randn(h * d, hid, **bf) * 0.02
    w_gu = torch.randn(hid, 2 * ffn, **bf) * 0.02
    w_d = torch.randn(ffn, hid, **bf) * 0.02
    n1, n2 = torch.ones(hid, **bf), torch.ones(hid, **bf)
    cos, sin = torch.randn(1, 1, q_len, d, **bf), torch.randn(1, 1, q_len, d, **bf)
    x = torch.randn(tokens, hid, **bf)
    cache_k = torch.randn(b, hkv, t, d, **bf)
    cache_v = torch.randn_like(cache_k)
    pos = torch.tensor([t - 1], device="cuda")

    def rotate(z):
        z1, z2 = z[..., : d // 2], z[..., d // 2:]
        return z * cos + torch.cat((-z2, z1), dim=-1) * sin

    def layer():
        r = F.rms_norm(x, (hid,), n1)
        qkv = r @ w_qkv
        q, k, v = qkv.split((h * d, hkv * d, hkv * d), dim=-1)
        q = rotate(q.view(b, q_len, h, d).transpose(1, 2))
        k = rotate(k.view(b, q_len, hkv, d).transpose(1, 2))
        v = v.view(b, q_len, hkv, d).transpose(1, 2)
        if decode:
            cache_k.index_copy_(2, pos, k)
            cache_v.index_copy_(2, pos, v)
            o = F.scaled_dot_product_attention(q, cache_k, cache_v, enable_gqa=hkv != h)
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=hkv != h)
        y = x + o.transpose(1, 2).reshape(tokens, h * d) @ w_o
        g, u = (F.rms_norm(y, (hid,), n2) @ w_gu).chunk(2, dim=-1)
        return y + (F.silu(g) * u) @ w_d

    weights = 2.0 * (w_qkv.numel() + w_o.numel() + w_gu.numel() + w_d.numel())
    return layer, weights, 2.0 * cache_k.numel() * 2


def bench_layer(cases, emit, tick) -> None:
    torch = _torch()
    for case in cases:
        fn, weights, kv = _layer_fn(case)
        names, per_call = kernels_launched(fn)
        est = (weights + kv) / EST_HBM_Bps + 20 * EST_SHORT_S
        if case["phase"] == "prefill":
            est += 2.0 * weights / 2 * case["context"] / EST_TENSOR_FLOPS
        t = graph_time_s(fn, _calls(est, 2, 100))
        emit({**case, "kernels": names, "kernels_per_call": per_call, "weight_bytes": weights, "kv_bytes": kv,
              "time_s": t})
        tick(f"layer {case['model']} {case['phase']} B={case['batch']} T={case['context']}: {t * 1e6:,.1f} us, "
             f"{per_call:g} kernels")
        del fn
        torch.cuda.empty_cache()


def bench_pcie(cases, emit, tick) -> None:
    torch = _torch()
    dev = _once("pcie_dev", lambda: torch.empty(PCIE_BYTES, dtype=torch.uint8, device="cuda"))
    hosts: dict[bool, Any] = _once("pcie_hosts", dict)
    for case in cases:
        pinned = case["pinned"]
        if pinned not in hosts:
            hosts[pinned] = torch.ones(PCIE_BYTES, dtype=torch.uint8, pin_memory=pinned)
        host = hosts[pinned]
        fn = (lambda: dev.copy_(host, non_blocking=True)) if case["direction"] == "h2d" else \
             (lambda: host.copy_(dev, non_blocking=True))
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(REPLAYS):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        emit({**case, "time_s": t})
        tick(f"{case['direction']} {'pinned' if pinned else 'pageable'}: {PCIE_BYTES / t / 1e9:.1f} GB/s")


def _smi(query: str = "power.draw,clocks.sm") -> list[float] | None:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=10).stdout.strip().split("\n")[0]
        return [float(x) for x in out.split(",")]
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def _power_loads() -> dict[str, tuple]:
    """State -> (one call of its load, what it is, work per call: bytes or FLOPs)."""
    torch = _torch()
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    c = torch.empty_like(a)
    a4 = a[:4096, :4096].contiguous()
    c4 = torch.empty_like(a4)
    big = torch.empty(GIB, dtype=torch.uint8, device="cuda")
    big2 = torch.empty_like(big)
    q = torch.randn(64, 8, 1, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
    kv = torch.randn(64, 8, 8192, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
    attn, backend = _sdpa(q, kv, kv)
    dev = torch.empty(PCIE_BYTES, dtype=torch.uint8, device="cuda")
    host = torch.ones(PCIE_BYTES, dtype=torch.uint8, pin_memory=True)
    return {"idle": (None, "", 0.0),
            "copy": (lambda: big2.copy_(big), "copy 1 GiB device to device (bytes read + written)", 2.0 * GIB),
            "tensor": (lambda: torch.matmul(a, a, out=c), "bf16 GEMM 8192^3 (FLOPs)", 2.0 * 8192 ** 3),
            "tensor_4096": (lambda: torch.matmul(a4, a4, out=c4), "bf16 GEMM 4096^3 (FLOPs)", 2.0 * 4096 ** 3),
            "memory": (attn, f"decode attention B=64 H=8 T=8192 ({backend}; K and V bytes)",
                       2.0 * 64 * 8 * 8192 * HEAD_DIM * 2),
            "pcie": (lambda: dev.copy_(host, non_blocking=True), "pinned H2D 256 MiB (bytes)", float(PCIE_BYTES))}


def bench_power(cases, emit, tick) -> None:
    """Board power and SM clock while idle and while one kind of kernel loops."""
    torch = _torch()
    if _smi() is None:
        tick("no nvidia-smi: board power skipped", advance=len(cases))
        return
    loads = _once("power_loads", _power_loads)
    for case in cases:
        fn, what, work = loads[case["state"]]
        samples: list[list[float]] = []
        stop = threading.Event()

        def sample() -> None:
            time.sleep(POWER_SETTLE_S)
            end = time.perf_counter() + POWER_SECONDS
            while time.perf_counter() < end and not stop.is_set():
                got = _smi()
                if got and len(got) == 2:
                    samples.append(got)
                time.sleep(0.1)

        thread = threading.Thread(target=sample, daemon=True)
        calls, t0 = 0, time.perf_counter()
        thread.start()
        while thread.is_alive():
            if fn is None:
                time.sleep(0.05)
            else:
                for _ in range(10):
                    fn()
                calls += 10
                torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
        stop.set()
        thread.join()
        if not samples:
            emit({**case, "error": "nvidia-smi gave no samples"})
            tick(f"power {case['state']}: no samples")
            continue
        rec = {**case, "load": what, "watts": statistics.median(s[0] for s in samples),
               "sm_mhz": statistics.median(s[1] for s in samples), "samples": len(samples)}
        if calls:
            rec.update(calls=calls, time_s=elapsed / calls, work_per_call=work)
        emit(rec)
        tick(f"power {case['state']}: {rec['watts']:.0f} W at {rec['sm_mhz']:.0f} MHz")


BENCHES = {"fixed": bench_fixed, "stream": bench_stream, "elementwise": bench_elementwise, "rows": bench_rows,
           "small": bench_small, "switch": bench_switch, "gemm": bench_gemm,
           "decode_attention": bench_decode_attention, "prefill_attention": bench_prefill_attention,
           "pcie": bench_pcie, "power": bench_power, "layer": bench_layer}


# ---- the run ------------------------------------------------------------------------------------
def header() -> dict[str, Any]:
    torch = _torch()
    props = torch.cuda.get_device_properties(0)
    head = {"gpu": props.name, "sms": props.multi_processor_count, "memory_bytes": props.total_memory,
            "compute_capability": f"{props.major}.{props.minor}", "torch": torch.__version__,
            "cuda": torch.version.cuda, "python": platform.python_version(), "host": socket.gethostname(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "tool": "fabricsim calibrate microbench"}
    try:
        import triton

        head["triton"] = str(getattr(triton, "__version__", "?"))
    except ImportError:
        pass
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,power.limit,clocks.max.sm",
                          "--format=csv,noheader,nounits", "-i", "0"], capture_output=True, text=True,
                         timeout=10).stdout.strip() if _smi() is not None else ""
    if smi:
        driver, limit, mhz = (x.strip() for x in smi.split("\n")[0].split(","))
        head.update(driver=driver, power_limit_W=_float(limit), max_sm_mhz=_float(mhz))
    return head


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _write(path: str, doc: dict[str, Any]) -> None:
    """Atomically (temp file + rename, mode 0644)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".microbench.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class _Progress:
    """A rich progress bar when rich is importable, plain lines otherwise."""

    def __init__(self, total: int, say: Callable[[str], None] | None, stderr: bool = False) -> None:
        self.total, self.done, self.say, self.bar = total, 0, say, None
        if say is None:
            try:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

                self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                    TimeElapsedColumn(), console=Console(stderr=stderr))
                self.task = self.bar.add_task("microbenchmarks", total=total)
            except ImportError:
                self.say = (lambda m: print(m, file=sys.stderr, flush=True)) if stderr else \
                           (lambda m: print(m, flush=True))

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def line(self, msg: str) -> None:
        if self.bar is not None:
            self.bar.console.print(msg, markup=False, highlight=False)
        else:
            self.say(msg)  # type: ignore[misc]

    def tick(self, msg: str, advance: int = 1) -> None:
        self.done += advance
        if self.bar is not None:
            self.bar.update(self.task, advance=advance, description=msg[:60])
        self.line(f"[{self.done}/{self.total}] {msg}")


TIME_BUDGET_S = 330.0
"""Cases not started within this many seconds of the run's start are skipped (issue 23: the whole
run within 6 minutes on one H200; assumption: 30 s is enough for PyTorch's start-up and the case
in flight). The recorded H200 run took 43 s of benchmarks."""


def run_all(out_path: str | None = None, only: set[str] | None = None,
            say: Callable[[str], None] | None = None, stderr: bool = False,
            budget_s: float = TIME_BUDGET_S) -> dict[str, Any]:
    """Run every bench (or those in ``only``); write the document to ``out_path`` after each bench
    when given. ``say``: where progress lines go (default: a rich bar, else print; on standard
    error with ``stderr``)."""
    torch = _torch()
    doc: dict[str, Any] = {"header": header(), "records": [], "skipped": []}
    cases = plan()
    doc["skipped"] = [c for c in cases if "skip" in c]
    todo = [c for c in cases if "skip" not in c and (only is None or c["bench"] in only)]
    start = time.perf_counter()
    with _Progress(len(todo), say, stderr) as bar:
        bar.line(f"{doc['header']['gpu']}, {doc['header']['sms']} SMs, torch {doc['header']['torch']}: "
                 f"{len(todo)} cases")
        for bench in BENCH_ORDER:
            mine = [c for c in todo if c["bench"] == bench]
            if not mine:
                continue
            t0, before = time.perf_counter(), bar.done
            emitted: list[dict[str, Any]] = []
            # run the cases one by one so that one failing case is recorded and the rest go on
            for case in mine:
                if time.perf_counter() - start > budget_s:
                    doc["skipped"].append({**case, "skip": f"not started within the {budget_s:.0f} s budget"})
                    bar.tick(f"{bench}: skipped (time budget)")
                    continue
                try:
                    BENCHES[bench]([case], emitted.append, bar.tick)
                except Exception as err:  # noqa: BLE001 - a failed case is data, not the end of the run
                    emitted.append({**case, "error": f"{type(err).__name__}: {err}"[:400]})
                    bar.tick(f"{bench} failed: {type(err).__name__}: {str(err)[:80]}")
                    torch.cuda.synchronize()
                    torch.cuda.empty_cache()
            _STATE.clear()
            doc["records"] += emitted
            doc["elapsed_s"] = round(time.perf_counter() - start, 1)
            if out_path:
                _write(out_path, doc)
            torch.cuda.empty_cache()
            bar.line(f"{bench}: {bar.done - before} cases in {time.perf_counter() - t0:.1f} s")
    doc["elapsed_s"] = round(time.perf_counter() - start, 1)
    if out_path:
        _write(out_path, doc)
    return doc


def dry_run(only: set[str] | None = None) -> str:
    """What a run would measure, one line per case."""
    lines = []
    cases = [c for c in plan() if only is None or c["bench"] in only]
    for c in cases:
        params = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in c.items()
                           if k not in ("bench", "skip"))
        lines.append(f"{c['bench']:<18} {params}" + (f"  [skipped: {c['skip']}]" if "skip" in c else ""))
    run = sum("skip" not in c for c in cases)
    lines.append(f"{run} cases to run, {len(cases) - run} skipped")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m simulator.calibrate.microbench", description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", help="where to write the JSON document")
    parser.add_argument("--dry-run", action="store_true", help="list what would be measured; needs no GPU")
    parser.add_argument("--only", help=f"comma-separated benches ({', '.join(BENCH_ORDER)})")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    if only and only - set(BENCH_ORDER):
        print(f"unknown bench {sorted(only - set(BENCH_ORDER))[0]!r}; choose {', '.join(BENCH_ORDER)}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(dry_run(only))
        return 0
    if not args.out:
        parser.error("OUT.json is needed (or --dry-run)")
    why = available()
    if why:
        print(why, file=sys.stderr)
        return 2
    doc = run_all(args.out, only)
    failed = [r for r in doc["records"] if "error" in r]
    print(f"wrote {args.out}: {len(doc['records'])} records ({len(failed)} failed) in {doc['elapsed_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
