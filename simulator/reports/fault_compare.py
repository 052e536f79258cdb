"""Healthy vs degraded as a table: the rows of ``runner.degraded.healthy_vs_degraded`` side by side.

``bench`` prints this table under its nccl-tests table when faults are given (``--fault`` or a
topology's ``faults:``); scenarios compare a healthy and a degraded topology file as two systems.
"""

from __future__ import annotations

from typing import Sequence

from rich import box
from rich.table import Table

from simulator.reports.nccl_table import how
from simulator.topology.fabric import Fabric


def fault_table(degraded: Fabric, compared: Sequence[dict]) -> Table:
    """The comparison as a rich table; the title lists the faults."""
    table = Table(title=f"{degraded.name}: healthy vs degraded ({'; '.join(degraded.faults)}); busbw in GB/s "
                        f"(1 GB = 1e9 B), time in us",
                  title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    timed = any(r.get("rerouted_B") is not None for r in compared)
    numbers = ("size (B)", "busbw healthy (GB/s)", "busbw degraded (GB/s)", "degraded/healthy",
               "time healthy (us)", "time degraded (us)", *(TIMED_COLUMNS if timed else ()))
    for col in numbers:
        table.add_column(col, justify="right", overflow="fold")
    for col in ("how healthy", "how degraded"):
        table.add_column(col, justify="left", overflow="fold")
    for r in compared:
        extra = (f"{r['time_lost_us']:.2f}", f"{r['rerouted_B']:,.0f}") if timed else ()
        table.add_row(f"{r['bytes']:,}", f"{r['healthy_busbw_GBps']:.2f}", f"{r['degraded_busbw_GBps']:.2f}",
                      f"{r['ratio']:.3f}", f"{r['healthy_time_us']:.2f}", f"{r['degraded_time_us']:.2f}",
                      *extra, how(r["healthy"]), how(r["degraded"]))
    return table


TIMED_COLUMNS = ("time lost (us)", "rerouted (B)")
"""Columns added when faults strike during the run: degraded minus healthy time, and the bytes in
flight the faults moved to surviving routes."""
