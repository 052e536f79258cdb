"""Requests to a serving engine: synthetic arrivals (a Poisson or gamma process with prompt and
output length distributions, seeded) and readers for the public traces users have.

A :class:`Request` is an arrival time in seconds and two lengths in tokens, nothing else: what the
scheduler needs. Synthetic requests come from :func:`generate` with a ``numpy.random.Generator``
built from the seed, so the same seed gives the same requests (numbers drawn in a fixed order:
inter-arrival gaps, then prompt lengths, then output lengths).

Trace formats read (columns are found by name in the header; extra columns are allowed):

- the Azure LLM inference trace (Azure/AzurePublicDataset, ``data/AzureLLMInferenceTrace_code.csv``
  and ``_conv.csv``, 2023 (Splitwise, ISCA 2024) and 2024 (DynamoLLM)): ``TIMESTAMP,ContextTokens,
  GeneratedTokens``, ``TIMESTAMP`` a wall-clock datetime such as ``2023-11-16 18:15:46.6805900``
  (100 ns ticks, seven fractional digits) and in the 2024 files with a ``+00:00`` offset;
  :func:`read_azure_trace`;
- BurstGPT (HPMLL/BurstGPT, ``data/BurstGPT_1.csv``...): ``Timestamp,Model,Request tokens,Response
  tokens,Total tokens,Log Type``, ``Timestamp`` in seconds from the trace's start; the files with
  failures write 0 response tokens for a failed request; :func:`read_burstgpt_trace`.

Arrival times are made relative to the first row (the first request arrives at 0 s). Every
malformed row (a missing field, a length that is negative, zero or not an integer, a time that is
not a time or goes backwards, a BurstGPT total that is not the sum of its parts, a failed BurstGPT
request) is an :class:`~simulator.errors.InputError` at FILE:LINE naming the column, what is wrong
and what would be right. With ``strict=False`` each of them is a warning instead (the row is left
out, and the warning says so): nothing is dropped silently; :class:`TraceRead` carries them and each
is also logged.
"""

from __future__ import annotations

import csv
import logging
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from simulator.errors import InputError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Request:
    """One request: when it arrives and how long its prompt and its answer are."""

    request_id: int
    """Its index in arrival order (0, 1, ...)."""
    arrival_s: float
    """Arrival time in seconds from the first request of its trace or process."""
    prompt_tokens: int
    """Prompt (context) length in tokens, at least 1."""
    output_tokens: int
    """Tokens it generates, at least 1 (the prefill iteration samples the first)."""
    remote_kv_tokens: int = 0
    """Prompt tokens whose KV cache arrives with the request, computed elsewhere (a disaggregated
    prefill instance's; at most prompt_tokens - 1: the engine computes the last prompt token itself
    to sample the first output token, as vLLM's KV connectors leave it). Used at the first admission
    only: a preempted request recomputes everything where it runs."""


# ---------------------------------------------------------------- length distributions

@dataclass(frozen=True, slots=True)
class FixedLength:
    """Every request has ``tokens`` tokens."""

    tokens: int

    def __post_init__(self) -> None:
        _check_positive_int("tokens", self.tokens)

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` lengths in tokens (no number is drawn)."""
        return np.full(count, self.tokens, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class UniformLength:
    """Lengths uniform over the integers ``low_tokens..high_tokens``, both included."""

    low_tokens: int
    high_tokens: int

    def __post_init__(self) -> None:
        _check_positive_int("low_tokens", self.low_tokens)
        _check_positive_int("high_tokens", self.high_tokens)
        if self.high_tokens < self.low_tokens:
            raise InputError(f"high_tokens {self.high_tokens} is below low_tokens {self.low_tokens}; "
                             "give high_tokens >= low_tokens", field="high_tokens")

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` lengths in tokens: ``rng.integers(low, high + 1)``."""
        return rng.integers(self.low_tokens, self.high_tokens + 1, size=count, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class LognormalLength:
    """Lognormal lengths with mean ``mean_tokens`` and log-space standard deviation ``sigma``: the
    underlying normal has mu = ln(mean_tokens) - sigma^2 / 2, so the continuous mean is
    ``mean_tokens``; each draw is rounded to the nearest integer and raised to at least 1 token (so
    the sample mean is a little above ``mean_tokens`` when the mean is a few tokens)."""

    mean_tokens: float
    sigma: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean_tokens) and self.mean_tokens >= 1):
            raise InputError(f"mean_tokens {self.mean_tokens!r} must be a number >= 1", field="mean_tokens")
        if not (math.isfinite(self.sigma) and self.sigma >= 0):
            raise InputError(f"sigma {self.sigma!r} must be a number >= 0 (log-space standard deviation)",
                             field="sigma")

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` lengths in tokens."""
        mu = math.log(self.mean_tokens) - self.sigma ** 2 / 2
        return np.maximum(1, np.rint(rng.lognormal(mu, self.sigma, size=count))).astype(np.int64)


LengthDistribution = FixedLength | UniformLength | LognormalLength


# ---------------------------------------------------------------- arrival processes

@dataclass(frozen=True, slots=True)
class PoissonArrivals:
    """Exponential inter-arrival gaps of mean 1 / ``rate_per_s`` (coefficient of variation 1)."""

    rate_per_s: float

    def __post_init__(self) -> None:
        _check_positive_float("rate_per_s", self.rate_per_s)

    def gaps_s(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` inter-arrival gaps in seconds."""
        return rng.exponential(1.0 / self.rate_per_s, size=count)


@dataclass(frozen=True, slots=True)
class GammaArrivals:
    """Gamma inter-arrival gaps of mean 1 / ``rate_per_s`` and coefficient of variation ``cv`` (the
    burstiness: shape k = 1 / cv^2, scale = 1 / (rate k); cv = 1 is Poisson, cv > 1 burstier), the
    process BurstGPT models its traces' arrivals with (arXiv 2401.17644) and vLLM's benchmark_serving
    draws with ``--burstiness`` (there the burstiness is the shape k itself)."""

    rate_per_s: float
    cv: float

    def __post_init__(self) -> None:
        _check_positive_float("rate_per_s", self.rate_per_s)
        _check_positive_float("cv", self.cv)

    def gaps_s(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` inter-arrival gaps in seconds."""
        shape = 1.0 / self.cv ** 2
        return rng.gamma(shape, 1.0 / (self.rate_per_s * shape), size=count)


ArrivalProcess = PoissonArrivals | GammaArrivals


def generate(arrivals: ArrivalProcess, prompt: LengthDistribution, output: LengthDistribution,
             count: int, seed: int) -> tuple[Request, ...]:
    """``count`` requests: arrival times are the cumulative sums of the process's gaps, minus the
    first (the first request arrives at 0 s); lengths drawn from ``prompt`` and ``output``. One
    ``numpy.random.default_rng(seed)`` draws everything, in that order: the same seed gives the same
    requests."""
    _check_positive_int("count", count)
    rng = np.random.default_rng(seed)
    times = np.cumsum(arrivals.gaps_s(rng, count))
    times -= times[0]
    prompts = prompt.sample(rng, count)
    outputs = output.sample(rng, count)
    return tuple(Request(i, float(t), int(p), int(o))
                 for i, (t, p, o) in enumerate(zip(times.tolist(), prompts.tolist(), outputs.tolist())))


def _check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"{name} {value!r} must be a whole number >= 1", field=name)


def _check_positive_float(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{name} {value!r} must be a number > 0", field=name)


# ---------------------------------------------------------------- trace readers

@dataclass(frozen=True, slots=True)
class TraceRead:
    """The requests of a trace file and one warning per row left out (``strict=False`` only)."""

    requests: tuple[Request, ...]
    warnings: tuple[InputError, ...]
    """Each row left out, at its FILE:LINE with its column and what is wrong (empty when strict)."""


AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
"""The Azure LLM inference trace's header (AzurePublicDataset ``AzureLLMInferenceTrace_*.csv``)."""
BURSTGPT_COLUMNS = ("Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type")
"""BurstGPT's header (HPMLL/BurstGPT ``data/BurstGPT_*.csv``); newer releases add ``Session ID`` and
``Elapsed time``, which are read past."""

_DATETIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
                       r"\s*(Z|[+-]\d{2}:?\d{2})?$")


def _azure_time_s(text: str) -> float | None:
    """Seconds since the Unix epoch of an Azure ``TIMESTAMP`` (any number of fractional digits up
    to 9, an optional UTC offset), or None when it is not such a datetime."""
    m = _DATETIME.match(text.strip())
    if not m:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    try:
        when = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
    except ValueError:
        return None
    offset = m.group(8)
    if offset and offset != "Z":
        sign = 1 if offset[0] == "+" else -1
        digits = offset[1:].replace(":", "")
        when -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    fraction = m.group(7) or "0"
    return when.timestamp() + int(fraction) / 10 ** len(fraction)


def _burstgpt_time_s(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def read_azure_trace(path: str | Path, strict: bool = True) -> TraceRead:
    """The requests of an Azure LLM inference trace CSV (``TIMESTAMP,ContextTokens,GeneratedTokens``)."""
    return _read_trace(Path(path), AZURE_COLUMNS, "TIMESTAMP", _azure_time_s,
                       "a datetime such as 2023-11-16 18:15:46.6805900", "ContextTokens", "GeneratedTokens",
                       None, strict)


def read_burstgpt_trace(path: str | Path, strict: bool = True) -> TraceRead:
    """The requests of a BurstGPT CSV (``Timestamp,Model,Request tokens,Response tokens,Total tokens,
    Log Type``). A row of 0 response tokens is a failed request (BurstGPT's files ``BurstGPT_1.csv``
    and ``_2.csv`` keep them): an error, or with ``strict=False`` a warning and the row left out; the
    ``_without_fails`` files have none."""
    return _read_trace(Path(path), BURSTGPT_COLUMNS, "Timestamp", _burstgpt_time_s,
                       "seconds from the trace's start, a number >= 0", "Request tokens", "Response tokens",
                       "Total tokens", strict)


def _read_trace(path: Path, columns: Sequence[str], time_column: str, parse_time: Callable[[str], float | None],
                time_form: str, prompt_column: str, output_column: str, total_column: str | None,
                strict: bool) -> TraceRead:
    name = str(path)
    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read the trace: {exc.strerror or exc}", file=name) from None
    problems: list[InputError] = []
    requests: list[Request] = []
    with handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise InputError(f"empty file; a trace starts with the header {','.join(columns)}", file=name, line=1)
        header = [h.strip() for h in header]
        missing = [c for c in columns if c not in header]
        if missing:
            raise InputError(f"the header has no column {missing[0]!r} (it reads {','.join(header)}); "
                             f"this format's header is {','.join(columns)}", file=name, line=1, field=missing[0])
        index = {c: header.index(c) for c in columns}
        first_s: float | None = None
        last_s: float | None = None
        last_line = 0
        for row in reader:
            line = reader.line_num
            if not row or all(not cell.strip() for cell in row):
                continue
            try:
                cells = _cells(row, columns, index, name, line)
                when = parse_time(cells[time_column])
                if when is None:
                    raise InputError(f"{cells[time_column]!r} is not a time; write {time_form}",
                                     file=name, line=line, field=time_column)
                if last_s is not None and when < last_s:
                    raise InputError(f"{cells[time_column]} is {last_s - when:.6g} s before the row at line "
                                     f"{last_line}; rows must be in time order (sort the file by {time_column})",
                                     file=name, line=line, field=time_column)
                prompt = _tokens(cells, prompt_column, name, line, "a prompt has at least 1 token")
                output = _tokens(cells, output_column, name, line, "a request generates at least 1 token")
                if total_column is not None:
                    total = _integer(cells, total_column, name, line)
                    if total != prompt + output:
                        raise InputError(f"{total} is not {prompt_column} + {output_column} = {prompt + output}",
                                         file=name, line=line, field=total_column)
            except InputError as problem:
                if strict:
                    raise
                problems.append(InputError(f"{problem.message} (row left out)", file=problem.file,
                                           line=problem.line, field=problem.field))
                log.warning("%s", problems[-1])
                continue
            if first_s is None:
                first_s = when
            last_s, last_line = when, line
            requests.append(Request(len(requests), when - first_s, prompt, output))
    return TraceRead(tuple(requests), tuple(problems))


def _cells(row: list[str], columns: Sequence[str], index: dict[str, int], name: str, line: int) -> dict[str, str]:
    cells = {}
    for column in columns:
        i = index[column]
        if i >= len(row):
            raise InputError(f"missing field: the row has {len(row)} fields, the header {len(index)} or more; "
                             f"every row needs a value in each of {','.join(columns)}",
                             file=name, line=line, field=column)
        if not row[i].strip():
            raise InputError(f"empty field; every row needs a value in each of {','.join(columns)}",
                             file=name, line=line, field=column)
        cells[column] = row[i].strip()
    return cells


def _integer(cells: dict[str, str], column: str, name: str, line: int) -> int:
    text = cells[column]
    if not re.fullmatch(r"[+-]?\d+", text):
        raise InputError(f"{text!r} is not a whole number of tokens; write an integer such as 512",
                         file=name, line=line, field=column)
    value = int(text)
    if value < 0:
        raise InputError(f"{value} is negative; a token count is >= 0", file=name, line=line, field=column)
    return value


def _tokens(cells: dict[str, str], column: str, name: str, line: int, rule: str) -> int:
    value = _integer(cells, column, name, line)
    if value == 0:
        why = " (BurstGPT writes 0 response tokens for a failed request; its _without_fails files have none)" \
            if column == "Response tokens" else ""
        raise InputError(f"0 tokens; {rule}{why}", file=name, line=line, field=column)
    return value
