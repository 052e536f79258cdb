"""Healthy vs degraded: the same sweep on the fabric without and with its faults, side by side.

``bench`` prints this table under its nccl-tests table when faults are given (``--fault`` or a
topology's ``faults:``); scenarios compare a healthy and a degraded topology file as two systems.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from rich import box
from rich.table import Table

from simulator.reports.sweeps import SweepSpec, sweep
from simulator.topology.fabric import Fabric


def healthy_vs_degraded(healthy: Fabric, degraded: Fabric, spec: SweepSpec, rows: Sequence[dict]) -> list[dict]:
    """One row per size: the degraded row (already run) beside the same sweep on ``healthy``.

    The healthy run uses the degraded run's engine, so the two columns differ only by the faults."""
    engine = rows[0]["engine"] if rows else spec.engine
    base = sweep(healthy, replace(spec, engine=engine))
    out = []
    for h, d in zip(base, rows):
        out.append({"bytes": d["bytes"], "healthy_busbw_GBps": h["busbw_GBps"], "degraded_busbw_GBps": d["busbw_GBps"],
                    "ratio": d["busbw_GBps"] / h["busbw_GBps"] if h["busbw_GBps"] else float("nan"),
                    "healthy_time_us": h["time_us"], "degraded_time_us": d["time_us"],
                    "healthy_how": _how(h), "degraded_how": _how(d)})
    return out


def _how(row: dict) -> str:
    parts = [row.get("algo"), row.get("protocol")] + ([f"{row['channels']}ch"] if row.get("channels") else [])
    return "/".join(str(p) for p in parts if p)


def fault_table(degraded: Fabric, compared: Sequence[dict]) -> Table:
    """The comparison as a rich table; the title lists the faults."""
    table = Table(title=f"{degraded.name}: healthy vs degraded ({'; '.join(degraded.faults)}); busbw in GB/s "
                        f"(1 GB = 1e9 B), time in us",
                  title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    for i, col in enumerate(("size (B)", "busbw healthy (GB/s)", "busbw degraded (GB/s)", "degraded/healthy",
                             "time healthy (us)", "time degraded (us)", "how healthy", "how degraded")):
        table.add_column(col, justify="right" if i < 6 else "left", overflow="fold")
    for r in compared:
        table.add_row(f"{r['bytes']:,}", f"{r['healthy_busbw_GBps']:.2f}", f"{r['degraded_busbw_GBps']:.2f}",
                      f"{r['ratio']:.3f}", f"{r['healthy_time_us']:.2f}", f"{r['degraded_time_us']:.2f}",
                      r["healthy_how"], r["degraded_how"])
    return table
