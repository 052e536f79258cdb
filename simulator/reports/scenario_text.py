"""Print scenario and comparison results: one table per workload, a ratio column, a summary.

The summary paragraph is computed from the rows (never canned): for each workload it says which
system is faster, by how much (range over sizes), and which link class was busiest.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Sequence

from rich.console import Console
from rich.table import Table

from simulator.reports.fit import fit
from simulator.reports.nccl_table import how
from simulator.reports.numbers import number
from simulator.runner.scenario_run import SystemResult
from simulator.units import format_bytes


def _by_workload(systems: Sequence[SystemResult]) -> dict[str, dict[str, list[dict]]]:
    """workload name -> system name -> rows (file order kept)."""
    out: dict[str, dict[str, list[dict]]] = {}
    for system in systems:
        for row in system.rows:
            out.setdefault(row["workload"], {}).setdefault(system.name, []).append(row)
    return out


def workload_table(name: str, per_system: dict[str, list[dict]], reference: str) -> Table:
    """One workload on every system: a size sweep (collectives, copies) or a metric list."""
    sample = next(iter(per_system.values()))[0]
    if "busbw_GBps" in sample:
        return _sweep_table(name, sample["kind"], per_system, reference)
    return _metric_table(name, sample["kind"], per_system, reference)


DROP_WHEN_NARROW = ("p99 pkt (us)", "busiest link", "avg W", "algbw (GB/s)", "energy (J)", "algo/proto/ch/engine", "GPUs")
"""Columns a narrow terminal loses first (busbw, time and the ratio always stay)."""


def _sweep_table(name: str, kind: str, per_system: dict[str, list[dict]], reference: str) -> Table:
    """Rows by size then system; ``x ref`` = time / time of the reference system at that size."""
    table = Table(title=f"{name} ({kind})", title_justify="left", title_style="bold")
    # p99 packet latency exists for packet-engine runs only: no column of dashes for flow runs
    p99 = any(r.get("p99_latency_us") is not None for rows in per_system.values() for r in rows)
    for col in ("size", "system", "GPUs", "time (us)", "x ref", "algbw (GB/s)", "busbw (GB/s)", "p99 pkt (us)",
                "algo/proto/ch/engine", "busiest link", "energy (J)", "avg W"):
        if col != "p99 pkt (us)" or p99:
            table.add_column(col, justify="left" if col in ("system", "algo/proto/ch/engine", "busiest link") else "right")
    ref_time = {r["bytes"]: r["time_us"] for r in per_system.get(reference, [])}
    sizes = sorted({r["bytes"] for rows in per_system.values() for r in rows})
    for size in sizes:
        for system, rows in per_system.items():
            for r in (r for r in rows if r["bytes"] == size):
                ratio = r["time_us"] / ref_time[size] if ref_time.get(size) else None
                table.add_row(format_bytes(size), system, number(r.get("gpus")), number(r["time_us"]), number(ratio),
                              number(r["algbw_GBps"]), number(r["busbw_GBps"]),
                              *([number(r.get("p99_latency_us"))] if p99 else []), how(r),
                              number(r.get("busiest_link")), number(r.get("energy_J")), number(r.get("avg_power_W")))
    return table


_METRICS = (("time_us", "time (us)"), ("alone_us", "time alone on the fabric (us)"),
            ("slowdown", "slowdown (together / alone)"), ("gpus", "GPUs"), ("groups", "racks/servers used"),
            ("shared_links", "links shared with other jobs"), ("shared_example", "shared links, e.g."),
            ("compute_us", "compute on critical path (us)"),
            ("communication_us", "exposed communication (us)"), ("bottleneck", "bottleneck"),
            ("tokens_per_s", "tokens per second (this TP group)"),
            ("attention_per_layer_us", "attention per layer (us)"), ("gemm_per_layer_us", "GEMMs per layer (us)"),
            ("other_per_layer_us", "other kernels per layer (us)"), ("kernels_per_layer", "kernels per layer"),
            ("layer_kernels", "layer kernel sequence"),
            ("step_bound", "what bounds the kernels"),
            ("attention_bound", "attention kernel bound"), ("attention_kernel", "attention kernel"),
            ("sm_occupancy", "attention SM occupancy"), ("launch", "kernel launches"),
            ("bytes", "bytes sent GPU to GPU (all transfers)"), ("algbw_GBps", "achieved GB/s"), ("ideal_time_us", "ideal time (us)"),
            ("allreduce_algo", "all-reduce algorithm"), ("link_kinds", "link kinds on path"),
            ("overlapped", "comm hidden under compute"), ("busiest_link", "busiest link"),
            ("engine", "engine"), ("gpu_J", "GPU energy (J)"), ("transport_J", "transport energy (J)"),
            ("static_J", "static fabric energy (J)"), ("energy_J", "interconnect energy (J)"),
            ("J_per_token", "energy per token (J)"), ("tokens_per_s_per_kW", "tokens/s per kW"),
            ("avg_power_W", "average interconnect power (W)"),
            ("transport_pJ_per_byte", "transport pJ per byte"), ("ranks", "trace ranks"),
            ("skipped", "skipped trace nodes"))


STEP_KINDS = frozenset({"decode", "prefill"})
"""Items whose rows count the GPUs' energy too, and whose ``bytes`` are all-reduce payload."""

_BYTES_LABEL = {"decode": "all-reduce payload (B, sum of message sizes)",
                "prefill": "all-reduce payload (B, sum of message sizes)", "job": "message size (B)"}
"""What the row key ``bytes`` holds, by item kind (docs/reference/glossary.md, "bytes"); any
other kind (Chakra trace, ring attention, KV transfer) counts every GPU-to-GPU transfer once."""
BYTES_SENT = "bytes sent GPU to GPU (all transfers)"


def _label(key: str, label: str, kind: str) -> str:
    """The metric row's label for an item of ``kind``: one label, one meaning, so ``bytes``,
    ``energy_J``, ``avg_power_W`` and ``static_J`` say what they count for this kind (decode and
    prefill rows count the GPUs too; docs/reference/glossary.md)."""
    step = kind in STEP_KINDS
    if key == "bytes":
        return _BYTES_LABEL.get(kind, BYTES_SENT)
    if key == "energy_J":
        return "energy, GPUs + interconnect (J)" if step else "interconnect energy (J)"
    if key == "avg_power_W":
        return "average power, GPUs + interconnect (W)" if step else "average interconnect power (W)"
    if key == "static_J":
        return "static fabric energy (J, this group's share)" if step else "static fabric energy (J)"
    return label


def _metric_table(name: str, kind: str, per_system: dict[str, list[dict]], reference: str) -> Table:
    """One row per metric, one column per system (attention items: a single run each)."""
    table = Table(title=f"{name} ({kind})", title_justify="left", title_style="bold")
    table.add_column("metric")
    systems = list(per_system)
    for system in systems:
        table.add_column(system, justify="right")
    rows = {system: per_system[system][0] for system in systems}
    for key, label in _METRICS:
        if any(key in r for r in rows.values()):
            table.add_row(_label(key, label, kind), *[number(rows[s].get(key)) for s in systems])
    if len(systems) > 1 and reference in rows:
        ref = rows[reference]["time_us"]
        table.add_row("x ref (time)", *[number(rows[s]["time_us"] / ref if ref else None) for s in systems])
    return table


def power_table(systems: Sequence[SystemResult]) -> Table:
    """Static interconnect power by component kind, the parts counted, and the energy of the whole
    scenario: one row per figure (its unit in its name), one column per system, so it fits any
    terminal however many component kinds there are."""
    kinds = sorted({k for s in systems for k in s.power_W if k != "total"})
    counts = sorted({k for s in systems for k in s.inventory})
    table = Table(title="Static interconnect power, parts and scenario energy", title_justify="left",
                  title_style="bold")
    table.add_column("figure")
    for s in systems:
        table.add_column(s.name, justify="right")
    for k in kinds:
        table.add_row(f"{k.replace('_', ' ')} (W)", *[number(float(s.power_W.get(k, 0.0))) for s in systems])
    table.add_row("total static power (W)", *[number(float(s.power_W.get("total", 0.0))) for s in systems])
    for k in counts:
        table.add_row(k, *[number(int(s.inventory.get(k, 0))) for s in systems])
    table.add_row("scenario energy (J)", *[number(s.as_dict()["energy_J"]) for s in systems])
    return table


SAME_SPEED = 0.05
"""Time ratios within 1 +- this are reported as "about as fast", never as "faster by 1x"."""


def gpu_count_warning(systems: Sequence[SystemResult]) -> str:
    """A warning when one workload ran on different GPU counts on different systems (empty if not)."""
    notes = []
    for workload, per_system in _by_workload(systems).items():
        counts = {system: rows[0].get("gpus") for system, rows in per_system.items()}
        if len({c for c in counts.values() if c is not None}) > 1:
            listed = ", ".join(f"{n} GPUs on {s}" for s, n in counts.items())
            notes.append(f"{workload} runs on different GPU counts ({listed}): the ratio compares "
                         f"systems of different sizes; give --gpus N to compare like with like.")
    return " ".join(notes)


def _side(ratio: float) -> int:
    """+1: the first system is faster (the other takes longer), -1: the other is, 0: about as fast."""
    return 1 if ratio > 1 + SAME_SPEED else -1 if ratio < 1 - SAME_SPEED else 0


def _span(values: Sequence[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.2g}x" if hi - lo < 0.05 * hi else f"{lo:.2g}x to {hi:.2g}x"


def _verdict(reference: str, other: str, sizes: Sequence[int], ratios: Sequence[float]) -> str:
    """Who is faster over which sizes (issue 27, item 2: the winner per size range, never a span
    that crosses 1x): consecutive sizes with the same winner form one range."""
    runs: list[tuple[int, list[int], list[float]]] = []
    for n, r in zip(sizes, ratios):
        side = _side(r)
        if runs and runs[-1][0] == side:
            runs[-1][1].append(n)
            runs[-1][2].append(r)
        else:
            runs.append((side, [n], [r]))
    parts = []
    for side, ns, rs in runs:
        where = "" if len(runs) == 1 else (f" at {format_bytes(ns[0])}" if len(ns) == 1 else
                                           f" from {format_bytes(ns[0])} to {format_bytes(ns[-1])}")
        if side == 0:
            parts.append(f"{reference} and {other} are about as fast{where} (within {SAME_SPEED:.0%})")
        elif side > 0:
            parts.append(f"{reference} is faster than {other}{where} by {_span(rs)}")
        else:
            parts.append(f"{other} is faster than {reference}{where} by {_span([1 / r for r in rs])}")
    return "; ".join(parts)


def comparison_summary(systems: Sequence[SystemResult]) -> str:
    """One paragraph: per workload and per other system, who wins against the first system, by
    how much (range over sizes), and the busiest link of each side."""
    if len(systems) < 2:
        return ""
    reference = systems[0].name
    sentences = []
    for workload, per_system in _by_workload(systems).items():
        times: dict[str, dict[int, float]] = defaultdict(dict)
        links: dict[str, str] = {}
        for system, rows in per_system.items():
            for r in rows:
                times[system][r["bytes"]] = r["time_us"]
            links[system] = rows[-1].get("busiest_link") or "none"
        for other in (s.name for s in systems[1:]):
            common = sorted(set(times[reference]) & set(times[other]))
            ratios = [times[other][n] / times[reference][n] for n in common if times[reference][n] > 0]
            if not ratios:
                continue
            sizes = [n for n in common if times[reference][n] > 0]
            verdict = _verdict(reference, other, sizes, ratios)
            mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            winner, loser = (reference, other) if mean >= 1 else (other, reference)
            sentences.append(f"{workload}: {verdict} (busiest link on "
                             f"{loser}: {links[loser]}; on {winner}: {links[winner]}).")
    return " ".join(sentences)


def print_scenario(model, systems: Sequence[SystemResult], console: Console) -> None:
    """Tables per workload, power table, and (two or more systems) the comparison paragraph."""
    console.print(f"[bold]{model.name}[/bold]" + (f" — {model.description}" if model.description else ""))
    console.print("Times in us of simulated time; bandwidths in GB/s (1 GB = 1e9 B) per GPU, one "
                  "direction as nccl-tests reports them; 'x ref' = time / time on the first system.")
    reference = systems[0].name
    for name, per_system in _by_workload(systems).items():
        console.print(fit(workload_table(name, per_system, reference), console.width, optional=DROP_WHEN_NARROW))
    console.print(fit(power_table(systems), console.width))
    warning = gpu_count_warning(systems)
    if warning:
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    summary = comparison_summary(systems)
    if summary:
        console.print("[bold]Summary.[/bold] " + summary)


def scenario_plot(systems: Sequence[SystemResult], path: str) -> None:
    """busbw vs size for every collective workload (one line per system and workload); else where
    each decode/prefill step's time goes; else the power breakdown."""
    from simulator.reports.plots import busbw_vs_size, power_breakdown

    series: dict[str, list[tuple[int, float]]] = {}
    for s in systems:
        for r in s.rows:
            if "busbw_GBps" in r:
                series.setdefault(f"{s.name}: {r['workload']}", []).append((r["bytes"], r["busbw_GBps"]))
    steps = [(f"{s.name}: {r['workload']}", r) for s in systems for r in s.rows
             if r.get("layer_compute_us") and r.get("compute_us") is not None]
    if series:
        busbw_vs_size(series, path=path)
    elif steps:
        from simulator.reports.plots.step import step_breakdown

        step_breakdown(steps, path)
    else:
        power_breakdown({s.name: s.energy() for s in systems}, path)
