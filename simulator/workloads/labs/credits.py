"""The credit lab: one saturated link, swept over buffer depth x cable length x link generation.

A sender may only have as many bytes in flight as the receiver has buffer for; each packet's space
comes back one credit round trip (RTT) after the packet started. So a buffer of W bytes carries at
most W / RTT, and the link runs at min(payload rate, W / RTT). The lab simulates each point packet
by packet and prints the simulation beside that closed form; the buffer a link needs to run at its
payload rate is its bandwidth-delay product, rate x RTT, which grows with the cable.

Rates are **payload rates** (docs/reference/glossary.md): the link's data rate after encoding/FEC
times its protocol efficiency (``CatalogLink.rate_Bps``: 42.75 GB/s per direction for NVLink 5, whose
data rate is 50 GB/s and line rate 53.125 GB/s). The row key ``line_GBps`` and the ``limited_by``
value ``"line rate"`` are that payload rate under their older names (other labs, plots and tests
read them).
"""

from __future__ import annotations

from typing import Callable, Sequence

from simulator.engine.packet import PacketConfig, credit_loop_rtt_s, run_packet
from simulator.engine.transfer import Transfer, Workload
from simulator.hardware.catalog import Catalog, load_catalog
from simulator.topology import synthetic
from simulator.workloads.labs.catalog_link import CatalogLink, catalog_link
from simulator.workloads.labs.measure import DeliveryLog, steady_rate_Bps

DEFAULT_GENERATIONS = ("nvlink5",)
DEFAULT_BUFFERS = tuple(1024 << i for i in range(7))
"""1 KiB .. 64 KiB receive buffers: both regimes at every cable length of the default sweep."""
DEFAULT_CABLES_M = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0)
"""Passive copper up to its reach, then active copper, then optics (see ``CABLE_PREFERENCE``)."""
WINDOWS = 100
"""Buffer-fulls sent per run: the end effect of the rate measurement is below 1 / WINDOWS."""
MIN_PACKETS = 2000
"""Fewest packets per run (bounds the end effect for small buffers, too)."""


def window_bytes(link: CatalogLink) -> int:
    """Bytes the sender may have in flight: the buffer rounded down to whole packets (a packet
    needs all its credits before it starts)."""
    return link.credit.buffer_bytes // link.packet_bytes * link.packet_bytes


def closed_form_Bps(link: CatalogLink, rtt_s: float) -> float:
    """min(payload rate, window / RTT): the credit-loop throughput of a saturated link (B/s)."""
    return min(link.rate_Bps, window_bytes(link) / rtt_s)


def credit_point(link: CatalogLink, packets: int | None = None) -> dict:
    """Simulate ``link`` saturated by one transfer; return one row of the lab (GB = 1e9 B)."""
    packet = link.packet_bytes
    if packets is None:
        packets = max(MIN_PACKETS, WINDOWS * link.credit.buffer_bytes // packet)
    fabric = synthetic.single_link(rate_Bps=link.rate_Bps, latency_s=link.latency_s, credit=link.credit,
                                   generation=link.generation)
    workload = Workload("credit-lab", (Transfer(0, "gpu0", "gpu1", packets * packet, tag="saturate"),))
    log = DeliveryLog()
    result = run_packet(fabric, workload, PacketConfig(packet_bytes=packet), log)
    t_s, nbytes = log.select([0])
    simulated = steady_rate_Bps(t_s, nbytes)
    rtt = credit_loop_rtt_s(fabric.channels[0], packet)
    closed = closed_form_Bps(link, rtt)
    return {
        "generation": link.generation,
        "cable_m": link.cable_m,
        "cable": link.cable,
        "buffer_bytes": link.credit.buffer_bytes,
        "packet_bytes": packet,
        "rtt_ns": rtt * 1e9,
        "bdp_bytes": link.rate_Bps * rtt,
        "line_GBps": link.rate_Bps / 1e9,  # the payload rate (module docstring)
        "simulated_GBps": simulated / 1e9,
        "closed_form_GBps": closed / 1e9,
        "error_pct": 100.0 * (simulated - closed) / closed,
        "limited_by": "credits" if window_bytes(link) / rtt < link.rate_Bps else "line rate",
        "credit_stall_pct": 100.0 * float(result.channel_credit_stall_s[0]) / result.makespan_s,
        "packets": packets,
    }


def credit_sweep(generations: Sequence[str] = DEFAULT_GENERATIONS,
                 buffers: Sequence[int] = DEFAULT_BUFFERS, cables_m: Sequence[float] = DEFAULT_CABLES_M,
                 catalog: Catalog | None = None, on_row: Callable[[dict], None] | None = None) -> list[dict]:
    """Rows of :func:`credit_point` for every generation x cable length x buffer (per direction)."""
    catalog = catalog or load_catalog()
    links = [catalog_link(gen, m, buf, catalog) for gen in generations for m in cables_m for buf in buffers]
    rows = []
    for link in links:
        rows.append(credit_point(link))
        if on_row is not None:
            on_row(rows[-1])
    return rows


def explain_credits(rows: Sequence[dict]) -> str:
    """One or two sentences per generation, computed from the rows: how the needed buffer grows
    with the cable and how close the simulation is to the closed form."""
    out = []
    for gen in dict.fromkeys(r["generation"] for r in rows):
        mine = [r for r in rows if r["generation"] == gen]
        short = min(mine, key=lambda r: r["cable_m"])
        long = max(mine, key=lambda r: r["cable_m"])
        limited = sum(r["limited_by"] == "credits" for r in mine)
        worst = max(mine, key=lambda r: abs(r["error_pct"]))
        out.append(
            f"{gen} (payload rate {short['line_GBps']:.1f} GB/s per direction): the credit loop grows from "
            f"{short['rtt_ns']:.0f} ns at {short['cable_m']:g} m to {long['rtt_ns']:.0f} ns at "
            f"{long['cable_m']:g} m, so the buffer needed for the full payload rate (rate x RTT) grows from "
            f"{short['bdp_bytes'] / 1024:.1f} to {long['bdp_bytes'] / 1024:.1f} KiB; below it throughput "
            f"is buffer / RTT ({limited} of {len(mine)} points are credit-limited). "
            f"The simulation stays within {abs(worst['error_pct']):.2f} % of min(payload rate, buffer / RTT) "
            f"(worst: {worst['buffer_bytes'] // 1024} KiB at {worst['cable_m']:g} m).")
    return "\n".join(out)
