"""Wall time and peak memory of multi-rack GB200 systems as the GPU count grows, and the growth
exponent (slope of log time against log GPUs).

For each size, in a fresh process (so peak RSS is that size's own): build the fabric, ``describe``
it (counts, per-GPU bandwidth, max-flow bisection), then build and run a 1 GiB ring all_reduce
(LL128, steady granularity) on the flow engine. 576 and 1,152 GPUs are the shipped
``gb200_nvl72_x8_ib.yaml`` / ``x16``; larger sizes are synthetic: the x8 racks repeated, 32 NICs
per leaf, and director-class spines (a benchmark-only part, one link from every leaf to each of 32
spines). Then the whole CLI, each in a fresh process, against the targets of issue 11: a 1 GiB
all_reduce on the shipped 1,152-GPU fabric with ``--algo auto`` (<= 10 s; the tuner estimates every
candidate from one rack and builds only the one it picks) and ``--help`` start-up (<= 0.5 s).
9,216 GPUs (128 racks) should take <= 60 s to build the fabric and the workload and run it
(``describe`` apart). Usage:

    python benchmarks/scale_out.py [--gpus 576,1152,4608,9216] [--skip-describe] [--skip-cli]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGIES = ROOT / "topologies"
SHIPPED = {576: "gb200_nvl72_x8_ib.yaml", 1152: "gb200_nvl72_x16_ib.yaml"}
DIRECTOR_PARTS = """\
devices:
  bench_director:
    kind: switch
    ports: {network: 2048}
    generations: {network: ib_ndr}
    latency_s: 130 ns
    reduction: true
    static_power_W: 20480 W
    sources:
      ports: "benchmark-only part: a Quantum-2 CS9500-class modular director, 2,048 NDR ports"
      latency_s: "assumption: as ib_switch_ndr (one stage counted)"
      static_power_W: "assumption: 10 W per 400G port, as ib_switch_ndr"
"""


def synthetic_topology(gpus: int, folder: Path) -> Path:
    """A YAML of ``gpus / 72`` NVL72 racks extending the shipped x8 file (see module docstring)."""
    racks, leaves = gpus // 72, gpus // 32
    (folder / "bench_parts.yaml").write_text(DIRECTOR_PARTS)
    path = folder / f"gb200_nvl72_x{racks}_bench.yaml"
    path.write_text(f"""extends: {TOPOLOGIES / SHIPPED[576]}
name: GB200 NVL72 x{racks} (benchmark)
parts: [bench_parts.yaml]
enclosures:
  - name: rack
    count: {racks}
devices:
  - {{name: leaf, part: ib_switch_ndr, count: {leaves}, group: network}}
  - {{name: spine, part: bench_director, count: 32, group: network}}
links:
  - name: leaf_spine
    from: "leaf*"
    to: "spine*"
    links_per_pair: 1
""")
    return path


def measure(gpus: int, describe_too: bool) -> dict:
    """One size in this process: seconds per stage and peak RSS (MiB)."""
    from simulator.engine.flow import run_flow
    from simulator.metrics.collective_stats import row
    from simulator.topology.builder import build_fabric
    from simulator.topology.describe import describe
    from simulator.workloads.collectives import build_collective

    with tempfile.TemporaryDirectory() as tmp:
        path = TOPOLOGIES / SHIPPED[gpus] if gpus in SHIPPED else synthetic_topology(gpus, Path(tmp))
        t0 = time.perf_counter()
        fabric = build_fabric(path)
    t1 = time.perf_counter()
    if describe_too:
        describe(fabric)
    t2 = time.perf_counter()
    workload = build_collective(fabric, fabric.gpus, "all_reduce", 1 << 30, "ring", "LL128")
    t3 = time.perf_counter()
    result = run_flow(fabric, workload)
    t4 = time.perf_counter()
    return {"gpus": gpus, "links": fabric.n_links, "build_s": t1 - t0, "describe_s": t2 - t1,
            "workload_s": t3 - t2, "flow_s": t4 - t3, "total_s": t4 - t0,
            "transfers": len(workload.transfers), "busbw_GBps": row(workload, result).busbw_GBps,
            "peak_MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


BIG_GPUS, BIG_TARGET_S = 9216, 60.0
"""Issue 11's target for 128 racks: fabric, 1 GiB ring all_reduce workload and flow run (describe apart)."""

CLI_CASES = (
    ("bench 1,152 GPUs 1 GiB all_reduce --algo auto (flow)", 10.0,
     ["bench", str(TOPOLOGIES / SHIPPED[1152]), "--sizes", "1G", "--algo", "auto", "--engine", "flow"]),
    ("--help start-up", 0.5, ["--help"]),
)


def cli_seconds(args: list[str], repeats: int) -> float:
    """Best wall time (s) of ``python -m simulator ARGS`` over ``repeats`` fresh processes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "simulator", *args], capture_output=True, text=True,
                             cwd=ROOT, env=env)
        best = min(best, time.perf_counter() - t0)
        if out.returncode:
            raise SystemExit(f"python -m simulator {' '.join(args)} failed: {out.stderr.strip()[-300:]}")
    return best


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y against log x."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", default="576,1152,4608", help="comma-separated GPU counts (multiples of 576)")
    parser.add_argument("--skip-describe", action="store_true")
    parser.add_argument("--skip-cli", action="store_true", help="skip the whole-CLI timings")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child process: one size, JSON out
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, not args.skip_describe)))
        return
    rows = []
    print(f"{'GPUs':>6} {'links':>8} {'build s':>8} {'describe s':>10} {'workload s':>10} {'flow s':>7} "
          f"{'total s':>8} {'busbw GB/s':>10} {'peak MiB':>9}")
    for n in (int(x) for x in args.gpus.split(",")):
        cmd = [sys.executable, __file__, "--one", str(n)] + (["--skip-describe"] if args.skip_describe else [])
        env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's simulator, not an installed one
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
        if out.returncode:
            print(f"{n:>6}  failed: {out.stderr.strip().splitlines()[-1]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(r)
        print(f"{r['gpus']:>6} {r['links']:>8,} {r['build_s']:>8.2f} {r['describe_s']:>10.2f} "
              f"{r['workload_s']:>10.2f} {r['flow_s']:>7.2f} {r['total_s']:>8.2f} {r['busbw_GBps']:>10.1f} "
              f"{r['peak_MiB']:>9.0f}")
    if len(rows) >= 2:
        g = [r["gpus"] for r in rows]
        print(f"growth exponent (time ~ GPUs^k): total k = {slope(g, [r['total_s'] for r in rows]):.2f}, "
              f"workload k = {slope(g, [r['workload_s'] for r in rows]):.2f}, "
              f"flow k = {slope(g, [r['flow_s'] for r in rows]):.2f}; "
              f"memory k = {slope(g, [r['peak_MiB'] for r in rows]):.2f}, "
              f"links k = {slope(g, [r['links'] for r in rows]):.2f}")

    for r in rows:
        if r["gpus"] == BIG_GPUS:
            seconds = r["build_s"] + r["workload_s"] + r["flow_s"]
            verdict = "meets" if seconds <= BIG_TARGET_S else "misses"
            print(f"{BIG_GPUS:,} GPUs build + workload + flow: {seconds:.1f} s "
                  f"({verdict} the <= {BIG_TARGET_S:g} s target)")

    if not args.skip_cli:
        for label, target, cli_args in CLI_CASES:
            seconds = cli_seconds(cli_args, repeats=3 if target < 1 else 1)
            verdict = "meets" if seconds <= target else "misses"
            print(f"CLI {label}: {seconds:.2f} s ({verdict} the <= {target:g} s target)")


if __name__ == "__main__":
    main()
