"""Wall seconds for a 1 GiB all_reduce on the 72 GPUs of GB200 NVL72 with each engine.

Targets on 2 cores: flow engine < 0.1 s, packet engine < 60 s with busbw within 5% of the flow
engine. The packet engine runs at ``fine_packet_bytes`` by default: the largest power-of-two packet
that is not coarse on any channel and whose credit loop keeps every link at its rate (8 KiB on
NVL72's 32 KiB NVLink 5 buffers, with the switch's forwarding counted), so the credit loop is
modelled honestly. The workload (steady
granularity, algorithm chosen by the tuner unless --algo) and routes are built before timing; the
timed part is the engine run. Usage:

    python benchmarks/collectives.py [--algo ring|nvls|auto] [--packet-bytes N] [--skip-packet]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from simulator.engine.flow import run_flow
from simulator.metrics.collective_stats import row
from simulator.topology.builder import build_fabric
from simulator.units import GiB
from simulator.workloads.collectives import build_collective

TOPOLOGY = Path(__file__).resolve().parent.parent / "topologies" / "gb200_nvl72.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", default="auto")
    parser.add_argument("--packet-bytes", type=int, default=None,
                        help="packet engine payload per packet (B); default: the largest fine size "
                             "(simulator.engine.packet.sizing.fine_packet_bytes)")
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
    flow_busbw = row(workload, result).busbw_GBps
    print(f"flow   engine: {time.perf_counter() - t0:8.3f} s wall   busbw {flow_busbw:7.1f} GB/s")
    if args.skip_packet:
        return
    from simulator.engine.packet import run_packet
    from simulator.engine.packet.config import PacketConfig
    from simulator.engine.packet.sizing import fine_packet_bytes, is_fine

    packet = args.packet_bytes or fine_packet_bytes(fabric)
    fine = all(is_fine(ch, packet) for ch in fabric.channels)
    t0 = time.perf_counter()
    result = run_packet(fabric, workload, PacketConfig(packet_bytes=packet))
    wall = time.perf_counter() - t0
    busbw = row(workload, result).busbw_GBps
    print(f"packet engine: {wall:8.3f} s wall   busbw {busbw:7.1f} GB/s   (packet {packet} B, "
          f"{'fine: credit loop modelled' if fine else 'NOT fine: coarse or credit-capped'}; "
          f"busbw {100 * (busbw / flow_busbw - 1):+.2f}% vs flow)")


if __name__ == "__main__":
    main()
