"""What serving delivered: one immutable record per request and the summary users quote.

Definitions (those of vLLM's ``benchmarks/benchmark_serving.py`` and DistServe's goodput,
Zhong et al., OSDI 2024):

- TTFT, time to first token: first_token_s - arrival_s (queueing included);
- TPOT, time per output token after the first (inter-token latency averaged over a request):
  (finish_s - first_token_s) / (output_tokens - 1), for requests of at least 2 output tokens;
- end-to-end latency: finish_s - arrival_s;
- throughput: requests and output tokens per second of the span from the first arrival to the last
  finish;
- goodput: requests per second of that span that met both SLOs (TTFT <= ttft_slo_s and, for
  requests of 2 tokens or more, TPOT <= tpot_slo_s);
- mean requests in system: the time average, over the span (or a window), of the number of requests
  that have arrived and not finished; with the arrival rate and the mean latency it obeys Little's
  law, L = lambda W.

Measured over the arrival window (``summarize(..., window_end_s=...)``: from the first arrival to
the last): throughput is what the engine delivered while requests kept coming, the steady state a
load test reports, not diluted by the drain after the last arrival, where the longest answers run
alone (a 60 s run of lognormal lengths can drain for another 60 s). A request's output tokens are
counted where they were generated: its first at ``first_token_s``, the rest evenly over
``(first_token_s, finish_s]`` (its mean TPOT; exact for a steady batch).

Percentiles are ``numpy.percentile`` (linear interpolation) at 50, 90 and 99.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simulator.errors import InputError

PERCENTILES = (50, 90, 99)
"""The percentiles every latency is summarized at (the issue's p50/p90/p99)."""


@dataclass(frozen=True, slots=True)
class RequestOutcome:
    """One request served."""

    request_id: int
    arrival_s: float
    first_token_s: float
    """End of the iteration that sampled its first token."""
    finish_s: float
    """End of the iteration that sampled its last token."""
    prompt_tokens: int
    output_tokens: int
    preemptions: int
    """Times it was preempted (and its KV recomputed)."""
    cached_prompt_tokens: int
    """Prompt tokens found in the prefix cache (or arrived as remote KV) at its first admission."""
    admitted_s: float = math.nan
    """Start of the first iteration that computed any of its tokens."""

    @property
    def ttft_s(self) -> float:
        """Time to first token."""
        return self.first_token_s - self.arrival_s

    @property
    def latency_s(self) -> float:
        """End-to-end latency."""
        return self.finish_s - self.arrival_s

    @property
    def tpot_s(self) -> float:
        """Mean time per output token after the first; NaN for a request of one output token."""
        if self.output_tokens < 2:
            return math.nan
        return (self.finish_s - self.first_token_s) / (self.output_tokens - 1)


@dataclass(frozen=True, slots=True)
class ServingRun:
    """Every request's outcome (indexed by request_id) and what the scheduler counted."""

    outcomes: tuple[RequestOutcome, ...]
    iterations: int
    preemptions: int
    busy_s: float
    """Sum of the iterations' durations (the engine's busy time)."""


@dataclass(frozen=True, slots=True)
class Percentiles:
    """p50, p90, p99 and the mean of one latency, in seconds."""

    p50_s: float
    p90_s: float
    p99_s: float
    mean_s: float

    @classmethod
    def of(cls, values: np.ndarray) -> "Percentiles":
        if values.size == 0:
            return cls(math.nan, math.nan, math.nan, math.nan)
        p50, p90, p99 = np.percentile(values, PERCENTILES)
        return cls(float(p50), float(p90), float(p99), float(values.mean()))


@dataclass(frozen=True, slots=True)
class ServingSummary:
    """The summary of a run (module docstring for each definition)."""

    requests: int
    span_s: float
    ttft: Percentiles
    tpot: Percentiles
    latency: Percentiles
    requests_per_s: float
    output_tokens_per_s: float
    goodput_requests_per_s: float
    """NaN when no SLO was given."""
    slo_attainment: float
    """Fraction of requests meeting the SLOs; NaN when no SLO was given."""
    mean_in_system: float
    window_s: float = math.nan
    """Length of the window the throughputs are measured over (the span without a window)."""
    output_tokens: int = 0
    """Every request's output tokens."""


def mean_in_system(outcomes: tuple[RequestOutcome, ...] | list[RequestOutcome], start_s: float | None = None,
                   end_s: float | None = None) -> float:
    """Time-average number of requests arrived and not finished over [start_s, end_s] (default: the
    first arrival to the last finish): the integral of each request's presence clipped to the window,
    over the window's length."""
    arrivals = np.fromiter((o.arrival_s for o in outcomes), float, len(outcomes))
    finishes = np.fromiter((o.finish_s for o in outcomes), float, len(outcomes))
    lo = float(arrivals.min()) if start_s is None else start_s
    hi = float(finishes.max()) if end_s is None else end_s
    if not hi > lo:
        raise InputError(f"the window [{lo}, {hi}] s is empty", field="end_s")
    present = np.clip(np.minimum(finishes, hi) - np.maximum(arrivals, lo), 0.0, None)
    return float(present.sum() / (hi - lo))


def output_tokens_between(outcomes: tuple[RequestOutcome, ...] | list[RequestOutcome], lo: float, hi: float) -> float:
    """Output tokens generated in [lo, hi): each request's first at its first token, the others
    evenly over (first_token_s, finish_s] (module docstring)."""
    first = np.array([o.first_token_s for o in outcomes])
    finish = np.array([o.finish_s for o in outcomes])
    rest = np.array([o.output_tokens - 1 for o in outcomes], dtype=float)
    ones = ((first >= lo) & (first < hi)).sum()
    length = finish - first
    overlap = np.clip(np.minimum(finish, hi) - np.maximum(first, lo), 0.0, None)
    frac = np.divide(overlap, length, out=np.zeros_like(overlap), where=length > 0)
    return float(ones + (rest * frac).sum())


def summarize(run: ServingRun, ttft_slo_s: float | None = None, tpot_slo_s: float | None = None,
              window_end_s: float | None = None) -> ServingSummary:
    """The summary of ``run``; goodput counts requests within both SLOs given (either may be None).
    With ``window_end_s`` (after the first arrival) throughputs, goodput and the mean in system are
    measured over [first arrival, window_end_s] (module docstring); else over the span."""
    for name, slo in (("ttft_slo_s", ttft_slo_s), ("tpot_slo_s", tpot_slo_s)):
        if slo is not None and not (math.isfinite(slo) and slo > 0):
            raise InputError(f"{name} {slo!r} must be a time in seconds > 0", field=name)
    outs = run.outcomes
    if not outs:
        raise InputError("no requests were served; a summary needs at least one", field="requests")
    arrival = np.array([o.arrival_s for o in outs])
    first = np.array([o.first_token_s for o in outs])
    finish = np.array([o.finish_s for o in outs])
    out_tokens = np.array([o.output_tokens for o in outs])
    ttft = first - arrival
    many = out_tokens >= 2
    tpot = (finish[many] - first[many]) / (out_tokens[many] - 1)
    start = float(arrival.min())
    span = float(finish.max() - start)
    windowed = window_end_s is not None and window_end_s > start
    end = float(window_end_s) if windowed else start + span  # type: ignore[arg-type]
    window = end - start
    done = finish < end if windowed else np.ones(len(outs), dtype=bool)
    if ttft_slo_s is None and tpot_slo_s is None:
        goodput = attained = math.nan
    else:
        ok = np.ones(len(outs), dtype=bool)
        if ttft_slo_s is not None:
            ok &= ttft <= ttft_slo_s
        if tpot_slo_s is not None:
            tpot_all = np.zeros(len(outs))
            tpot_all[many] = tpot
            ok &= tpot_all <= tpot_slo_s
        attained = float(ok.mean())
        goodput = float((ok & done).sum() / window) if window > 0 else math.nan
    if windowed:
        tokens_per_s = output_tokens_between(outs, start, end) / window
    else:
        tokens_per_s = float(out_tokens.sum()) / span if span > 0 else math.nan
    return ServingSummary(
        requests=len(outs), span_s=span, ttft=Percentiles.of(ttft), tpot=Percentiles.of(tpot),
        latency=Percentiles.of(finish - arrival),
        requests_per_s=float(done.sum()) / window if window > 0 else math.nan,
        output_tokens_per_s=tokens_per_s,
        goodput_requests_per_s=goodput, slo_attainment=attained,
        mean_in_system=mean_in_system(outs, start, end) if window > 0 else math.nan,
        window_s=window, output_tokens=int(out_tokens.sum()))
