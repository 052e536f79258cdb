"""Wall seconds per item of a scenario: workload build (tuner included) and engine run, per size.

Finds what dominates ``fabricsim run`` on large fabrics. Measured on 2 cores for
scenarios/nvl72_vs_hopper.yaml: 442 s in total before the flow-engine and tuner fixes (the KV
transfer alone 182 s + 236 s in the flow engine: np.append per sub-flow), 12.7 s after.
Usage: python benchmarks/scenario_items.py [SCENARIO.yaml] [TOPOLOGY-SUBSTRING]
"""

from __future__ import annotations

import argparse
import logging
import time

from simulator.engine.dispatch import simulate
from simulator.engine.packet import PacketConfig
from simulator.runner.scenario_run import _attention_run
from simulator.runner.sweeps import SweepSpec, build_workload, run_one, size_list
from simulator.topology.builder import build_fabric
from simulator.workloads.scenario import CollectiveItem, CopyItem, load_scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="scenarios/nvl72_vs_hopper.yaml")
    parser.add_argument("only", nargs="?", default=None, help="run only topologies whose path contains this")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    sc, topos = load_scenario(args.scenario)
    packet = PacketConfig(seed=sc.seed, **({"packet_bytes": sc.packet_bytes} if sc.packet_bytes else {}))
    t_all = time.perf_counter()
    for topo in topos:
        if args.only and args.only not in str(topo):
            continue
        fabric = build_fabric(topo)
        print(fabric.name)
        for item in sc.workloads:
            if isinstance(item, (CollectiveItem, CopyItem)):
                spec = SweepSpec(op=item.op, gpus=item.gpus or len(fabric.gpus), sizes=tuple(size_list(item.sizes)),
                                 algo=getattr(item, "algo", "auto"), protocol=getattr(item, "protocol", "auto"),
                                 engine=sc.engine, packet_bytes=sc.packet_bytes, seed=sc.seed)
                for nbytes in spec.sizes:
                    t0 = time.perf_counter()
                    w = build_workload(fabric, spec, nbytes)
                    t1 = time.perf_counter()
                    row, res = run_one(fabric, w, spec)
                    t2 = time.perf_counter()
                    print(f"  {item.op:14s} {nbytes:>11d} B  build {t1 - t0:6.2f} s  run {t2 - t1:6.2f} s  "
                          f"{res.engine:6s} {w.meta['algo']}/{w.meta['protocol']}  {len(w.transfers)} transfers  "
                          f"busbw {row['busbw_GBps']:.1f} GB/s")
            else:
                t0 = time.perf_counter()
                run = _attention_run(fabric, item, "graph")
                t1 = time.perf_counter()
                res = simulate(fabric, run.workload, engine=sc.engine, packet=packet)
                t2 = time.perf_counter()
                print(f"  {item.kind:14s} {'':11s}    build {t1 - t0:6.2f} s  run {t2 - t1:6.2f} s  {res.engine:6s} "
                      f"{len(run.workload.transfers)} transfers")
    print(f"total {time.perf_counter() - t_all:.1f} s")


if __name__ == "__main__":
    main()
