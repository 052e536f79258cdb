"""Collective results laid out as nccl-tests prints them (size, count, type, time, algbw, busbw).

The data type is nccl-tests' default, float (4 B), unless given (``-d half``): it sets the count
column (size / type bytes); what moves over the wire is the size in bytes either way."""

from __future__ import annotations

from typing import Mapping, Sequence

from rich.table import Table

from simulator.metrics.collective_stats import element_count
from simulator.workloads.traces.nccl_tests_log import REDUCING_OPS, ROOTED_OPS


def how(row: Mapping) -> str:
    """What produced a row: ``algorithm/protocol/channels ch/engine`` (e.g. ``ring/Simple/24ch/flow``)."""
    parts = [str(row.get("algo") or "-"), str(row.get("protocol") or "-")]
    if row.get("channels"):
        parts.append(f"{row['channels']}ch")
    parts.append(str(row.get("engine") or "-"))
    return "/".join(parts)


NOT_CHECKED = ("#wrong is always 0: the simulator moves no data, so nothing can be wrong "
               "(nccl-tests counts mismatched elements)")
"""Legend of the #wrong column."""


def redop(op: str) -> str:
    """nccl-tests' redop column: ``sum`` for reductions, ``none`` otherwise."""
    return "sum" if op in REDUCING_OPS else "none"


def root_of(op: str, root: int) -> int:
    """nccl-tests' root column: the root rank for rooted ops, -1 otherwise."""
    return root if op in ROOTED_OPS else -1


def avg_busbw(rows: Sequence[Mapping]) -> float:
    """nccl-tests' ``# Avg bus bandwidth``: the mean busbw over the sizes (GB/s)."""
    return sum(r["busbw_GBps"] for r in rows) / len(rows) if rows else 0.0


def nccl_text(op: str, n_gpus: int, rows: Sequence[Mapping], dtype: str = "float", root: int = 0) -> str:
    """Plain-text table in nccl-tests' column layout (for logs and diffs), plus what produced each row."""
    lines = [
        f"# {op} on {n_gpus} GPUs; algbw and busbw in GB/s (1 GB = 1e9 B), time in us; {NOT_CHECKED}",
        f"#{'size':>12} {'count':>12} {'type':>8} {'redop':>6} {'root':>5} {'time':>10} {'algbw':>8} "
        f"{'busbw':>8} {'#wrong':>6}  algo/proto/channels/engine",
        f"#{'(B)':>12} {'(elements)':>12} {'':>8} {'':>6} {'':>5} {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8} {'':>6}",
    ]
    for row in rows:
        lines.append(f" {row['bytes']:>12} {element_count(op, row['bytes'], n_gpus, dtype):>12} {dtype:>8} "
                     f"{redop(op):>6} {root_of(op, root):>5} {row['time_us']:>10.2f} {row['algbw_GBps']:>8.2f} "
                     f"{row['busbw_GBps']:>8.2f} {0:>6}  {how(row)}")
    lines.append(f"# Avg bus bandwidth    : {avg_busbw(rows):.2f}")
    return "\n".join(lines)


def nccl_table(op: str, n_gpus: int, rows: Sequence[Mapping], title: str = "", dtype: str = "float",
               root: int = 0) -> Table:
    """Rich table with the same columns as :func:`nccl_text`; the caption holds the average busbw."""
    table = Table(title=title or f"{op} on {n_gpus} GPUs", title_justify="left",
                  caption=f"Avg bus bandwidth: {avg_busbw(rows):.2f} GB/s. {NOT_CHECKED}.", caption_justify="left")
    for name in ("size (B)", "count (elements)", "type", "redop", "root", "time (us)", "algbw (GB/s)",
                 "busbw (GB/s)", "#wrong"):
        table.add_column(name, justify="right")
    table.add_column("algo/proto/ch/engine", justify="left")
    for row in rows:
        table.add_row(f"{row['bytes']:,}", f"{element_count(op, row['bytes'], n_gpus, dtype):,}", dtype, redop(op),
                      str(root_of(op, root)), f"{row['time_us']:,.2f}", f"{row['algbw_GBps']:,.2f}",
                      f"{row['busbw_GBps']:,.2f}", "0", how(row))
    return table
