"""Microbenchmarks that feed the kernel model (``simulator/hardware/kernels.py``), on one CUDA GPU.

Imports only the standard library at module level and PyTorch/Triton inside functions, so it runs
as ``python3 -m simulator.calibrate.microbench OUT.json`` on a GPU host that has PyTorch and
nothing else of fabricsim's dependencies. Every timed kernel is replayed from a CUDA graph holding
many calls (launch gaps as a graph-serving engine sees them) and timed with CUDA events; the
median of several replays is kept. Writes one JSON document: a header and a list of records
``{"bench": ..., parameters..., "time_s": ...}``.
"""

from __future__ import annotations

import datetime
import json
import socket
import statistics
import subprocess
import sys
import threading
import time

GIB = 2 ** 30
STREAM_CTAS = (1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2112)
SKINNY = ((1280, 8192), (7168, 8192), (8192, 3584), (8192, 1024), (6144, 4096), (28672, 4096))
SQUARES = (1024, 2048, 4096, 8192, 16384)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def graph_time_s(fn, calls: int, replays: int = 5) -> float:
    """Seconds per call of ``fn`` replayed ``calls`` times from one CUDA graph (median of replays)."""
    torch = _torch()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()  # warm-up (and Triton compilation) outside the graph
    torch.cuda.current_stream().wait_stream(stream)
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
    return statistics.median(times)


def _stream_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def copy(src, dst, n, BLOCK: tl.constexpr):
        pid, step = tl.program_id(0), tl.num_programs(0)
        for start in range(pid * BLOCK, n, step * BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)

    return copy


def bench_stream(records: list, progress) -> None:
    """HBM rate of a streaming copy (8 warps, 4096 fp32 per loop step) against its CTA count."""
    torch = _torch()
    copy = _stream_kernel()
    n = GIB // 4  # 1 GiB read + 1 GiB written
    src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    for ctas in STREAM_CTAS:
        calls = 2 if ctas < 16 else 10
        t = graph_time_s(lambda: copy[(ctas,)](src, dst, n, BLOCK=4096, num_warps=8), calls, 3)
        records.append({"bench": "stream", "ctas": ctas, "bytes": 2 * n * 4, "time_s": t})
        progress(f"stream {ctas} CTAs: {2 * n * 4 / t / 1e9:.0f} GB/s")


def bench_fixed(records: list, progress) -> None:
    """Per-kernel fixed cost: back-to-back tiny kernels in a graph, and launched eagerly."""
    torch = _torch()
    x = torch.zeros(1, device="cuda")
    records.append({"bench": "fixed", "mode": "graph", "time_s": graph_time_s(lambda: x.add_(1), 200)})
    for _ in range(50):
        x.add_(1)
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(200):
            x.add_(1)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / 200)
    records.append({"bench": "fixed", "mode": "eager", "time_s": statistics.median(times)})
    progress(f"fixed cost: graph {records[-2]['time_s'] * 1e6:.2f} us, eager {records[-1]['time_s'] * 1e6:.2f} us")


def bench_elementwise(records: list, progress) -> None:
    """Elementwise, activation, reduction, norm and softmax kernels (bf16), bytes read + written."""
    torch = _torch()
    F = torch.nn.functional
    for size in (256 * 2 ** 20, 2 ** 20):
        n = size // 2
        a = torch.randn(n, dtype=torch.bfloat16, device="cuda")
        b = torch.randn(n, dtype=torch.bfloat16, device="cuda")
        rows = a.view(-1, 8192)
        w = torch.ones(8192, dtype=torch.bfloat16, device="cuda")
        out = torch.empty_like(a)
        cases = {"copy": (lambda: out.copy_(a), 2), "elementwise": (lambda: torch.add(a, b, out=out), 3),
                 "activation": (lambda: F.gelu(a), 2), "reduction": (lambda: a.sum(), 1),
                 "norm": (lambda: F.rms_norm(rows, (8192,), w), 2),
                 "softmax": (lambda: torch.softmax(rows, dim=-1), 2)}
        for kind, (fn, touches) in cases.items():
            t = graph_time_s(fn, 20 if size > 2 ** 20 else 100)
            records.append({"bench": "elementwise", "kind": kind, "tensor_bytes": size, "bytes": touches * size,
                            "rows": rows.shape[0], "time_s": t})
        progress(f"elementwise classes at {size / 2 ** 20:.0f} MiB")


def bench_gemm(records: list, progress) -> None:
    """bf16 GEMMs: squares, and a transformer's shapes at decode (M = batch) and prefill (M = tokens)."""
    torch = _torch()
    shapes = [(n, n, n) for n in SQUARES]
    shapes += [(m, n, k) for m in (1, 8, 64, 4096) for n, k in SKINNY]
    for m, n, k in shapes:
        a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
        b = torch.randn(k, n, dtype=torch.bfloat16, device="cuda")
        flops = 2.0 * m * n * k
        calls = max(2, min(50, int(2e13 / flops)))
        t = graph_time_s(lambda: torch.matmul(a, b), calls)
        records.append({"bench": "gemm", "m": m, "n": n, "k": k, "flops": flops,
                        "bytes": 2.0 * (m * k + k * n + m * n), "time_s": t})
        del a, b
    progress(f"{len(shapes)} GEMM shapes")


def _kernel_names(fn) -> list[str]:
    torch = _torch()
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})


def bench_attention(records: list, progress) -> None:
    """SDPA decode (one query token, MHA layout) and causal prefill, FlashAttention backend."""
    torch = _torch()
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for batch, heads, ctx in ((1, 8, 4096), (1, 8, 32768), (1, 32, 16384), (8, 8, 8192), (64, 8, 8192),
                              (16, 32, 4096), (1, 1, 65536), (4, 1, 16384)):
        q = torch.randn(batch, heads, 1, 128, dtype=torch.bfloat16, device="cuda")
        k = torch.randn(batch, heads, ctx, 128, dtype=torch.bfloat16, device="cuda")
        v = torch.randn_like(k)
        backend = "flash"
        try:
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                fn = lambda: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
                names = _kernel_names(fn)
                t = graph_time_s(fn, 20)
        except RuntimeError:
            backend = "default"
            fn = lambda: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
            names = _kernel_names(fn)
            t = graph_time_s(fn, 20)
        records.append({"bench": "decode_attention", "batch": batch, "heads": heads, "kv_heads": heads,
                        "context": ctx, "head_dim": 128, "backend": backend, "kernels": names,
                        "bytes": 2.0 * batch * heads * ctx * 128 * 2, "time_s": t})
        del q, k, v
    progress("decode attention")
    for heads, ctx in ((8, 4096), (64, 4096), (16, 16384)):
        q = torch.randn(1, heads, ctx, 128, dtype=torch.bfloat16, device="cuda")
        k, v = torch.randn_like(q), torch.randn_like(q)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            t = graph_time_s(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), 5)
        records.append({"bench": "prefill_attention", "batch": 1, "heads": heads, "context": ctx, "head_dim": 128,
                        "flops": 4.0 * heads * ctx * ctx * 128 / 2, "time_s": t})
    progress("prefill attention")


def bench_pcie(records: list, progress) -> None:
    torch = _torch()
    size = 256 * 2 ** 20
    dev = torch.empty(size, dtype=torch.uint8, device="cuda")
    for pinned in (True, False):
        host = torch.empty(size, dtype=torch.uint8, pin_memory=pinned)
        for direction in ("h2d", "d2h"):
            fn = (lambda: dev.copy_(host, non_blocking=True)) if direction == "h2d" else \
                 (lambda: host.copy_(dev, non_blocking=True))
            fn()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            records.append({"bench": "pcie", "direction": direction, "pinned": pinned, "bytes": size,
                            "time_s": (time.perf_counter() - t0) / 5})
    progress("PCIe copies")


def _smi() -> tuple[float, float] | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=power.draw,clocks.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout.split("\n")[0]
        watts, mhz = (float(x) for x in out.split(","))
        return watts, mhz
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def bench_power(records: list, progress, seconds: float = 4.0) -> None:
    """Board power and SM clock (nvidia-smi) while idle and while a kernel of each state loops."""
    torch = _torch()
    if _smi() is None:
        progress("no nvidia-smi: board power skipped")
        return
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    big = torch.empty(GIB, dtype=torch.uint8, device="cuda")
    big2 = torch.empty_like(big)
    q = torch.randn(64, 8, 1, 128, dtype=torch.bfloat16, device="cuda")
    kv = torch.randn(64, 8, 8192, 128, dtype=torch.bfloat16, device="cuda")
    F = torch.nn.functional
    loads = {"idle": None, "copy": lambda: big2.copy_(big), "tensor": lambda: a @ a,
             "memory": lambda: F.scaled_dot_product_attention(q, kv, kv)}
    for state, fn in loads.items():
        samples, stop = [], threading.Event()

        def sample() -> None:
            time.sleep(1.0)  # let the clock and power settle
            while not stop.is_set():
                got = _smi()
                if got:
                    samples.append(got)
                time.sleep(0.2)

        thread = threading.Thread(target=sample)
        thread.start()
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            if fn is None:
                time.sleep(0.05)
            else:
                for _ in range(20):
                    fn()
                torch.cuda.synchronize()
        stop.set()
        thread.join()
        if samples:
            records.append({"bench": "power", "state": state, "watts": statistics.median(s[0] for s in samples),
                            "sm_mhz": statistics.median(s[1] for s in samples), "samples": len(samples)})
            progress(f"power {state}: {records[-1]['watts']:.0f} W at {records[-1]['sm_mhz']:.0f} MHz")


BENCHES = (bench_fixed, bench_stream, bench_elementwise, bench_gemm, bench_attention, bench_pcie, bench_power)


def run_all(progress=print) -> dict:
    """Every microbenchmark; the header names the GPU, the software and the date."""
    torch = _torch()
    props = torch.cuda.get_device_properties(0)
    header = {"gpu": props.name, "sms": props.multi_processor_count, "memory_bytes": props.total_memory,
              "torch": torch.__version__, "cuda": torch.version.cuda, "host": socket.gethostname(),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    records: list = []
    for i, bench in enumerate(BENCHES, 1):
        start = time.perf_counter()
        bench(records, lambda msg: progress(f"[{i}/{len(BENCHES)}] {msg}"))
        progress(f"[{i}/{len(BENCHES)}] {bench.__name__} done in {time.perf_counter() - start:.1f} s")
    return {"header": header, "records": records}


def available() -> str | None:
    """None when a CUDA GPU can be measured here, else why not (one line)."""
    torch = _torch()
    if torch is None:
        return "fabricsim calibrate needs PyTorch with CUDA: pip install 'fabricsim[calibrate]'"
    if not torch.cuda.is_available():
        return f"fabricsim calibrate needs a CUDA GPU; PyTorch {torch.__version__} sees none"
    return None


if __name__ == "__main__":
    why = available()
    if why:
        print(why, file=sys.stderr)
        sys.exit(2)
    result = run_all(lambda m: print(m, flush=True))
    with open(sys.argv[1], "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1)
