"""The packet engine: packets over the fabric with credit-based link flow control, switch
arbitration and deadlock detection.

    run_packet(fabric, workload, PacketConfig(packet_bytes=256), observer=None) -> RunResult
"""

from __future__ import annotations

from simulator.engine.packet.config import PacketConfig
from simulator.engine.packet.link import credit_limited_rate_Bps, credit_loop_rtt_s
from simulator.engine.packet.observer import EngineObserver
from simulator.engine.result import RunResult
from simulator.engine.transfer import Workload
from simulator.topology.fabric import Fabric


def run_packet(fabric: Fabric, workload: Workload, config: PacketConfig = PacketConfig(),
               observer: EngineObserver | None = None, *, faults=None, progress=None) -> RunResult:
    """Simulate ``workload`` on ``fabric`` packet by packet; return timings, counters, invariants.

    Raises ``SimulationError`` (with ``.result`` attached) on deadlock or a broken invariant, and
    ``InputError`` for a configuration the fabric cannot carry (a packet larger than a buffer).
    ``faults`` (tests only) is an ``invariants.Faults``. ``progress(packet_hops)`` is called now
    and then while the run lasts (progress bars); it does not change the run.
    """
    from simulator.engine.packet.network import PacketNetwork

    return PacketNetwork(fabric, workload, config, observer, faults, progress).run()


__all__ = ["EngineObserver", "PacketConfig", "RunResult", "credit_limited_rate_Bps",
           "credit_loop_rtt_s", "run_packet"]
