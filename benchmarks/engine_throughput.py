"""Packet-engine speed: packet-hops simulated per wall-clock second.

An 8-hop chain (``synthetic.chain(8)``: gpu0 - 7 switches - gpu1) with credit flow control on
(credits taken per packet, returned per packet after the credit delay), 200,000 packets of 4 KiB.
Also times a 72-GPU ring all-reduce's worth of traffic (about 150 GB in 1 MiB packets over two hops,
GPU -> switch -> GPU) as a sanity figure for real collectives. If ns.py is importable (PyPI
``ns-py``; not a dependency of fabricsim), the same chain runs in ns.py too (8 x (Port at the link
rate -> Wire with the link latency), no credits) and the ratio is printed, on wall-clock time and
on CPU time of this process (the machine is shared: under load the CPU ratio is the steadier one);
each chain is timed ``--repeat`` times (3) and its fastest run kept, ns.py's and ours alike.
After its first hop every channel of the chain belongs to the one flow, so the engine sends each
packet on over the rest without an event per hop (``simulator.engine.packet.ahead``); the
benchmark also runs it once with every hop an event (``PacketConfig(take_ahead=False)``) and
prints that speed and the makespan difference (0: the same run). For comparison it also runs the
chain as ``bench`` would cut it: one flow on an uncongested path,
so in 1 MiB trains (``simulator.runner.packet_unit.run_unit``), checks that the run
ends when the packet-by-packet run does, and prints the 4 KiB packet-hops it stood for per second;
that figure is not the per-packet speed. The last line is the per-packet figure CI reads:

    packet_hops_per_s: N

Run from the repository root: ``python benchmarks/engine_throughput.py [--packets N]`` (the
checkout next to this file is imported, not an installed copy).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.engine.packet import PacketConfig, run_packet  # noqa: E402  (after the path line)
from simulator.engine.transfer import Transfer, Workload  # noqa: E402
from simulator.topology import synthetic  # noqa: E402

HOPS = 8
PACKET = 4096


def _chain(packets: int) -> tuple:
    """The 8-hop credited chain and its one transfer of ``packets`` 4 KiB packets."""
    credit = synthetic.default_credit(buffer_bytes=64 * PACKET, credit_bytes=256, return_delay_s=20e-9)
    fabric = synthetic.chain(HOPS, credit=credit, switch_latency_s=100e-9)
    return fabric, Workload("chain", (Transfer(0, "gpu0", "gpu1", packets * PACKET),))


def chain_benchmark(packets: int, take_ahead: bool = True) -> tuple[float, float, int, float]:
    """Wall seconds, CPU seconds, packet-hops and simulated makespan (s) for ``packets`` packets
    over an 8-hop credited chain (``take_ahead=False``: every hop an event)."""
    fabric, workload = _chain(packets)
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_packet(fabric, workload, PacketConfig(packet_bytes=PACKET, take_ahead=take_ahead))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert all(res.invariants.values()), res.invariants
    return wall, cpu, packets * HOPS, res.makespan_s


def chain_in_trains(packets: int, fine_makespan_s: float) -> tuple[float, int, float]:
    """CPU seconds, unit and relative makespan difference of the same chain in the unit ``bench``
    would choose (``run_unit``: 1 MiB trains for the default 200,000 packets)."""
    from simulator.runner.packet_unit import run_unit

    fabric, workload = _chain(packets)
    unit = run_unit(fabric, [workload]).bytes
    c0 = time.process_time()
    res = run_packet(fabric, workload, PacketConfig(packet_bytes=unit, fine_packet_bytes=PACKET))
    cpu = time.process_time() - c0
    return cpu, unit, res.makespan_s / fine_makespan_s - 1


def nspy_chain_benchmark(packets: int) -> tuple[float, float, int] | None:
    """Wall seconds, CPU seconds and packet-hops of the same chain in ns.py (None when ns.py is not
    installed)."""
    try:
        import simpy
        from ns.packet.dist_generator import DistPacketGenerator
        from ns.packet.sink import PacketSink
        from ns.port.port import Port
        from ns.port.wire import Wire
    except ImportError:
        return None
    rate_bps, latency_s = 50e9 * 8, 10e-9
    env = simpy.Environment()
    gap = PACKET * 8 / rate_bps
    gen = DistPacketGenerator(env, "gpu0", lambda: gap, lambda: PACKET, flow_id=0, size=packets * PACKET)
    sink = PacketSink(env)
    last = gen
    for _ in range(HOPS):
        port = Port(env, rate_bps)
        wire = Wire(env, lambda: latency_s)
        last.out = port
        port.out = wire
        last = wire
    last.out = sink
    t0, c0 = time.perf_counter(), time.process_time()
    env.run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return wall, cpu, sum(len(v) for v in sink.arrivals.values()) * HOPS


def allreduce_traffic_benchmark(n_gpus: int = 72, total_bytes: float = 150e9) -> tuple[float, float]:
    """Wall seconds and simulated seconds for ``total_bytes`` of ring neighbour traffic on a star."""
    fabric = synthetic.star(n_gpus, rate_Bps=900e9 / 2)
    per = int(total_bytes / n_gpus)
    workload = Workload("ring-allreduce-traffic", tuple(
        Transfer(i, f"gpu{i}", f"gpu{(i + 1) % n_gpus}", per) for i in range(n_gpus)))
    t0 = time.perf_counter()
    res = run_packet(fabric, workload, PacketConfig(packet_bytes=1 << 20))
    return time.perf_counter() - t0, res.makespan_s


def best_of(repeat: int, timed):
    """The result of ``timed()`` (a tuple starting with wall seconds, or None) with the least wall
    time over ``repeat`` calls."""
    runs = [timed() for _ in range(repeat)]
    if runs[0] is None:
        return None
    return min(runs, key=lambda r: r[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=200_000)
    parser.add_argument("--skip-allreduce", action="store_true")
    parser.add_argument("--repeat", type=int, default=3,
                        help="time each chain this many times and keep the fastest, ns.py's and ours "
                             "alike (timeit's convention: the machine is shared, the best run is the "
                             "one least disturbed)")
    args = parser.parse_args()
    repeat = max(1, args.repeat)
    if not args.skip_allreduce:
        wall, sim = allreduce_traffic_benchmark()
        print(f"allreduce_150GB_1MiB_packets_wall_s: {wall:.2f} (simulated {sim * 1e3:.1f} ms)")
    nspy = best_of(repeat, lambda: nspy_chain_benchmark(args.packets))
    if nspy is not None:
        ns_wall, ns_cpu, ns_hops = nspy
        print(f"nspy_chain{HOPS}_packet_hops_per_s: {ns_hops / ns_wall:.0f} (no credits; "
              f"{ns_hops / ns_cpu:.0f} per CPU second)")
    wall, cpu, hops, makespan = best_of(repeat, lambda: chain_benchmark(args.packets))
    print(f"chain{HOPS}_packets: {args.packets}  wall_s: {wall:.2f}  cpu_s: {cpu:.2f}  (best of {repeat})")
    e_wall, e_cpu, _, e_makespan = chain_benchmark(args.packets, take_ahead=False)
    print(f"chain{HOPS}_every_hop_an_event: wall_s: {e_wall:.2f}  cpu_s: {e_cpu:.2f}  (one run), "
          f"{hops / e_wall:.0f} packet-hops/s, makespan {makespan / e_makespan - 1:+.1e} relative to hops "
          f"taken ahead (the same run)")
    t_cpu, unit, diff = chain_in_trains(args.packets, makespan)
    print(f"chain{HOPS}_in_trains: {unit} B units (bench's choice) for the {PACKET} B packets, cpu_s: {t_cpu:.3f}, makespan "
          f"{diff:+.1e} relative to packet by packet; {hops / t_cpu:.0f} packet-hops stood for per CPU "
          f"second (not the per-packet speed)")
    if nspy is not None:
        print(f"speed_vs_nspy: {(hops / wall) / (ns_hops / ns_wall):.2f}x wall, "
              f"{(hops / cpu) / (ns_hops / ns_cpu):.2f}x CPU")
    print(f"packet_hops_per_s: {hops / wall:.0f}")


if __name__ == "__main__":
    main()
