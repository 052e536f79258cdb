"""Read the text output of NVIDIA's nccl-tests (``all_reduce_perf`` and friends) into frozen records.

Pure parsing: no printing, no simulation. What a log looks like (nccl-tests ``src/common.cu``,
``writeDeviceReport`` / ``writeResultHeader`` / ``writeResultFooter``)::

    # nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807      (newer versions)
    # Collective test starting: all_reduce_perf                             (newer versions)
    # nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 ...
    # Using devices
    #  Rank  0 Group  0 Pid  12345 on  host-a device  0 [0x18] NVIDIA H100 80GB HBM3
    #                                                  out-of-place                       in-place
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) ...
               8             2     float     sum      -1    37.80    0.00    0.00      0    37.50 ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 45.1234
    # Collective test concluded: all_reduce_perf                            (newer versions)

Variants handled: ``-g N`` runs (one process, N rank lines with one Pid) and MPI runs (one rank
line per process, several hosts); older versions without ``redop``/``root`` columns, with an
``error`` column instead of ``#wrong`` and without the leading ``#`` or ``Group``; ``cputime``
instead of ``time`` (``-C 1``); extra per-iteration / bitwise / timestamp columns of newer
versions; several tests in one file (one :class:`NcclTestsRun` each); ``[1,0]<stdout>:`` or
``0:`` prefixes added by mpirun/srun. Every column is found by its name in the column header.

The operation comes from, in order: the caller (``op=``), the binary name (``all_gather_perf`` in
``# Collective test starting:`` or in a command line in the log), else the columns (reduction op,
root) and the ratio of size to count, which tells whole-buffer ops from per-rank ones. The rank
count is the number of distinct ``Rank`` lines.

Sizes and bandwidths are as nccl-tests prints them: size in bytes (for all_gather, reduce_scatter,
alltoall, gather, scatter the whole array, count x ranks), time in us, algbw and busbw in GB/s with
GB = 10^9 B.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from simulator.errors import InputError
from simulator.workloads.collectives.ops import WHOLE_ARRAY_OPS

OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv",
       "reduce", "gather", "scatter")
"""Operations of nccl-tests this parser knows (binary ``<op>_perf``)."""

PER_RANK_COUNT_OPS = WHOLE_ARRAY_OPS
"""Ops whose printed size is the whole array: size = count x ranks x type bytes (the others:
size = count x type bytes). From each test's ``getCollByteCount`` in nccl-tests ``src/*.cu``; the
same rule as the simulator's size convention (``collectives.ops.WHOLE_ARRAY_OPS``)."""

REDUCING_OPS = frozenset({"all_reduce", "reduce_scatter", "reduce"})
ROOTED_OPS = frozenset({"broadcast", "reduce", "gather", "scatter"})

TYPE_BYTES = {"int8": 1, "uint8": 1, "char": 1, "int32": 4, "uint32": 4, "int": 4, "int64": 8,
              "uint64": 8, "half": 2, "float": 4, "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1}
"""Bytes per element of nccl-tests' type names (``test_typenames`` in ``src/common.cu``; ``char``
and ``int`` from NCCL 1 builds)."""

TIME_COLUMNS = ("time", "cputime")
WRONG_COLUMNS = ("#wrong", "error")
"""Names of the per-placement columns: time (us, ``cputime`` with ``-C 1``), and the data check
(``#wrong`` elements, or ``error`` = max deviation in versions before ~2.10)."""

_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\d+:\s)")
_RANK = re.compile(r"^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)"
                   r"\s+\[([^\]]*)\]\s*(.*)$")
_NTHREAD = re.compile(r"^#?\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\b")
_BINARY = re.compile(r"\b([a-z_]+)_perf(?:_mpi)?\b")
_STARTING = re.compile(r"Collective test (starting|concluded):\s*(\S+)")
_VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+)")
_NCCL_ENV = re.compile(r"\b(NCCL_[A-Z0-9_]+)=([^\s;&|]+)")
_AVG_BUSBW = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*(\S+)")
_OUT_OF_BOUNDS = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\S+)")


@dataclass(frozen=True, slots=True)
class Timing:
    """One placement's figures of one size: time (us), algbw and busbw (GB/s, GB = 1e9 B)."""

    time_us: float
    algbw_GBps: float
    busbw_GBps: float
    wrong: str | None
    """The data-check column as printed (``0``, ``N/A`` with ``-c 0``, ``0e+00`` in old versions)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One data row: a message size with its out-of-place and in-place timings."""

    line: int
    bytes: int
    count: int
    type: str
    redop: str | None
    root: int | None
    out_of_place: Timing
    in_place: Timing | None
    """None when the log has only one set of columns."""


@dataclass(frozen=True, slots=True)
class RankLine:
    """One ``#  Rank  r Group g Pid p on host device d [bus] name`` line."""

    line: int
    rank: int
    pid: int
    host: str
    device: int
    gpu: str


@dataclass(frozen=True, slots=True)
class NcclTestsRun:
    """One test of a log: what ran, on how many ranks, and its rows in size order."""

    path: str
    op: str
    """nccl-tests operation name without ``_perf`` (one of :data:`OPS`)."""
    op_from: str
    """How the op was found: ``given``, ``binary name (line N)`` or ``columns``."""
    ranks: int | None
    """Distinct ``Rank`` lines; None if the log has none (then the caller must say)."""
    rank_lines: tuple[RankLine, ...]
    rows: tuple[Row, ...]
    header_line: int
    """Line of the column header (``# size count type ...``)."""
    threads: int | None = None
    gpus_per_thread: int | None = None
    """``nThread`` and ``nGpus`` (``-t``, ``-g``) of the header line."""
    version: str | None = None
    avg_busbw_GBps: float | None = None
    out_of_bounds: str | None = None
    """The ``# Out of bounds values`` result as printed (``0 OK``, ``2 FAILED``)."""
    nccl_env: tuple[tuple[str, str, int], ...] = ()
    """``NCCL_*=value`` settings written before the column header (a command line such as
    ``NCCL_ALGO=Ring ./all_reduce_perf`` or ``mpirun -x NCCL_PROTO=Simple``): (name, value, line)."""

    def setting(self, name: str) -> tuple[str, int] | None:
        """The last value given to an ``NCCL_*`` variable in the log, with its line; None if unset."""
        found = [(value, line) for key, value, line in self.nccl_env if key == name]
        return found[-1] if found else None

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.host for r in self.rank_lines))

    @property
    def processes(self) -> int:
        return len({(r.host, r.pid) for r in self.rank_lines})

    @property
    def gpu_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.gpu for r in self.rank_lines))


def parse_log(path: str | Path, op: str | None = None) -> tuple[NcclTestsRun, ...]:
    """Every test in an nccl-tests log file (usually one), each with at least one data row."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such nccl-tests log", file=str(path))
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        raise InputError(f"cannot read the log: {err.strerror}", file=str(path)) from None
    return parse_text(text, str(path), op)


def parse_text(text: str, path: str = "<text>", op: str | None = None) -> tuple[NcclTestsRun, ...]:
    """:func:`parse_log` on text already read; ``path`` names it in errors."""
    if op is not None and op not in OPS:
        raise InputError(f"unknown nccl-tests operation {op!r}; choose one of {', '.join(OPS)}", field="op")
    runs: list[NcclTestsRun] = []
    current = _Builder(path)
    pending: tuple[str, int] | None = None
    pending_env: list[tuple[str, str, int]] = []
    """A binary and NCCL_* settings named after the current test's rows (a command line): they belong
    to the next test, if one starts."""

    def next_test() -> None:
        nonlocal current, pending
        if current.rows:
            runs.append(current.finish(op))
            current = _Builder(path)
            if pending:
                current.saw_binary(*pending, definitive=False)
            current.env += pending_env
        pending = None
        pending_env.clear()

    for number, raw in enumerate(text.splitlines(), start=1):
        line = _PREFIX.sub("", raw.strip(), count=1).strip()
        if not line:
            continue
        if m := _STARTING.search(line):
            if m.group(1) == "starting":
                next_test()
                current.saw_binary(m.group(2), number, definitive=True)
            continue
        if m := _NTHREAD.match(line):
            next_test()
            current.threads, current.gpus_per_thread = int(m.group(1)), int(m.group(2))
            continue
        if m := _VERSION.match(line):
            next_test()
            current.version = m.group(1)
            continue
        if m := _RANK.match(line):
            current.add_rank(RankLine(number, int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4)),
                                      m.group(6).strip()))
            continue
        if m := _AVG_BUSBW.match(line):
            current.avg_busbw = _number(m.group(1), path, number, "Avg bus bandwidth")
            continue
        if m := _OUT_OF_BOUNDS.match(line):
            current.out_of_bounds = line.split(":", 1)[1].strip()
            continue
        tokens = line.lstrip("#").split()
        if {"size", "count", "type", "busbw"} <= set(tokens):
            next_test()
            current.set_columns(tokens, number)
            continue
        if current.columns is not None and _is_data(line):
            current.add_row(line.split(), number)
            continue
        settings = [(k, v.strip("'\""), number) for k, v in _NCCL_ENV.findall(line)]
        if current.rows:
            pending_env += settings
        elif current.columns is None:
            current.env += settings
        if m := _BINARY.search(line):
            if current.rows:
                pending = pending or (m.group(0), number)
            else:
                current.saw_binary(m.group(0), number, definitive=False)
    if current.rows or current.columns is not None or not runs:
        runs.append(current.finish(op))
    return tuple(runs)


def _is_data(line: str) -> bool:
    """A data row starts with the size, an integer (never with ``#``)."""
    first = line.split(maxsplit=1)[0]
    return first.isdigit()


def _number(text: str, path: str, line: int, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{what}: cannot read {text!r} as a number", file=path, line=line) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise InputError(f"{what}: {text!r} is not a finite number", file=path, line=line)
    return value


def _integer(text: str, path: str, line: int, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(f"{what}: cannot read {text!r} as a whole number", file=path, line=line) from None


@dataclass(frozen=True, slots=True)
class _Columns:
    """Where each field sits in a data row, found from the column header's names."""

    line: int
    width: int
    """Fields a data row must have (the header's names, minus a trailing timestamp)."""
    size: int
    count: int
    type: int
    redop: int | None
    root: int | None
    placements: tuple[tuple[int, int, int, int | None], ...]
    """(time, algbw, busbw, wrong) indices: out-of-place first, then in-place if present."""


class _Builder:
    """Collects one test's lines; :meth:`finish` checks them and returns the frozen run."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.binary: tuple[str, int] | None = None
        self.binary_definitive = False
        self.threads: int | None = None
        self.gpus_per_thread: int | None = None
        self.version: str | None = None
        self.ranks: dict[int, RankLine] = {}
        self.columns: _Columns | None = None
        self.rows: list[Row] = []
        self.avg_busbw: float | None = None
        self.out_of_bounds: str | None = None
        self.env: list[tuple[str, str, int]] = []

    def saw_binary(self, name: str, line: int, definitive: bool) -> None:
        if self.binary is None or (definitive and not self.binary_definitive):
            self.binary, self.binary_definitive = (name, line), definitive

    def add_rank(self, rank: RankLine) -> None:
        if rank.rank in self.ranks:
            first = self.ranks[rank.rank]
            raise InputError(
                f"rank {rank.rank} is listed twice (also line {first.line}): each process ran its own test, "
                "as when nccl-tests built without MPI=1 is started by mpirun; rebuild with MPI=1, or keep one "
                "process's output", file=self.path, line=rank.line)
        self.ranks[rank.rank] = rank

    def set_columns(self, names: list[str], line: int) -> None:
        if names and names[-1] == "timestamp":
            names = names[:-1]
        where = {}
        for key in ("size", "count", "type"):
            if key not in names:
                raise InputError(f"column header has no {key!r} column; expected nccl-tests' "
                                 "'size count type [redop] [root] time algbw busbw ...'", file=self.path, line=line)
            where[key] = names.index(key)
        times = [i for i, n in enumerate(names) if n in TIME_COLUMNS]
        placements = []
        for start in times[:2]:
            rest = names[start:]
            if rest[1:3] != ["algbw", "busbw"]:
                raise InputError(f"column {names[start]!r} is not followed by 'algbw busbw' in the column header",
                                 file=self.path, line=line)
            wrong = start + 3 if len(rest) > 3 and rest[3] in WRONG_COLUMNS else None
            placements.append((start, start + 1, start + 2, wrong))
        if not placements:
            raise InputError("column header has no 'time' column; expected nccl-tests' "
                             "'size count type [redop] [root] time algbw busbw ...'", file=self.path, line=line)
        self.columns = _Columns(line=line, width=len(names), size=where["size"], count=where["count"],
                                type=where["type"], redop=names.index("redop") if "redop" in names else None,
                                root=names.index("root") if "root" in names else None,
                                placements=tuple(placements))

    def add_row(self, fields: list[str], line: int) -> None:
        cols = self.columns
        assert cols is not None
        if len(fields) < cols.width:
            raise InputError(f"data row has {len(fields)} fields, the column header on line {cols.line} names "
                             f"{cols.width}; is the line cut short?", file=self.path, line=line)
        p, n = self.path, line
        timings = []
        for place, (t, a, b, w) in zip(("out-of-place", "in-place"), cols.placements):
            time_us = _number(fields[t], p, n, f"{place} time")
            if time_us <= 0:
                raise InputError(f"{place} time must be positive (us), got {fields[t]}", file=p, line=n)
            timings.append(Timing(time_us, _number(fields[a], p, n, f"{place} algbw"),
                                  _number(fields[b], p, n, f"{place} busbw"), fields[w] if w is not None else None))
        size = _integer(fields[cols.size], p, n, "size")
        if size <= 0:
            raise InputError(f"size must be a positive number of bytes, got {size}", file=p, line=n)
        if self.rows and size <= self.rows[-1].bytes:
            raise InputError(f"size {size} B does not grow from the row before ({self.rows[-1].bytes} B on line "
                             f"{self.rows[-1].line}); two tests mixed in one file?", file=p, line=n)
        self.rows.append(Row(
            line=n, bytes=size, count=_integer(fields[cols.count], p, n, "count"), type=fields[cols.type],
            redop=fields[cols.redop] if cols.redop is not None else None,
            root=_integer(fields[cols.root], p, n, "root") if cols.root is not None else None,
            out_of_place=timings[0], in_place=timings[1] if len(timings) > 1 else None))

    def finish(self, op: str | None) -> NcclTestsRun:
        where = self.columns.line if self.columns else None
        if self.columns is None:
            raise InputError("no nccl-tests column header ('#  size  count  type ... time  algbw  busbw') "
                             "found; is this the output of an nccl-tests binary such as all_reduce_perf?",
                             file=self.path)
        if not self.rows:
            raise InputError("no data rows after the column header (a run that stopped early?); expected rows "
                             "such as '1048576  262144  float  sum  -1  52.1  20.13  35.22  0 ...'",
                             file=self.path, line=where)
        ranks = len(self.ranks) or None
        if ranks is not None and sorted(self.ranks) != list(range(ranks)):
            missing = sorted(set(range(max(self.ranks) + 1)) - set(self.ranks))
            raise InputError(f"rank lines skip rank(s) {', '.join(map(str, missing[:5]))}: the device list is "
                             "incomplete (output of several processes mixed?)", file=self.path,
                             line=min(r.line for r in self.ranks.values()))
        found, op_from = self._op(op, ranks)
        return NcclTestsRun(
            path=self.path, op=found, op_from=op_from, ranks=ranks,
            rank_lines=tuple(self.ranks[r] for r in sorted(self.ranks)), rows=tuple(self.rows),
            header_line=self.columns.line, threads=self.threads, gpus_per_thread=self.gpus_per_thread,
            version=self.version, avg_busbw_GBps=self.avg_busbw, out_of_bounds=self.out_of_bounds,
            nccl_env=tuple(self.env))

    def _op(self, op: str | None, ranks: int | None) -> tuple[str, str]:
        if op is not None:
            return op, "given"
        if self.binary is not None:
            name, line = self.binary
            m = _BINARY.search(name)
            short = m.group(1) if m else name
            if short in OPS:
                return short, f"binary name (line {line})"
            raise InputError(f"{name!r} is not an nccl-tests binary this reader knows; it reads "
                             f"{', '.join(o + '_perf' for o in OPS)} (or pass --op)", file=self.path, line=line)
        candidates = self._candidates_from_columns(ranks)
        if len(candidates) == 1:
            return candidates[0], "columns"
        raise InputError(f"cannot tell the operation from the columns (it could be {' or '.join(candidates)}); "
                         "pass --op, or keep the '# Collective test starting: <op>_perf' or command line in the "
                         "log", file=self.path, line=self.columns.line if self.columns else None)

    def _candidates_from_columns(self, ranks: int | None) -> list[str]:
        """Ops consistent with the redop and root columns and with size / (count x type bytes)."""
        row = self.rows[0]
        # nccl-tests since ~2.10 prints both columns for every op ("none" / -1 when they do not apply);
        # older versions print a column only for the ops that have it (redop: reductions, root: rooted)
        reduces = row.redop is not None and row.redop != "none"
        rooted = row.root is not None and row.root >= 0
        candidates = [o for o in OPS if (o in REDUCING_OPS) == reduces and (o in ROOTED_OPS) == rooted]
        element = TYPE_BYTES.get(row.type)
        if element and ranks and ranks > 1 and row.count:
            ratio = row.bytes / (row.count * element)
            if ratio == ranks:
                candidates = [o for o in candidates if o in PER_RANK_COUNT_OPS]
            elif ratio == 1:
                candidates = [o for o in candidates if o not in PER_RANK_COUNT_OPS]
        return candidates
