"""Seconds to load a topology and build its fabric, and start-up seconds of the CLI, each in a fresh
process (best of ``--repeats``).

Per topology: importing the builder, then ``load_fabric`` (YAML, validation, catalog, devices,
links, port checks, channels, static power; the graph is built only when something reads
``Fabric.graph``), once cold and then warm. Topologies: the shipped 1,152-GPU
``gb200_nvl72_x16_ib.yaml`` and the synthetic multi-rack sizes of ``benchmarks/scale_out.py``
(9,216 GPUs: 128 racks). Then ``python -m simulator --help`` and ``bench --help`` wall time, and
the import time (``-X importtime``, top-level modules summed) of ``--help``. Usage:

    python benchmarks/fabric_load.py [--gpus 1152,9216] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = {576: "gb200_nvl72_x8_ib.yaml", 1152: "gb200_nvl72_x16_ib.yaml"}
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

CHILD = """
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, {benchmarks!r})
t0 = time.perf_counter()
from simulator.cli.common import load_fabric
import simulator.topology.builder
t1 = time.perf_counter()
gpus, shipped = {gpus}, {shipped!r}
path = shipped or str(__import__("scale_out").synthetic_topology(gpus, Path(tempfile.mkdtemp())))
t2 = time.perf_counter()
fabric = load_fabric(path)
t3 = time.perf_counter()
load_fabric(path)
t4 = time.perf_counter()
print(json.dumps({{"import_s": t1 - t0, "cold_s": t3 - t2, "warm_s": t4 - t3,
                  "channels": len(fabric.channels), "gpus": len(fabric.gpus)}}))
"""


def load_seconds(gpus: int) -> dict:
    """One fresh process: import seconds, cold and warm ``load_fabric`` seconds, channel count."""
    shipped = str(ROOT / "topologies" / SHIPPED[gpus]) if gpus in SHIPPED else ""
    code = CHILD.format(benchmarks=str(ROOT / "benchmarks"), gpus=gpus, shipped=shipped)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=ENV)
    if out.returncode:
        raise SystemExit(out.stderr.strip()[-400:])
    return json.loads(out.stdout)


def cli_seconds(args: list[str]) -> float:
    """Wall time (s) of ``python -m simulator ARGS`` in a fresh process."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "simulator", *args], capture_output=True, cwd=ROOT, env=ENV, check=True)
    return time.perf_counter() - t0


def import_ms(args: list[str]) -> float:
    """Import time (ms) of ``python -X importtime -m simulator ARGS``: top-level imports summed."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "simulator", *args], capture_output=True,
                         text=True, cwd=ROOT, env=ENV)
    total = 0
    for line in out.stderr.splitlines():
        if line.startswith("import time:") and "cumulative" not in line:
            _, cumulative, name = line.split("|")
            if not name.startswith("  "):  # one space after the bar: a top-level import
                total += int(cumulative)
    return total / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", default="1152,9216", help="comma-separated GPU counts (multiples of 576)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'GPUs':>6} {'channels':>9} {'import s':>9} {'cold load s':>12} {'warm load s':>12}")
    for gpus in (int(g) for g in args.gpus.split(",")):
        runs = [load_seconds(gpus) for _ in range(args.repeats)]
        best = {k: min(r[k] for r in runs) for k in ("import_s", "cold_s", "warm_s")}
        print(f"{runs[0]['gpus']:>6,} {runs[0]['channels']:>9,} {best['import_s']:>9.2f} {best['cold_s']:>12.2f} "
              f"{best['warm_s']:>12.2f}")
    for label, cli in (("--help", ["--help"]), ("bench --help", ["bench", "--help"])):
        wall = min(cli_seconds(cli) for _ in range(args.repeats))
        imports = min(import_ms(cli) for _ in range(args.repeats))
        print(f"python -m simulator {label}: {wall:.2f} s wall, {imports:.0f} ms of imports"
              + (f" (issue 11 target <= 0.5 s: {'met' if wall <= 0.5 else 'MISSED'})" if label == "--help" else ""))


if __name__ == "__main__":
    main()
