"""From what a log says to one test's records: the operation, the rank count, the NCCL settings,
and the checks that need them (each row's busbw against nccl-tests' bus factor).

Both readers (text, :mod:`nccl_tests_log`; JSON, :mod:`nccl_tests_json`) fill a :class:`Draft` and
call :func:`resolve`. The caller's ``op``, ``gpus`` and ``env`` fill what the log leaves out; where
the log says otherwise, that is an error naming both. A row that fails a check is left out with a
warning at its line.

Rounding: nccl-tests prints a time or bandwidth to a few digits (``%7.2f``, then fewer decimals
or ``%.1e`` as the value grows); a check allows half a unit of each printed last digit (interval
arithmetic), and nothing else.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from simulator.errors import InputError
from simulator.workloads.traces.nccl_tests_records import (
    OPS, PER_RANK_COUNT_OPS, REDUCING_OPS, ROOTED_OPS, LogWarning, NcclNodes, NcclTestsRun, RankLine, Row, bus_factor)

_BINARY = re.compile(r"\b([a-z_]+)_perf(?:_mpi)?\b")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
EPS = 1e-9
"""Relative slack for float arithmetic in the checks (not a rounding allowance)."""


@dataclass(slots=True)
class Figures:
    """One placement's printed figures with half a unit of each one's last digit."""

    time: float
    time_half: float
    algbw: float
    algbw_half: float
    busbw: float
    busbw_half: float
    cputime: bool = False
    """``cputime`` column (``-C 1``): nccl-tests still computes algbw from the GPU time."""


@dataclass(slots=True)
class RowDraft:
    """A row read and checked as far as it can be without the op and rank count."""

    row: Row
    figures: tuple[Figures, ...]
    per_rank: int
    """size / (count x type bytes): 1, or the rank count for whole-array ops (0 for 0-byte rows)."""


@dataclass(slots=True)
class Draft:
    """Everything a reader found about one test."""

    path: str
    binary: tuple[str, int] | None = None
    binary_definitive: bool = False
    threads: int | None = None
    gpus_per_thread: int | None = None
    version: str | None = None
    nccl_version: str | None = None
    rank_lines: dict[int, RankLine] = field(default_factory=dict)
    ranks_listed: int | None = None
    """The JSON output's rank count (its device list names one rank per process)."""
    info_nranks: list[tuple[int, int]] = field(default_factory=list)
    """(nranks, line) of NCCL's ``Init COMPLETE`` lines."""
    info_nodes: list[tuple[int, int, int, int | None, int]] = field(default_factory=list)
    """(nRanks, nNodes, localRanks, MNNVL, line) of NCCL's ``nRanks ... nNodes ... localRanks`` lines."""
    env: list[tuple[str, str, int | None]] = field(default_factory=list)
    header_line: int = 0
    columns_from: str = ""
    segments: list[list[RowDraft]] = field(default_factory=list)
    """Rows in size order, one list per (type, redop, root) sweep (``-d all`` and ``-o all`` print
    several in one table) or per restart of the sizes (several tests' rows kept by ``grep``)."""
    warnings: list[LogWarning] = field(default_factory=list)
    avg_busbw: float | None = None
    out_of_bounds: str | None = None
    launched: tuple[int, str, int] | None = None
    """(ranks, how, line) of the command line that started the test (``mpirun -np 16 ... -g 1``)."""
    blank_redop: int | None = None
    """The first row that printed its redop as nothing (old nccl-tests' alltoall), or None."""
    failed: tuple[int, str] | None = None
    """(line, text) where nccl-tests reported a failed call (the run stopped there), or None."""

    def failed_before_rows(self) -> str:
        assert self.failed is not None
        return (f"nccl-tests reports a failure before its first data row, {self.failed[1]}: no row to compare "
                "(NCCL_DEBUG=INFO in the run's environment says why it failed)")

    def warn(self, line: int | None, message: str, row: bool = False, note: bool = False) -> None:
        self.warnings.append(LogWarning(self.path, line, message, row, note))

    def saw_binary(self, name: str, line: int, definitive: bool) -> None:
        if self.binary is None or (definitive and not self.binary_definitive):
            self.binary, self.binary_definitive = (name, line), definitive

    @property
    def first_line(self) -> int:
        rows = [d.row.line for seg in self.segments for d in seg]
        return min(rows) if rows else self.header_line


def _nodes(draft: Draft, ranks: int) -> NcclNodes | None:
    """How NCCL grouped this test's ranks (its ``nNodes ... localRanks`` lines), where every such line
    of a communicator of ``ranks`` agrees on the node count, the GPUs per node and MNNVL (ranks of
    one node print one line each); None without such lines or where they disagree (uneven nodes,
    other communicators)."""
    mine = [n for n in draft.info_nodes if n[0] == ranks]
    shapes = {n[1:4] for n in mine}
    if len(shapes) != 1:
        return None
    nodes, local, mnnvl = shapes.pop()
    if nodes * local != ranks:
        return None
    return NcclNodes(nodes=nodes, local_ranks=local, mnnvl=mnnvl, line=mine[0][4])


def parse_env_flags(env: object) -> list[tuple[str, str]]:
    """``--env K=V`` values (or a mapping) as (name, value) pairs; a malformed one is an error naming the flag."""
    if env is None:
        return []
    if isinstance(env, dict):
        items = [(str(k), str(v)) for k, v in env.items()]
    else:
        items = []
        for item in env:  # type: ignore[attr-defined]
            name, eq, value = str(item).partition("=")
            if not eq:
                raise InputError(f"{item!r} is not K=V (e.g. --env NCCL_ALGO=Ring)", field="env")
            items.append((name.strip(), value.strip()))
    for name, value in items:
        if not _ENV_NAME.fullmatch(name) or not value:
            raise InputError(f"{name}={value!r}: expected NAME=VALUE with a name of letters, digits and _ "
                             "(e.g. --env NCCL_PROTO=Simple)", field="env")
    return items


def algbw_ok(size: int, f: Figures) -> bool:
    """algbw = size / time (nccl-tests ``*GetBw``), within the printed digits."""
    if f.cputime:
        return True
    low_t, high_t = f.time - f.time_half, f.time + f.time_half
    low = size / high_t / 1e3
    high = size / low_t / 1e3 if low_t > 0 else math.inf
    slack = EPS * max(1.0, f.algbw)
    return low - f.algbw_half - slack <= f.algbw <= high + f.algbw_half + slack


def old_gather_figures(size: int, per_rank: int, f: Figures) -> Figures | None:
    """A row as nccl-tests before v2.9.0 printed all_gather and reduce_scatter (up to commit ec1b5e2,
    2020-06-19, "Change all_gather/reduce_scatter algbw to match the documentation"): algbw =
    count x type bytes x (n - 1) / time, which is (n - 1) / n x size / time, and busbw equal to it
    (the same busbw as since). The figures as nccl-tests prints them since (algbw = size / time),
    or None if the row is not of that kind (``per_rank``: size / (count x type bytes) = n)."""
    n = per_rank
    if n < 2 or f.cputime or abs(f.algbw - f.busbw) > f.algbw_half + f.busbw_half + EPS * max(1.0, f.busbw):
        return None
    scale = n / (n - 1)
    new = Figures(f.time, f.time_half, f.algbw * scale, f.algbw_half * scale, f.busbw, f.busbw_half)
    return new if algbw_ok(size, new) else None


def busbw_ok(size: int, f: Figures, factor: float) -> bool:
    """busbw = algbw x factor, algbw being what both the printed algbw and size / time allow."""
    low, high = f.algbw - f.algbw_half, f.algbw + f.algbw_half
    if not f.cputime:
        low_t, high_t = f.time - f.time_half, f.time + f.time_half
        low = max(low, size / high_t / 1e3)
        if low_t > 0:
            high = min(high, size / low_t / 1e3)
    low = max(low, 0.0)
    slack = EPS * max(1.0, f.busbw)
    return factor * low - f.busbw_half - slack <= f.busbw <= factor * high + f.busbw_half + slack


def _ranks_interval(op: str, f: Figures) -> tuple[float, float] | None:
    """The rank counts n whose bus factor fits this placement's busbw / algbw; None if no bound."""
    if op in PER_RANK_COUNT_OPS:
        invert = lambda x: 1.0 / (1.0 - x) if x < 1 else math.inf  # (n-1)/n = x
    elif op == "all_reduce":
        invert = lambda x: 2.0 / (2.0 - x) if x < 2 else math.inf  # 2(n-1)/n = x
    else:
        return None
    a_low, a_high = f.algbw - f.algbw_half, f.algbw + f.algbw_half
    if a_low <= 0:
        return None
    low = max(0.0, (f.busbw - f.busbw_half) / a_high)
    high = (f.busbw + f.busbw_half) / a_low
    return max(1.0, invert(low)), invert(high)


def _rank_candidates(op: str, drafts: list[RowDraft]) -> tuple[list[int], int] | None:
    """The rank counts that the rows' busbw / algbw fit, with the line of the narrowest row; None when
    no row bounds them (bus factor 1, tiny rows) or too many fit to tell. Every row must fit, but for
    a few whose figures fit no count near the others' (a garbled row, left out by the row checks later):
    then the count that more than half of the rows fit."""
    intervals: list[tuple[float, float, int]] = []
    for d in drafts:
        if d.row.bytes == 0:
            continue
        for f in d.figures:
            found = _ranks_interval(op, f)
            if found is not None:
                intervals.append((found[0], found[1], d.row.line))
    if not intervals:
        return None
    low = max(i[0] for i in intervals)
    high = min(i[1] for i in intervals)
    line = min(intervals, key=lambda i: i[1] - i[0])[2]
    if math.isfinite(low) and low <= high + EPS:
        if high - low > 64:
            return None
        return [n for n in range(math.ceil(low - EPS), math.floor(high + EPS) + 1) if n >= 1], line
    votes: dict[int, int] = {}
    for lo, hi, _ in intervals:
        if math.isfinite(lo) and hi - lo < 4:
            for n in range(math.ceil(lo - EPS), math.floor(hi + EPS) + 1):
                votes[n] = votes.get(n, 0) + 1
    best = sorted(votes.items(), key=lambda kv: -kv[1])
    if best and best[0][1] * 2 > len(intervals) and (len(best) == 1 or best[1][1] < best[0][1]):
        return [best[0][0]], line
    return [], line


def ranks_from_rows(op: str, drafts: list[RowDraft]) -> tuple[int, int] | None:
    """(n, line) if the rows' size / count (whole-array ops) or busbw / algbw fit exactly one rank
    count n; None when they do not tell (bus factor 1, tiny rows, disagreement)."""
    sized = [d for d in drafts if d.row.bytes > 0]
    if op in PER_RANK_COUNT_OPS:
        counts = {d.per_rank for d in sized}
        if len(counts) == 1:
            return counts.pop(), sized[0].row.line
    found = _rank_candidates(op, drafts)
    return (found[0][0], found[1]) if found and len(found[0]) == 1 else None


def _feasible(draft: Draft, op: str, ranks: int | None) -> bool:
    """Could the rows be ``op``'s: is there a rank count whose bus factor they all fit?"""
    drafts = [d for seg in draft.segments for d in seg]
    if op in PER_RANK_COUNT_OPS:
        counts = {d.per_rank for d in drafts if d.row.bytes > 0}
        if len(counts) != 1:
            return True
        k = counts.pop()
        return (ranks is None or k == ranks) and _fits_factor(draft, bus_factor(op, k))
    if op == "all_reduce":
        if ranks:
            return _fits_factor(draft, bus_factor(op, ranks))
        found = _rank_candidates(op, drafts)
        return found is None or bool(found[0])
    return _fits_factor(draft, 1.0)


def _op(draft: Draft, op: str | None, ranks: int | None) -> tuple[str, str]:
    """The operation: the binary's name, else the columns; ``op`` given must agree with either."""
    where = draft.header_line or draft.first_line
    candidates = _candidates_from_columns(draft, ranks)
    binary = draft.binary
    if binary is not None and not draft.binary_definitive:
        m = _BINARY.search(binary[0])
        if (m.group(1) if m else binary[0]) not in OPS:
            binary = None  # a script or tool named *_perf on a command line, not an nccl-tests binary
    if binary is not None:
        name, line = binary
        m = _BINARY.search(name)
        short = m.group(1) if m else name
        if short not in OPS:
            raise InputError(f"{name!r} is not an nccl-tests binary this reader knows; it reads "
                             f"{', '.join(o + '_perf' for o in OPS)}" + ("" if op else " (or pass --op)"),
                             file=draft.path, line=line)
        if op is not None and op != short:
            raise InputError(f"--op {op} contradicts the log, which ran {name}; drop --op or pass --op {short}",
                             file=draft.path, line=line)
        return short, "given" if op else f"binary name (line {line})"
    if op is not None:
        if candidates and op not in candidates:
            raise InputError(f"--op {op} contradicts the log's columns, which fit {' or '.join(candidates)} "
                             "(reduction op, root, size / count)", file=draft.path, line=where)
        return op, "given"
    if len(candidates) == 1:
        return candidates[0], "columns"
    if draft.blank_redop is not None and "alltoall" in candidates:
        # before the root column, all_gather printed no redop column and alltoall an empty one (nccl-tests
        # 119a0ec, src/alltoall.cu: TimeTest(..., "", -1))
        return "alltoall", f"empty redop (line {draft.blank_redop}), as old alltoall_perf printed it"
    raise UnknownOp(draft, f"cannot tell the operation from the columns (it could be "
                           f"{' or '.join(candidates) or 'none'}); pass --op, or keep the '# Collective test "
                           "starting: <op>_perf' or command line in the log", line=where)


def _candidates_from_columns(draft: Draft, ranks: int | None) -> list[str]:
    """Ops consistent with the redop and root columns and with size / (count x type bytes)."""
    firsts = [seg[0] for seg in draft.segments if seg]
    if not firsts:
        return list(OPS)
    row = firsts[0].row
    # nccl-tests since ~2.10 prints both columns for every op ("none" / -1 when they do not apply);
    # older versions print a column only for the ops that have it (redop: reductions, root: rooted)
    reduces = row.redop is not None and row.redop != "none"
    rooted = row.root is not None and row.root >= 0
    candidates = [o for o in OPS if (o in REDUCING_OPS) == reduces and (o in ROOTED_OPS) == rooted]
    if reduces and not rooted and _fits_factor(draft, 1.0):
        candidates.append("sendrecv")  # sendrecv prints -o's reduction (sum) although it reduces nothing
    per_rank = {d.per_rank for seg in draft.segments for d in seg if d.row.bytes > 0}
    if per_rank and max(per_rank) > 1:
        candidates = [o for o in candidates if o in PER_RANK_COUNT_OPS]
    elif per_rank == {1} and ranks and ranks > 1:
        candidates = [o for o in candidates if o not in PER_RANK_COUNT_OPS]
    feasible = [o for o in candidates if _feasible(draft, o, ranks)]
    return feasible or candidates


def _fits_factor(draft: Draft, factor: float) -> bool:
    """Every row's busbw is algbw x ``factor`` to the printed digits."""
    return all(busbw_ok(d.row.bytes, f, factor) for seg in draft.segments for d in seg for f in d.figures)


def _span(lines: list[int]) -> str:
    return f"line {lines[0]}" if len(lines) == 1 else f"lines {min(lines)}-{max(lines)}"


def _ranks(draft: Draft, op: str, gpus: int | None) -> tuple[int | None, str]:
    """The rank count and where it came from: the log (device list, NCCL's Init lines, the rows' own
    bus factor), else ``gpus``; ``gpus`` that contradicts the log is an error naming both."""
    listed = sorted(draft.rank_lines)
    lines = [r.line for r in draft.rank_lines.values()]
    complete: tuple[int, str] | None = None
    bound: tuple[int, str] | None = None
    if draft.ranks_listed is not None:
        complete = (draft.ranks_listed, "the JSON output's config (devices x nthreads x ngpus)")
    elif listed and listed == list(range(len(listed))):
        complete = (len(listed), f"{len(listed)} '#  Rank' lines ({_span(lines)})")
    elif listed:
        bound = (listed[-1] + 1, f"'#  Rank' lines up to rank {listed[-1]} ({_span(lines)})")
        gaps = sorted(set(range(listed[0], listed[-1] + 1)) - set(listed))
        if gaps:
            draft.warn(min(lines), f"the device list skips rank(s) {', '.join(map(str, gaps[:5]))}"
                                   f"{' ...' if len(gaps) > 5 else ''}: lines lost or garbled?")
    info = sorted({n for n, _ in draft.info_nranks})
    if len(info) > 1:
        draft.warn(draft.info_nranks[0][1], f"NCCL's Init lines name communicators of {', '.join(map(str, info))} "
                                            "ranks; not taking the rank count from them")
    elif info:
        info_lines = [line for _, line in draft.info_nranks]
        found = (info[0], f"NCCL's Init COMPLETE lines (nranks {info[0]}, {_span(info_lines)})")
        if complete and complete[0] != found[0]:
            draft.warn(info_lines[0], f"NCCL's Init line says nranks {found[0]}, the log's {complete[1]} "
                                      f"say {complete[0]}; taking {complete[0]}")
        elif not complete and (bound is None or found[0] >= bound[0]):
            complete = found
    rows = ranks_from_rows(op, [d for seg in draft.segments for d in seg])
    if rows is not None:
        how = "size / count" if op in PER_RANK_COUNT_OPS else "busbw / algbw"
        from_rows = (rows[0], f"{how} of the rows ({rows[0]} ranks, line {rows[1]})")
        if complete and complete[0] != from_rows[0]:
            draft.warn(rows[1], f"{how} says {from_rows[0]} ranks, the log's {complete[1]} say {complete[0]}; "
                                f"taking {from_rows[0]}, the count nccl-tests computed busbw with")
            complete = from_rows
        elif bound and from_rows[0] < bound[0]:
            draft.warn(rows[1], f"{how} says {from_rows[0]} ranks, but the device list names rank {bound[0] - 1}")
        elif not complete:
            complete = from_rows
    if draft.launched is not None:
        n, how, at = draft.launched
        said = (n, f"the command line ({how}, line {at})")
        if complete is None and (bound is None or n >= bound[0]):
            complete, bound = said, None
        elif complete is not None and n != complete[0]:
            if lines and n > complete[0] == len(listed) and not draft.info_nranks and rows is None:
                # ranks 0..k-1 listed of more launched: the list was cut to its first lines
                complete = (n, f"{said[1]}; the device list names ranks 0-{complete[0] - 1} only")
            elif not how.startswith("one process"):  # a bare binary's count is a guess: no warning
                draft.warn(at, f"the command line starts {n} ranks ({how}), the log's {complete[1]} say "
                               f"{complete[0]}; taking {complete[0]}")
    if complete is None and bound is not None:
        if gpus is not None and gpus < bound[0]:
            raise InputError(f"--gpus {gpus} contradicts the log: its {bound[1]} need at least {bound[0]} ranks",
                             file=draft.path, line=min(lines))
        if gpus is None:
            return bound[0], f"at least {bound[0]}: {bound[1]}; the list is cut (pass --gpus N if the job had more)"
        return gpus, f"--gpus (the log's {bound[1]} need at least {bound[0]})"
    if complete is not None:
        if gpus is not None and gpus != complete[0]:
            raise InputError(f"--gpus {gpus} contradicts the log, which ran on {complete[0]} "
                             f"rank{'s' if complete[0] != 1 else ''} ({complete[1]}); drop --gpus or pass "
                             f"--gpus {complete[0]}",
                             file=draft.path, line=min(lines) if lines else draft.first_line)
        return complete[0], complete[1]
    if gpus is not None:
        return gpus, "--gpus"
    fits = _rank_candidates(op, [d for seg in draft.segments for d in seg])
    if fits is not None and len(fits[0]) > 1:  # no count, but a range: say it for the error that asks for one
        return None, f"the rows' busbw / algbw fit {fits[0][0]}-{fits[0][-1]} ranks (line {fits[1]})"
    return None, ""


def _check_rows(draft: Draft, op: str, ranks: int | None) -> None:
    """Leave out (with a warning) the rows that contradict the op or rank count."""
    factor = bus_factor(op, ranks) if ranks else None
    for seg in draft.segments:
        keep = []
        for d in seg:
            row, why = d.row, None
            if row.redop is not None and op != "sendrecv" and (row.redop == "none") == (op in REDUCING_OPS):
                why = (f"reduction op {row.redop!r} does not fit {op} "
                       f"({'a reduction' if op in REDUCING_OPS else 'none'} expected)")
            elif row.root is not None and (row.root >= 0) != (op in ROOTED_OPS):
                why = f"root {row.root} does not fit {op} ({'a rank' if op in ROOTED_OPS else '-1'} expected)"
            elif row.bytes > 0 and op not in PER_RANK_COUNT_OPS and d.per_rank != 1:
                why = f"size {row.bytes} is {d.per_rank} x count x type bytes; {op} prints size = count x type bytes"
            elif row.bytes > 0 and op in PER_RANK_COUNT_OPS and ranks and d.per_rank != ranks:
                why = (f"size {row.bytes} is {d.per_rank} x count x type bytes; {op} on {ranks} ranks prints "
                       f"size = count x {ranks} x type bytes")
            elif factor is not None:
                for name, f in zip(("out-of-place", "in-place"), d.figures):
                    if not busbw_ok(row.bytes, f, factor):
                        why = (f"{name} busbw {f.busbw:g} GB/s is not algbw {f.algbw:g} x {factor:.4g} "
                               f"(nccl-tests' bus factor of {op} on {ranks} ranks), to the printed digits")
                        break
            if why:
                draft.warn(row.line, f"row left out: {why}", row=True)
            else:
                keep.append(d)
        seg[:] = keep


def _env(draft: Draft, env: list[tuple[str, str]]) -> list[tuple[str, str, int | None]]:
    """The log's settings, then ``--env`` where the log has none; a contradiction is an error."""
    settings = list(draft.env)
    last = {k: (v, line) for k, v, line in settings}
    for name, value in env:
        if name in last and last[name][0] != value:
            logged, line = last[name]
            raise InputError(f"--env {name}={value} contradicts the log, which sets {name}={logged}; drop it or "
                             f"pass --env {name}={logged}", file=draft.path, line=line)
        if name not in last:
            settings.append((name, value, None))
    return settings


class NoUsableRows(InputError):
    """A test whose every data row was left out (each with its warning): an error only when it is the
    log's only test; beside others, its warnings join theirs."""

    def __init__(self, draft: Draft, message: str | None = None, line: int | None = None) -> None:
        rows = [w for w in draft.warnings if w.row]
        if message is not None:  # the test cannot be used for another reason (UnknownOp)
            super().__init__(message, file=draft.path, line=line)
        elif draft.failed is not None and not rows:
            super().__init__(draft.failed_before_rows(), file=draft.path, line=draft.failed[0])
        elif rows:
            super().__init__(f"no usable data rows: all {len(rows)} were left out; the first: {rows[0].message}",
                             file=draft.path, line=rows[0].line)
        else:
            super().__init__("no data rows after the column header (a run that stopped early?); expected rows "
                             "such as '1048576  262144  float  sum  -1  52.1  20.13  35.22  0 ...'",
                             file=draft.path, line=draft.header_line or None)
        self.warnings = sorted(draft.warnings, key=lambda w: w.line or 0) + [
            LogWarning(draft.path, self.line, f"this test is left out: {self.message}")]


class UnknownOp(NoUsableRows):
    """A test whose operation neither the log nor ``--op`` says: left out beside other tests (with a
    warning), an error when it is the log's only test."""


def resolve(draft: Draft, op: str | None, gpus: int | None, env: list[tuple[str, str]],
            test: int) -> list[NcclTestsRun]:
    """One run per non-empty segment of ``draft``, numbered from ``test``; :class:`NoUsableRows` if none."""
    if not any(draft.segments):
        raise NoUsableRows(draft)
    early = draft.rank_lines and sorted(draft.rank_lines) == list(range(len(draft.rank_lines)))
    early_ranks = draft.ranks_listed or (len(draft.rank_lines) if early else None) or gpus
    found_op, op_from = _op(draft, op, early_ranks)
    ranks, ranks_from = _ranks(draft, found_op, gpus)
    _check_rows(draft, found_op, ranks)
    settings = tuple(_env(draft, env))
    segments = [seg for seg in draft.segments if seg]
    if not segments:
        raise NoUsableRows(draft)
    runs = []
    starts = [seg[0].row.line for seg in segments]
    ordered = sorted(draft.warnings, key=lambda w: w.line or 0)
    for i, seg in enumerate(segments):
        # each warning goes to one run: the one whose lines it falls among (the first takes those before)
        low = starts[i] if i else -math.inf
        high = starts[i + 1] if i + 1 < len(segments) else math.inf
        mine = tuple(w for w in ordered if low <= (w.line or 0) < high)
        runs.append(NcclTestsRun(
            path=draft.path, op=found_op, op_from=op_from, ranks=ranks,
            rank_lines=tuple(draft.rank_lines[r] for r in sorted(draft.rank_lines)),
            rows=tuple(d.row for d in seg), header_line=draft.header_line or starts[i],
            threads=draft.threads, gpus_per_thread=draft.gpus_per_thread, version=draft.version,
            avg_busbw_GBps=draft.avg_busbw, out_of_bounds=draft.out_of_bounds, nccl_env=settings,
            ranks_from=ranks_from, nccl_version=draft.nccl_version, columns_from=draft.columns_from,
            warnings=mine, test=test + i, nccl_nodes=_nodes(draft, ranks)))
    return runs
