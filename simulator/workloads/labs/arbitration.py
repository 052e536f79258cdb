"""The arbitration lab: N inputs of one switch saturate one output; who gets how much.

Every input sends the same amount to one GPU behind the switch, so the output is oversubscribed
N times and its arbiter alone decides the shares. Shares are measured while every input still has
data (from the first delivery until the first input finishes), in payload bytes through the output.
"""

from __future__ import annotations

from typing import Sequence

from simulator.engine.packet import PacketConfig, run_packet
from simulator.engine.transfer import Transfer, Workload
from simulator.errors import InputError
from simulator.hardware.catalog import Catalog, load_catalog
from simulator.topology import synthetic
from simulator.topology.switch_designs import DESIGNS_BY_NAME, SWITCH_DESIGNS
from simulator.workloads.labs.catalog_link import catalog_link, switch_latency_s
from simulator.workloads.labs.measure import DeliveryLog, jain_index, rate_in_window_Bps

ARBITER_ORDER: tuple[str, ...] = tuple(d.name for d in SWITCH_DESIGNS if d.arbitration_lab)
"""The lab's rows by default, in ``SWITCH_DESIGNS`` order (``SwitchDesign.arbitration_lab``)."""
WEIGHTED: tuple[str, ...] = tuple(d.name for d in SWITCH_DESIGNS if d.weighted)
"""Designs that read the per-input weights (priorities for fixed_priority; ``SwitchDesign.weighted``)."""
STARVED_SHARE = 0.01
"""An input is called starved when it gets less than this fraction of the output (definition)."""
DEFAULT_CABLE_M = 1.0
"""GPU-to-switch cable of the lab fabrics (assumption: a short in-rack copper run)."""


def weights(n_inputs: int) -> dict[str, int]:
    """Input name -> weight: in1 weighs n_inputs, the last input 1 (in1 is the top priority)."""
    return {f"gpu{i}": n_inputs + 1 - i for i in range(1, n_inputs + 1)}


def incast_workload(n_inputs: int, packets: int, packet_bytes: int) -> Workload:
    """gpu1..gpuN each send ``packets`` packets to gpu0 (transfer i-1 is from gpu i)."""
    return Workload("arbitration-lab", tuple(
        Transfer(i - 1, f"gpu{i}", "gpu0", packets * packet_bytes, tag=f"in{i}") for i in range(1, n_inputs + 1)))


def arbitration_lab(n_inputs: int = 4, arbiters: Sequence[str] = ARBITER_ORDER, generation: str = "nvlink5",
                    packets_per_input: int = 2000, catalog: Catalog | None = None) -> list[dict]:
    """One row per arbiter: each input's share and rate, Jain index, starved inputs (GB = 1e9 B)."""
    if n_inputs < 2:
        raise InputError(f"need at least 2 inputs, got {n_inputs}", field="inputs")
    for name in arbiters:
        if name not in DESIGNS_BY_NAME:
            raise InputError(f"unknown arbiter {name!r}; known: {', '.join(sorted(DESIGNS_BY_NAME))}",
                             field="arbiters")
    catalog = catalog or load_catalog()
    link = catalog_link(generation, DEFAULT_CABLE_M, catalog=catalog)
    fabric = synthetic.star_links([link.latency_s] * (n_inputs + 1), rate_Bps=link.rate_Bps,
                                  switch_latency_s=switch_latency_s(generation, catalog), credit=link.credit,
                                  generation=link.generation)
    workload = incast_workload(n_inputs, packets_per_input, link.packet_bytes)
    w = weights(n_inputs)
    rows = []
    for name in arbiters:
        config = PacketConfig(packet_bytes=link.packet_bytes, arbiter=name,
                              arbiter_weights={"sw0": w} if name in WEIGHTED else {})
        log = DeliveryLog()
        result = run_packet(fabric, workload, config, log)
        t_s, tid, nbytes = log.arrays()
        start, end = float(t_s[0]), float(result.finish_s.min())
        rates = [rate_in_window_Bps(t_s[tid == i], nbytes[tid == i], start, end) for i in range(n_inputs)]
        total = sum(rates)
        shares = [r / total for r in rates]
        inputs = [{"input": f"in{i + 1}", "weight": w[f"gpu{i + 1}"] if name in WEIGHTED else 1,
                   "share": s, "GBps": r / 1e9} for i, (s, r) in enumerate(zip(shares, rates))]
        rows.append({
            "arbiter": name, "inputs": inputs, "jain": jain_index(shares),
            "starved": [x["input"] for x in inputs if x["share"] < STARVED_SHARE],
            "output_GBps": total / 1e9, "utilization_pct": 100.0 * total / link.rate_Bps,
            "line_GBps": link.rate_Bps / 1e9, "window_us": (end - start) * 1e6,
        })
    return rows


def _shares(row: dict) -> str:
    return "/".join(f"{100 * x['share']:.1f}" for x in row["inputs"]) + " %"


def explain_arbitration(rows: Sequence[dict]) -> str:
    """Sentences computed from the rows: who is fair, who starves, whether weights are followed."""
    by = {r["arbiter"]: r for r in rows}
    out = []
    fair = [r for r in rows if r["arbiter"] not in WEIGHTED]
    if fair:
        spread = max(max(x["share"] for x in r["inputs"]) - min(x["share"] for x in r["inputs"]) for r in fair)
        names = ", ".join(r["arbiter"] for r in fair)
        out.append(f"{names} give the {len(fair[0]['inputs'])} inputs equal shares "
                   f"(largest spread {100 * spread:.2f} points, Jain >= {min(r['jain'] for r in fair):.4f}).")
    if "fixed_priority" in by:
        r = by["fixed_priority"]
        top = max(r["inputs"], key=lambda x: x["share"])
        starved = ", ".join(r["starved"]) or "nobody"
        out.append(f"Fixed priority gives {top['input']} {100 * top['share']:.1f} % and starves {starved} "
                   f"(Jain {r['jain']:.2f}) while the output stays {r['utilization_pct']:.0f} % busy: "
                   f"full throughput, no fairness.")
    if "weighted_rr" in by:
        r = by["weighted_rr"]
        total_w = sum(x["weight"] for x in r["inputs"])
        worst = max(abs(x["share"] - x["weight"] / total_w) for x in r["inputs"])
        out.append(f"Weighted round-robin shares {_shares(r)} follow weights "
                   f"{'/'.join(str(x['weight']) for x in r['inputs'])} within {100 * worst:.2f} points.")
    return " ".join(out)
