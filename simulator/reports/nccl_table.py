"""Collective results laid out as nccl-tests prints them (size, count, type, time, algbw, busbw).

The data type is nccl-tests' default, float (4 B)."""

from __future__ import annotations

from typing import Mapping, Sequence

from rich.table import Table

from simulator.metrics.collective_stats import element_count


def how(row: Mapping) -> str:
    """What produced a row: ``algorithm/protocol/channels ch/engine`` (e.g. ``ring/Simple/24ch/flow``)."""
    parts = [str(row.get("algo") or "-"), str(row.get("protocol") or "-")]
    if row.get("channels"):
        parts.append(f"{row['channels']}ch")
    parts.append(str(row.get("engine") or "-"))
    return "/".join(parts)


def nccl_text(op: str, n_gpus: int, rows: Sequence[Mapping]) -> str:
    """Plain-text table in nccl-tests' column layout (for logs and diffs), plus what produced each row."""
    lines = [
        f"# {op} on {n_gpus} GPUs; algbw and busbw in GB/s (1 GB = 1e9 B), time in us",
        f"#{'size':>12} {'count':>12} {'type':>6} {'time':>10} {'algbw':>8} {'busbw':>8}  algo/proto/channels/engine",
        f"#{'(B)':>12} {'(elements)':>12} {'':>6} {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8}",
    ]
    for row in rows:
        lines.append(f" {row['bytes']:>12} {element_count(op, row['bytes'], n_gpus):>12} {'float':>6} "
                     f"{row['time_us']:>10.2f} {row['algbw_GBps']:>8.2f} {row['busbw_GBps']:>8.2f}  {how(row)}")
    return "\n".join(lines)


def nccl_table(op: str, n_gpus: int, rows: Sequence[Mapping], title: str = "") -> Table:
    """Rich table with the same columns as :func:`nccl_text`."""
    table = Table(title=title or f"{op} on {n_gpus} GPUs", title_justify="left")
    for name in ("size (B)", "count (elements)", "type", "time (us)", "algbw (GB/s)", "busbw (GB/s)"):
        table.add_column(name, justify="right")
    table.add_column("algo/proto/ch/engine", justify="left")
    for row in rows:
        table.add_row(str(row["bytes"]), str(element_count(op, row["bytes"], n_gpus)), "float",
                      f"{row['time_us']:.2f}", f"{row['algbw_GBps']:.2f}", f"{row['busbw_GBps']:.2f}", how(row))
    return table
