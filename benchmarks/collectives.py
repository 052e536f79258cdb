"""Wall seconds for a 1 GiB all_reduce on the 72 GPUs of GB200 NVL72 with each engine.

Targets on 2 cores: flow engine < 0.1 s; packet engine <= 30 s wall within 1% of the fine-packet
busbw, under 500 MB peak RSS. The packet engine runs with the unit ``bench`` would choose for this
run (``simulator.runner.packet_unit``: the fine packet of the run's routes, or trains of them where
no switch output arbitrates among inputs: 16 KiB packets in trains of 128 KiB for NVLS all_reduce);
``--fine`` also runs the fine packets one by one for the comparison (about 80 s here). The workload
(algorithm chosen by the tuner unless --algo) and routes are built before timing; the timed part is
the engine run. Peak RSS is the whole process's. Usage:

    python benchmarks/collectives.py [--algo ring|nvls|auto] [--packet-bytes N] [--skip-packet] [--fine]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.engine.flow import run_flow  # noqa: E402  (after the path line)
from simulator.metrics.collective_stats import row  # noqa: E402
from simulator.topology.builder import build_fabric  # noqa: E402
from simulator.units import GiB  # noqa: E402
from simulator.workloads.collectives import build_collective  # noqa: E402

TOPOLOGY = Path(__file__).resolve().parent.parent / "topologies" / "gb200_nvl72.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", default="auto")
    parser.add_argument("--packet-bytes", type=int, default=None,
                        help="packet engine payload per packet (B); default: the run's unit "
                             "(simulator.runner.packet_unit)")
    parser.add_argument("--skip-packet", action="store_true")
    parser.add_argument("--fine", action="store_true", help="also run the fine packets one by one")
    args = parser.parse_args()
    fabric = build_fabric(str(TOPOLOGY))
    workload = build_collective(fabric, fabric.gpus, "all_reduce", GiB, args.algo)
    run_flow(fabric, workload)  # warm route caches
    meta = workload.meta
    print(f"{fabric.name}: all_reduce 1 GiB on {len(fabric.gpus)} GPUs, algo {meta['algo']}/{meta['protocol']}, "
          f"{len(workload.transfers)} transfers")
    t0 = time.perf_counter()
    result = run_flow(fabric, workload)
    flow_busbw = row(workload, result).busbw_GBps
    print(f"flow   engine: {time.perf_counter() - t0:8.3f} s wall   busbw {flow_busbw:7.1f} GB/s")
    if args.skip_packet:
        return
    from simulator.engine.packet import PacketConfig, run_packet
    from simulator.runner.packet_unit import choose

    config, unit = choose(fabric, [workload], packet_bytes=args.packet_bytes)
    runs = [("unit", config)]
    if args.fine and unit is not None and unit.trains:
        runs.append(("fine", PacketConfig(packet_bytes=unit.fine_bytes)))
    for label, packet in runs:
        t0 = time.perf_counter()
        result = run_packet(fabric, workload, packet)
        wall = time.perf_counter() - t0
        busbw = row(workload, result).busbw_GBps
        rss_MB = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cut = (f"{packet.packet_bytes} B trains of {packet.fine_packet_bytes} B packets"
               if packet.fine_packet_bytes else f"{packet.packet_bytes} B packets")
        print(f"packet engine ({label}): {wall:8.3f} s wall   busbw {busbw:7.2f} GB/s   ({cut}; "
              f"busbw {100 * (busbw / flow_busbw - 1):+.2f}% vs flow; peak RSS so far {rss_MB:.0f} MB)")

if __name__ == "__main__":
    main()
