"""Per-kernel GPU time of the plain-PyTorch transformer layers of ``fabricsim calibrate``'s layer bench
(``simulator.calibrate.microbench._layer_fn``), from torch.profiler: which kernels a layer's time is
made of, to check the kernel model's composition kernel by kernel. Needs PyTorch and a CUDA GPU.

    python3 benchmarks/calibrate_h200/profile_layer.py OUT.json

Writes {"header": ..., "layers": [{case..., "graph_time_s", "kernels": [{"name", "calls", "time_s"}]}]}:
each kernel's device time per layer call (mean over the profiled calls, launch gaps excluded), and the
layer's CUDA-graph time as the layer bench measures it.
"""

from __future__ import annotations

import json
import sys

from simulator.calibrate import microbench as mb

CASES = [("llama3-70b-tp8", "decode", 1, 4096), ("llama3-70b-tp8", "decode", 8, 4096),
         ("llama3-70b-tp8", "decode", 64, 16384), ("llama3-8b", "decode", 1, 4096),
         ("llama3-8b", "decode", 32, 16384), ("llama3-70b-tp8", "prefill", 1, 1024),
         ("llama3-70b-tp8", "decode", 1, 4096, "flash"), ("llama3-70b-tp8", "decode", 64, 16384, "flash")]
"""The layer shapes profiled (a subset of the layer bench's: small and large batch, both models), with
PyTorch's default SDPA backend, or ``flash`` forced (FlashAttention-2)."""
CALLS = 20
"""Profiled calls per case (assumption: 20 calls give per-kernel means stable to ~1%)."""


def profile_case(model: str, phase: str, batch: int, context: int, backend: str = "default") -> dict:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import ProfilerActivity, profile

    case = {"model": model, "phase": phase, "batch": batch, "context": context, "head_dim": mb.HEAD_DIM,
            "backend": backend, **mb.LAYER_MODELS[model]}
    layer, _, _ = mb._layer_fn(case)

    def fn():
        if backend == "flash":
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return layer()
        return layer()

    graph_s = mb.graph_time_s(fn, 50)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            fn()
        torch.cuda.synchronize()
    kernels: dict[str, dict] = {}
    order: list[str] = []
    for e in prof.events():
        if not str(getattr(e.device_type, "name", e.device_type)).endswith("CUDA"):
            continue
        k = kernels.setdefault(e.name, {"name": e.name, "calls": 0, "time_s": 0.0})
        if e.name not in order:
            order.append(e.name)
        k["calls"] += 1
        k["time_s"] += e.device_time_total / 1e6 if hasattr(e, "device_time_total") else e.cuda_time_total / 1e6
    rows = [{"name": kernels[n]["name"], "calls": kernels[n]["calls"] / CALLS, "time_s": kernels[n]["time_s"] / CALLS}
            for n in order]
    return {**case, "graph_time_s": graph_s, "kernel_sum_s": sum(r["time_s"] for r in rows), "kernels": rows}


def main(argv: list[str]) -> int:
    if mb.available():
        print(mb.available(), file=sys.stderr)
        return 2
    out = {"header": mb.header(), "layers": []}
    for c in CASES:
        rec = profile_case(*c)
        out["layers"].append(rec)
        print(f"{c}: graph {rec['graph_time_s'] * 1e6:.1f} us, kernels {rec['kernel_sum_s'] * 1e6:.1f} us")
        for r in rec["kernels"]:
            print(f"   {r['time_s'] * 1e6:8.2f} us x{r['calls']:.0f}  {r['name'][:110]}")
    with open(argv[0], "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
