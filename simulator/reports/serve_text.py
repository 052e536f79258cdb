"""``fabricsim serve``'s table and headline: one row per system x deployment x rate.

One table per system; columns: offered rate, output tokens per second per GPU, TTFT and TPOT at
p50 and p99 (ms), the fraction of requests within both SLOs, and output tokens per second per kW
(GPUs, interconnect static power and transport energy together), throughputs and power measured
over the arrival window. The headline names each system's best deployment by the highest rate it
served within the SLOs, so the comparison the scenario is for reads in one sentence.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from rich.table import Table

from simulator.reports.numbers import number
from simulator.runner.serve import ServeOutcome

OPTIONAL = ("tok/s/kW", "TTFT p99 (ms)", "SLO met")
"""Columns that go first when a table cannot fit the terminal."""


def _rate(row: dict) -> str:
    return "trace" if row["rate_per_s"] is None else number(float(row["rate_per_s"]))


def _fraction(value: float) -> str:
    return "-" if value is None or value != value else f"{100 * value:.0f}%"


def serve_table(name: str, system: str, rows: Sequence[dict], slo: dict) -> Table:
    """The rows of one system."""
    said = ", ".join(f"{k.upper()} <= {slo[k]}" for k in ("ttft", "tpot") if slo.get(k))
    table = Table(title=f"{name}\n{system}" + (f" (SLO: {said})" if said else ""), title_justify="left",
                  title_style="bold")
    for col in ("deployment", "rate (req/s)", "tok/s/GPU", "TTFT p50 (ms)", "TTFT p99 (ms)",
                "TPOT p50 (ms)", "TPOT p99 (ms)", "SLO met", "tok/s/kW"):
        table.add_column(col, justify="left" if col == "deployment" else "right")
    for r in rows:
        if r["system"] != system:
            continue
        table.add_row(r["deployment"], _rate(r), number(r["output_tok_per_s_per_gpu"]),
                      number(r["ttft_p50_ms"]), number(r["ttft_p99_ms"]), number(r["tpot_p50_ms"]),
                      number(r["tpot_p99_ms"]), _fraction(r["slo_attainment"]),
                      number(r["output_tok_per_s_per_kW"]))
    return table


def systems_of(rows: Sequence[dict]) -> list[str]:
    return list(dict.fromkeys(r["system"] for r in rows))


ATTAINMENT = 0.9
"""A rate is served within the SLOs when this fraction of its requests meets them (DistServe's
goodput: the highest rate at 90% SLO attainment, Zhong et al., OSDI 2024)."""


def capacity(rows: Sequence[dict]) -> dict[tuple[str, str], dict | None]:
    """(system, deployment) -> the row of the highest rate run whose SLO attainment is at least
    ``ATTAINMENT`` (None when no rate was), or with no SLO the row of the highest rate."""
    out: dict[tuple[str, str], dict | None] = {}
    for r in rows:
        key = (r["system"], r["deployment"])
        out.setdefault(key, None)
        a = r["slo_attainment"]
        ok = a != a or a >= ATTAINMENT
        best = out[key]
        if ok and r["rate_per_s"] is not None and (best is None or r["rate_per_s"] > best["rate_per_s"]):
            out[key] = r
    return out


def headline(rows: Sequence[dict]) -> str:
    """Each system's best deployment by the highest rate it served within the SLOs (``capacity``;
    ties: tokens/s per GPU there), with its tokens/s per GPU and per kW there, and how the systems
    compare; empty without rows or rates."""
    if not rows:
        return ""
    if all(r["rate_per_s"] is None for r in rows):
        return _trace_headline(rows)
    slo = not all(r["slo_attainment"] != r["slo_attainment"] for r in rows)
    cap = capacity(rows)
    systems = list(dict.fromkeys(r["system"] for r in rows))
    parts, served, capped = [], {}, {}
    for system in systems:
        mine = [r for (sys_, _), r in cap.items() if sys_ == system and r is not None]
        if not mine:
            parts.append(f"{system} meets them at none of the rates run")
            continue
        best = max(mine, key=lambda r: (r["rate_per_s"], r["output_tok_per_s_per_gpu"]))
        served[system] = best["rate_per_s"]
        capped[system] = best["rate_per_s"] >= max(r["rate_per_s"] for r in rows
                                                   if r["system"] == system and r["rate_per_s"] is not None)
        more = " (the highest rate run: it may serve more)" if capped[system] else ""
        parts.append(f"{system} {number(float(best['rate_per_s']))} req/s{more} with {best['deployment']} "
                     f"({number(best['output_tok_per_s_per_gpu'])} tok/s per GPU, TPOT p50 "
                     f"{number(best['tpot_p50_ms'])} ms, {number(best['output_tok_per_s_per_kW'])} tok/s per kW)")
    what = (f"Highest rate run with {ATTAINMENT:.0%} of requests within the SLOs" if slo
            else "Highest rate run")
    text = f"{what}: " + "; ".join(parts) + "."
    if len(served) >= 2:
        (a, ra), (b, rb) = list(served.items())[:2]
        if ra < rb:
            (a, ra), (b, rb) = (b, rb), (a, ra)
        if rb and not capped[b]:
            text += f" {a} serves {'at least ' if capped[a] else ''}{ra / rb:.2g}x the rate of {b}."
    return text


def _trace_headline(rows: Sequence[dict]) -> str:
    """A replayed trace has one load: each system's best deployment by SLO attainment (then tokens/s
    per GPU), with its attainment, TTFT p99 and TPOT p50."""
    parts = []
    for system in systems_of(rows):
        mine = [r for r in rows if r["system"] == system]
        best = max(mine, key=lambda r: (r["slo_attainment"] if r["slo_attainment"] == r["slo_attainment"] else -1.0,
                                        r["output_tok_per_s_per_gpu"]))
        met = "" if best["slo_attainment"] != best["slo_attainment"] else f"{_fraction(best['slo_attainment'])} within the SLOs, "
        parts.append(f"{system}, {best['deployment']}: {met}{number(best['output_tok_per_s_per_gpu'])} tok/s per GPU, "
                     f"TTFT p99 {number(best['ttft_p99_ms'])} ms, TPOT p50 {number(best['tpot_p50_ms'])} ms")
    return "On the trace: " + "; ".join(parts) + "."


def pools_lines(systems: Sequence[dict], rows: Sequence[dict] = ()) -> list[str]:
    """One line per system x deployment x pool: its instances, GPU, KV cache and collectives; then,
    per system x deployment, the busiest link at the highest rate run."""
    out = []
    for s in systems:
        for role, f in s["pools"].items():
            kv = f["kv_cache"]
            what = "" if role == "serve" else f" {role}"
            ep = f", ep {f['ep']}" if f["ep"] > 1 else ""
            out.append(f"{s['system']} · {s['deployment']}{what}: {f['instances']} x tp {f['tp']}{ep} on "
                       f"{f['gpu']}, KV cache {kv['kv_cache_GB']:.1f} GB per GPU ({number(kv['tokens'])} tokens; "
                       f"weights {kv['weights_GB']:.1f} GB)"
                       + "".join(f", {name}: {f[key]}" for key, name in (("all_reduce", "all-reduce"),
                                                                        ("alltoall", "all-to-all")) if key in f))
        mine = [r for r in rows if r["system"] == s["system"] and r["deployment"] == s["deployment"]
                and "busiest_link" in r]
        if mine:
            top = max(mine, key=lambda r: r["rate_per_s"] or 0.0)
            kv = f"; KV transfers: {top['busiest_link_kv']}" if "busiest_link_kv" in top else ""
            at = "on the trace" if top["rate_per_s"] is None else f"at {_rate(top)} req/s"
            out.append(f"  busiest link {at}: {top['busiest_link']}{kv}")
    return out


def headlined(outcome: ServeOutcome) -> ServeOutcome:
    """The outcome with its headline (what ``fabricsim serve`` prints under its table)."""
    return replace(outcome, headline=headline(outcome.rows))
