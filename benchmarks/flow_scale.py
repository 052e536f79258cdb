"""CPU seconds of the flow engine on the shipped 1,152-GPU fabric (issue 11): a 1 GiB all_reduce
with each of tree/LL128 (165,744 transfers), hierarchical/Simple and ring/LL128, built once and
run ``--repeats`` times (best CPU time shown). The cost at this size is the per-transfer set-up
(classes, plans, release order): a run has only ~10 max-min events. Usage:

    python benchmarks/flow_scale.py [--repeats 3] [--cases tree/LL128,ring/LL128]

(run from the repository root: the checkout next to this file is imported, not an installed copy)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.engine.flow import run_flow  # noqa: E402  (after the path line)
from simulator.topology.builder import build_fabric  # noqa: E402
from simulator.workloads.collectives import build_collective  # noqa: E402

FABRIC = Path(__file__).resolve().parent.parent / "topologies" / "gb200_nvl72_x16_ib.yaml"
CASES = "tree/LL128,hierarchical/Simple,ring/LL128"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default=CASES, help="comma-separated algo/protocol pairs")
    args = parser.parse_args()
    fabric = build_fabric(FABRIC)
    print(f"{'algo/protocol':<22} {'transfers':>10} {'events':>7} {'flow CPU s':>10}")
    for case in args.cases.split(","):
        algo, protocol = case.split("/")
        workload = build_collective(fabric, fabric.gpus, "all_reduce", 1 << 30, algo, protocol)
        best = float("inf")
        for _ in range(args.repeats):
            cpu0 = time.process_time()
            result = run_flow(fabric, workload)
            best = min(best, time.process_time() - cpu0)
        print(f"{case:<22} {len(workload.transfers):>10,} {result.events:>7} {best:>10.2f}")


if __name__ == "__main__":
    main()
