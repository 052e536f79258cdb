"""Healthy vs degraded: the same sweep on the fabric without and with its faults (issue 12).

The rows are formatted by ``reports.fault_compare.fault_table``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from simulator.runner.sweeps import SweepSpec, sweep
from simulator.topology.fabric import Fabric


def healthy_vs_degraded(healthy: Fabric, degraded: Fabric, spec: SweepSpec, rows: Sequence[dict]) -> list[dict]:
    """One row per size: the degraded row (already run) beside the same sweep on ``healthy``.

    The healthy run uses the degraded run's engine, so the two columns differ only by the faults.
    With faults during the run, ``rerouted_B`` is the bytes in flight they moved to surviving routes
    (else None); ``time_lost_us`` is degraded minus healthy time either way."""
    engine = rows[0]["engine"] if rows else spec.engine
    base = sweep(healthy, replace(spec, engine=engine))
    out = []
    for h, d in zip(base, rows):
        out.append({"bytes": d["bytes"], "healthy_busbw_GBps": h["busbw_GBps"], "degraded_busbw_GBps": d["busbw_GBps"],
                    "ratio": d["busbw_GBps"] / h["busbw_GBps"] if h["busbw_GBps"] else float("nan"),
                    "healthy_time_us": h["time_us"], "degraded_time_us": d["time_us"],
                    "time_lost_us": d["time_us"] - h["time_us"], "rerouted_B": d.get("rerouted_B"),
                    "healthy": h, "degraded": d})
    return out
