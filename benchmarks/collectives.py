"""Wall seconds for a 1 GiB all_reduce on the 72 GPUs of GB200 NVL72 with each engine.

Targets on 2 cores: flow engine < 0.1 s, packet engine < 60 s. The workload (steady granularity,
algorithm chosen by the tuner unless --algo) and routes are built before timing; the timed part
is the engine run. Usage: python benchmarks/collectives.py [--algo ring|nvls|auto] [--packet-bytes N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from simulator.engine.flow import run_flow
from simulator.metrics.collective_stats import row
from simulator.topology.builder import build_fabric
from simulator.units import GiB, KiB
from simulator.workloads.collectives import build_collective

TOPOLOGY = Path(__file__).resolve().parent.parent / "topologies" / "gb200_nvl72.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", default="auto")
    parser.add_argument("--packet-bytes", type=int, default=32 * KiB,
                        help="packet engine payload per packet (B); must fit the NVLink receive buffer (32 KiB on NVL72)")
    parser.add_argument("--skip-packet", action="store_true")
    args = parser.parse_args()
    fabric = build_fabric(str(TOPOLOGY))
    workload = build_collective(fabric, fabric.gpus, "all_reduce", GiB, args.algo)
    run_flow(fabric, workload)  # warm route caches
    meta = workload.meta
    print(f"{fabric.name}: all_reduce 1 GiB on {len(fabric.gpus)} GPUs, algo {meta['algo']}/{meta['protocol']}, "
          f"{len(workload.transfers)} transfers")
    t0 = time.perf_counter()
    result = run_flow(fabric, workload)
    print(f"flow   engine: {time.perf_counter() - t0:8.3f} s wall   busbw {row(workload, result).busbw_GBps:7.1f} GB/s")
    if args.skip_packet:
        return
    from simulator.engine.packet import run_packet
    from simulator.engine.packet.config import PacketConfig

    t0 = time.perf_counter()
    result = run_packet(fabric, workload, PacketConfig(packet_bytes=args.packet_bytes))
    print(f"packet engine: {time.perf_counter() - t0:8.3f} s wall   busbw {row(workload, result).busbw_GBps:7.1f} GB/s"
          f"   (packet {args.packet_bytes} B)")


if __name__ == "__main__":
    main()
