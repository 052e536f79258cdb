"""Read the output of NVIDIA's nccl-tests (``all_reduce_perf`` and friends) into frozen records, as
logs are found: with launcher prefixes, NCCL debug lines, several tests, rows kept by ``grep``.

Pure parsing: no printing, no simulation. What a log looks like (nccl-tests ``src/common.cu`` and
``src/util.cu``: ``writeDeviceReport`` / ``writeResultHeader`` / ``writeBenchmarkLine*`` /
``writeResultFooter``)::

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

Variants read: ``-g N`` runs (one process, N rank lines with one Pid) and MPI runs (one rank line per
process, several hosts); a device list cut to its last lines; older versions without ``redop`` /
``root`` columns, with an ``error`` column instead of ``#wrong`` and without the leading ``#`` or
``Group``; ``cputime`` instead of ``time`` (``-C 1``); per-iteration and timestamp columns of newer
versions; rows of 0 bytes (all_gather, reduce_scatter, alltoall below ranks x 16 B); several tests in
one file, and several sweeps in one table (``-d all``, ``-o all``): one :class:`NcclTestsRun` each;
rows without any header (kept by ``grep``: the columns are inferred from nccl-tests' standard
layouts); launcher prefixes and NCCL debug lines, also glued to a row (:mod:`nccl_tests_lines`); the
JSON file of ``-J`` (:mod:`nccl_tests_json`). Columns are found by their names in the column header.

Every line that looks like a data row but cannot be used is a :class:`LogWarning` at its FILE:LINE
(the row is left out and counted); so is any other text inside a table, a table that ends without
its footer, and an ``Avg bus bandwidth`` that the rows do not average to. ``strict=True`` makes the
first of them an :class:`InputError`; a note on a line used as it is (``LogWarning.note``) passes.
Lines are split on ``\\n`` only (a form feed or U+2028 inside a line moves no later line number); a
trailing ``\\r`` (CRLF) is dropped.

The operation comes from, in order: the binary name (``all_gather_perf`` in ``# Collective test
starting:`` or on a command line in the log), else the columns (reduction op, root) and the ratio of
size to count, which tells whole-buffer ops from per-rank ones; ``op=`` fills in and must agree. The
rank count: the device list, NCCL's ``Init COMPLETE`` lines, and the rows' own bus factor
(:mod:`nccl_tests_resolve`); ``gpus=`` fills in and must agree. NCCL settings: command lines and NCCL's
``NCCL_X set by environment to V`` lines; ``env=`` fills in and must agree.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

from simulator.errors import InputError, unknown_choice
from simulator.workloads.traces import nccl_tests_lines as lines
from simulator.workloads.traces.nccl_tests_records import (  # noqa: F401  (the public names, re-exported)
    OPS, PER_RANK_COUNT_OPS, REDOPS, REDUCING_OPS, ROOTED_OPS, TYPE_BYTES, LogWarning, NcclTestsRun, RankLine,
    Row, Timing, nccl_version_name)
from simulator.workloads.traces.nccl_tests_resolve import (
    Draft, Figures, NoUsableRows, RowDraft, algbw_ok, old_gather_figures, parse_env_flags, resolve)

TIME_COLUMNS = ("time", "cputime")
WRONG_COLUMNS = ("#wrong", "error")
"""Names of the per-placement columns: time (us, ``cputime`` with ``-C 1``), and the data check
(``#wrong`` elements, or ``error`` = max deviation in versions before ~2.10)."""

MAX_LOG_BYTES = 256 << 20
"""Largest log read (a real one is well under 1 MB; a bigger file is not nccl-tests output)."""

_RANK = re.compile(r"^#?\s*Rank\s+(\d{1,9})\s+(?:Group\s+\d+\s+)?Pid\s+(\d{1,12})\s+on\s+(\S+)\s+device\s+(\d{1,9})"
                   r"\s+\[([^\]]*)\]\s*(.*)$")
_RANK_LIKE = re.compile(r"^#?\s*Rank\s")
_NTHREAD = re.compile(r"^#?\s*nThread\s+(\d{1,9})\s+nGpus\s+(\d{1,9})\b")
_BINARY = re.compile(r"\b([a-z_]+)_perf(?:_mpi)?\b")
_WRAPPER_OP = re.compile(r"(?:^|\s)(?:-t|--test)[\s=]+(" + "|".join(sorted(OPS, key=len, reverse=True))
                         + r")(?:_perf)?(?=\s|$)")
"""The test a wrapper script runs, named by its flag (GKE's ``run_nccl_tests.sh -t all_gather``;
nccl-tests' own ``-t`` is a thread count, a number)."""
_STARTING = re.compile(r"Collective test (starting|concluded):\s*(\S+)")
_VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+)(?:.*\bnccl-library=(\d{1,9}))?")
_NCCL_ENV = re.compile(r"\b(NCCL_[A-Z0-9_]+)=([^\s;&|]+)")
_AVG_BUSBW = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*(\S+)")
_OUT_OF_BOUNDS = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\S+)")
_FAILURE = re.compile(r"\bTest (?:CUDA |NCCL )?failure \S+:\d+")
"""nccl-tests' own report of a failed call (``CUDACHECK``, ``NCCLCHECK``, ``TESTCHECK`` in its
``src/common.h``): the run stops there."""
_UNITS = re.compile(r"^#?\s*\(B\)\s+\(elements\)")
_PLACEMENTS = re.compile(r"^#?\s*out-of-place\b")
_NOT_ENV_NAMES = frozenset({"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"})


def parse_log(path: str | Path, op: str | None = None, *, gpus: int | None = None,
              env: Mapping[str, str] | Sequence[str] | None = None, strict: bool = False) -> tuple[NcclTestsRun, ...]:
    """Every test in an nccl-tests log file (text, or the JSON of ``-J``), each with at least one
    usable data row; see :func:`parse_text`."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a directory, not an nccl-tests log; name the log file", file=str(path))
    if not path.is_file():
        raise InputError("no such nccl-tests log", file=str(path))
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_LOG_BYTES + 1)
    except OSError as err:
        raise InputError(f"cannot read the log: {err.strerror}", file=str(path)) from None
    if len(data) > MAX_LOG_BYTES:
        raise InputError(f"larger than {MAX_LOG_BYTES >> 20} MiB: not an nccl-tests log", file=str(path))
    return parse_text(decode(data), str(path), op, gpus=gpus, env=env, strict=strict)


def decode(data: bytes) -> str:
    """Log bytes as text: UTF-16 (with a byte-order mark, or NULs every other byte, as PowerShell's
    ``>`` writes), else UTF-8 with undecodable bytes replaced."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", errors="replace")
    head = data[:4096]
    if len(head) >= 4 and head.count(0) * 3 >= len(head):
        even, odd = head[0::2].count(0), head[1::2].count(0)
        if odd > even * 4:
            return data.decode("utf-16-le", errors="replace")
        if even > odd * 4:
            return data.decode("utf-16-be", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def parse_text(text: str, path: str = "<text>", op: str | None = None, *, gpus: int | None = None,
               env: Mapping[str, str] | Sequence[str] | None = None, strict: bool = False) -> tuple[NcclTestsRun, ...]:
    """:func:`parse_log` on text already read; ``path`` names it in warnings and errors. ``op``,
    ``gpus`` and ``env`` (``K=V`` strings or a mapping) say what the log does not; where it does, they
    must agree. Each run's :attr:`~NcclTestsRun.warnings` lists the lines it could not use;
    ``strict`` makes the first such line an error."""
    if op is not None and op not in OPS:
        raise unknown_choice("nccl-tests operation", op, OPS, field="op")
    if gpus is not None and gpus < 1:
        raise InputError(f"must be at least 1, got {gpus}", field="gpus")
    flags = parse_env_flags(env)
    if not text.strip():
        raise InputError("the log is empty", file=path)
    if _is_json(text):
        from simulator.workloads.traces.nccl_tests_json import read_json

        try:
            drafts = read_json(_blank_comments(text), path)
        except InputError as not_json:  # a JSON line of a log collector (kubectl, fluentd) above a text table?
            drafts = _text_tables(text, path)
            if drafts is None:
                raise not_json from None
    else:
        drafts = _Reader(path).read(text)
    runs: list[NcclTestsRun] = []
    empty: list[NoUsableRows] = []
    for draft in drafts:
        try:
            runs += resolve(draft, op, gpus, flags, test=len(runs) + 1)
        except NoUsableRows as err:
            empty.append(err)
    if not runs:
        raise empty[0]
    for err in empty:  # a test with no usable row beside good ones: its warnings go to the run after it
        line = err.warnings[-1].line or 0
        i = next((i for i, run in enumerate(runs) if run.header_line > line), len(runs) - 1)
        runs[i] = replace(runs[i], warnings=tuple(sorted(runs[i].warnings + tuple(err.warnings),
                                                         key=lambda w: w.line or 0)))
    if strict:  # (a note on a line used as it is passes)
        found = sorted((w for run in runs for w in run.warnings if not w.note), key=lambda w: w.line or 0)
        if found:
            others = len(found) - 1
            more = f" (--strict; {others} more such line{'s' if others > 1 else ''})" if others else " (--strict)"
            raise InputError(found[0].message + more, file=found[0].file, line=found[0].line)
    return tuple(runs)


def _is_json(text: str) -> bool:
    """The first line that is not blank or a ``#`` comment opens a JSON object."""
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return stripped.startswith("{")
    return False


def _text_tables(text: str, path: str) -> list[Draft] | None:
    """The text reader's tests of ``text`` if it finds rows in them, else None."""
    try:
        drafts = _Reader(path).read(text)
    except InputError:
        return None
    return drafts if any(seg for draft in drafts for seg in draft.segments) else None


def _blank_comments(text: str) -> str:
    """``#`` comment lines before the JSON object emptied (line numbers kept)."""
    out = text.split("\n")
    for i, line in enumerate(out):
        if line.strip().startswith("#"):
            out[i] = ""
        elif line.strip():
            break
    return "\n".join(out)


@dataclass(frozen=True, slots=True)
class _Columns:
    """Where each field sits in a data row, found from the column header's names (or inferred)."""

    width: int
    """Fields a data row has (without a trailing timestamp)."""
    size: int
    count: int
    type: int
    redop: int | None
    root: int | None
    placements: tuple[tuple[int, int, int, int | None], ...]
    """(time, algbw, busbw, wrong) indices: out-of-place first, then in-place if present."""
    cputime: bool = False
    max_error: bool = False
    """The wrong column is old versions' ``error`` (the largest deviation from the expected result,
    ``%5.0le``), not a count of wrong elements."""


def _header_columns(names: list[str], path: str, line: int) -> _Columns:
    if names and names[-1] == "timestamp":
        names = names[:-1]
    where = {}
    for key in ("size", "count", "type"):
        if key not in names:
            raise InputError(f"column header has no {key!r} column; expected nccl-tests' "
                             "'size count type [redop] [root] time algbw busbw ...'", file=path, line=line)
        where[key] = names.index(key)
    times = [i for i, n in enumerate(names) if n in TIME_COLUMNS]
    placements = []
    for start in times[:2]:
        rest = names[start:]
        if rest[1:3] != ["algbw", "busbw"]:
            raise InputError(f"column {names[start]!r} is not followed by 'algbw busbw' in the column header",
                             file=path, line=line)
        wrong = start + 3 if len(rest) > 3 and rest[3] in WRONG_COLUMNS else None
        placements.append((start, start + 1, start + 2, wrong))
    if not placements:
        raise InputError("column header has no 'time' column; expected nccl-tests' "
                         "'size count type [redop] [root] time algbw busbw ...'", file=path, line=line)
    return _Columns(width=len(names), size=where["size"], count=where["count"], type=where["type"],
                    redop=names.index("redop") if "redop" in names else None,
                    root=names.index("root") if "root" in names else None,
                    placements=tuple(placements), cputime=names[times[0]] == "cputime",
                    max_error=any(w is not None and names[w] == "error" for *_, w in placements))


def _labels_before_row(fields: list[str], columns: _Columns | None) -> int | None:
    """How many fields a user's own columns put before a data row (``p4dn 1  1073741824  268435456
    float  sum ...``): 1-3 leading fields, the first not a number, after which the rest is a whole
    row of ``columns`` (without a header: of a layout nccl-tests prints); None if the line is not so."""
    if len(fields) < 3 or lines.NUMBER_LIKE.fullmatch(fields[0]) or fields[0].startswith(("#", "-")):
        return None
    for k in range(1, min(3, len(fields) - 2) + 1):
        rest = fields[k:]
        if not (lines.PLAIN_INT.fullmatch(rest[0]) and lines.PLAIN_INT.fullmatch(rest[1])):
            continue
        if len(rest) == columns.width if columns is not None else _inferred_columns(rest) is not None:
            return k
    return None


def _inferred_columns(fields: list[str]) -> tuple[_Columns, str] | None:
    """Columns of a row without a header, from nccl-tests' layouts: ``size count type [redop] [root]``
    then two placements of ``time algbw busbw #wrong`` (each followed by ``i_min i_max i_p99 i_cv%``
    with ``-I``), or one placement."""
    if len(fields) < 7 or fields[2] not in TYPE_BYTES:
        return None
    i, redop = 3, None
    if fields[3] in REDOPS:
        redop, i = 3, 4
    rest = len(fields) - i
    root = None
    if rest in (5, 9, 17):
        root, i, rest = i, i + 1, rest - 1
    if rest not in (4, 8, 16):
        return None
    per = 8 if rest == 16 else 4
    places = tuple((s, s + 1, s + 2, s + 3) for s in range(i, len(fields), per))
    old = any(_OLD_ERROR.fullmatch(fields[w]) for *_, w in places)
    names = ["size", "count", "type"] + (["redop"] if redop else []) + (["root"] if root else [])
    placement = f"time algbw busbw {'error' if old else '#wrong'}" + (" i_min i_max i_p99 i_cv%" if per == 8 else "")
    layout = " ".join(names) + " | " + " | ".join([placement] * len(places))
    return _Columns(width=len(fields), size=0, count=1, type=2, redop=redop, root=root, placements=places,
                    max_error=old), layout


def _cut_row_of(cols: _Columns, fields: list[str]) -> bool:
    """A row shorter than ``cols`` that reads as their first columns (its redop a reduction, its root
    a whole number): one of these rows cut short, not a row of another layout (where the root's
    ``-1`` would be read as a time)."""
    if len(fields) >= cols.width or max(cols.redop or 0, cols.root or 0) >= len(fields):
        return False
    return ((cols.redop is None or fields[cols.redop] in REDOPS)
            and (cols.root is None or lines.signed_int(fields[cols.root]) is not None))


_OLD_ERROR = re.compile(r"\d(?:\.\d+)?e-\d{2,3}|0e\+00")
"""Old nccl-tests' ``error`` column (``%5.0le`` of the largest deviation: ``2e-07``, ``0e+00``), which
today's ``#wrong`` (``%6g`` of a count: ``0``, ``12``, ``1e+06``) never prints."""


_DELTA_MAX = {"half": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "double": 1e-12}
"""Largest deviation per rank an old nccl-tests accepted (``DeltaMaxValue`` in ``src/common.cu``
before 2.13: 1e-2 for half and bfloat16, 1e-5 for float, 1e-12 for double, none for integers)."""


def _max_error_allowed(dtype: str, ranks: int) -> float:
    """The ``error`` above which an old nccl-tests counted a row wrong: ``DeltaMaxValue(type) *
    (nranks - 1)`` (``CheckData`` in ``src/common.cu`` before 2.13)."""
    return _DELTA_MAX.get(dtype, 0.0) * max(1, ranks - 1)


def _unmarkdown(line: str) -> str:
    """``line`` as nccl-tests printed it where it was pasted into a Markdown table (``1024 | 512 |
    half | sum | ...``, its ``-- | --`` rule line, a header escaped as a backslash and ``#``): the cells' text
    joined by spaces; the rule line is nothing."""
    if line.startswith("\\#"):
        line = line[1:]
    if line.count("|") < 4:  # one '|' is two tables side by side (_left_table), not Markdown
        return line
    if not line.strip("|-: \t"):
        return ""
    return " ".join(cell.strip() for cell in line.strip().strip("|").split("|"))


def _left_table(fields: list[str]) -> list[str]:
    """The fields before a lone ``|``: the left table of two pasted side by side."""
    return fields[:fields.index("|")] if "|" in fields else fields


def _placement_end(cols: _Columns, i: int) -> int:
    """The fields a row needs up to the end of placement ``i`` (its #wrong, else its busbw)."""
    t, a, b, w = cols.placements[i]
    return (w if w is not None else b) + 1


def _blank_redop(fields: list[str], cols: _Columns) -> bool:
    """The row printed its redop as nothing under a header that names one: old nccl-tests'
    alltoall (``TimeTest(..., "", -1)`` before the root column), so the time stands where the redop
    should and no root column follows."""
    return (cols.redop is not None and cols.root is None and cols.redop < len(fields)
            and lines.decimal(fields[cols.redop]) is not None)


def _wrong_ok(text: str) -> bool:
    """``#wrong`` as nccl-tests prints it: a count (``%6g``), ``N/A`` with ``-c 0``, or old versions'
    max error (``0e+00``)."""
    return text == "N/A" or lines.decimal(text) is not None


class _Test:
    """One test's lines while they are read."""

    def __init__(self, path: str) -> None:
        self.draft = Draft(path)
        self.columns: _Columns | None = None
        self.inferred = False
        self.state = "preamble"
        """preamble (before the column header), table (rows), closed (after the footer)."""
        self.partial: tuple[list[str], int] | None = None
        """A row cut by NCCL debug text glued after its first fields (or after each of its parts); the rest
        follows."""
        self.printed_busbw: list[tuple[float, float]] | None = []
        """Every row's printed busbw (value, half digit), for the ``Avg bus bandwidth`` check; None
        once a row cannot give them."""
        self.avg_line: int | None = None
        self.avg_half = 0.0
        self.footer = False
        self.last_row_line: int | None = None
        self.started_line: int | None = None
        self.side_by_side = False
        """Rows of two tables side by side were seen (warned once)."""
        self.old_algbw_line: int | None = None
        """The first row whose algbw is old nccl-tests' all_gather / reduce_scatter one (warned once)."""
        self.labels: tuple[str, ...] | None = None
        """The fields a user's script put before the last such row's size (warned when they change)."""

    @property
    def has_table(self) -> bool:
        return self.columns is not None

    def warn(self, line: int | None, message: str, row: bool = False, note: bool = False) -> None:
        self.draft.warn(line, message, row, note)

    def _ranks(self) -> int:
        """The ranks this test's header names so far (its rank lines, else threads x GPUs; 2 without)."""
        d = self.draft
        return max(len(d.rank_lines), (d.threads or 0) * (d.gpus_per_thread or 0), 2)

    def add_row(self, fields: list[str], number: int, glued: bool) -> bool:
        """Read a data row into this test; True if it starts another test instead (rows without a
        header whose sizes start again, or whose type or reduction changes: another run's rows)."""
        cols = self.columns
        assert cols is not None
        fields = lines.without_timestamp(fields)
        if self.partial is not None:
            start, first = self.partial
            self.partial = None
            if len(start) + len(fields) == cols.width:
                fields, number = start + fields, first
            elif len(start) + len(fields) < cols.width and glued:  # cut again: nccl-tests writes a row in 3 parts
                self.partial = (start + fields, first)
                return False
            else:
                self.warn(first, f"data row cut short by NCCL debug text: {len(start)} fields, the columns "
                                 f"({self.draft.columns_from}) name {cols.width}", row=True)
                self.printed_busbw = None
        if len(fields) < cols.width and glued:
            self.partial = (fields, number)
            return False
        self.last_row_line = number
        if len(fields) == cols.width - 1 and _blank_redop(fields, cols):
            fields = fields[:cols.redop] + ["none"] + fields[cols.redop:]
            if self.draft.blank_redop is None:
                self.draft.blank_redop = number
        cut = None
        if len(fields) < cols.width and len(cols.placements) > 1 and len(fields) >= _placement_end(cols, 0):
            cut, cols = len(fields), replace(cols, width=_placement_end(cols, 0), placements=cols.placements[:1])
            fields = fields[:cols.width]
        if len(fields) != cols.width:
            why = "cut short?" if len(fields) < cols.width else "text glued to it?"
            self.warn(number, f"data row has {len(fields)} fields, the columns ({self.draft.columns_from}) "
                              f"name {cols.width}: {why}", row=True)
            self.printed_busbw = None
            return False
        if cut is not None:
            self.printed_busbw = None
        found = self._row(fields, number, cols)
        if isinstance(found, str):
            self._note_busbw(fields, cols)
            self.warn(number, f"row left out: {found}", row=True)
            if self.inferred and not any(self.draft.segments):
                self.columns = None  # inferred from this very row: infer again from the next
            return False
        if self._place(found):
            return True
        if cut is not None:  # said once the row is kept (a row left out says why instead)
            self.warn(number, f"data row cut short in its in-place columns ({cut} of {self.columns.width} "
                              "fields): its out-of-place ones are kept")
        self._note_busbw(fields, cols)
        return False

    def _placement(self, place: str, columns: tuple[int, int, int, int | None], fields: list[str], size: int,
                   per_rank: int, dtype: str, cols: _Columns, number: int) -> tuple[Timing, Figures] | str:
        """One placement's figures (time, algbw, busbw, #wrong) of a row, or why they cannot be used."""
        t, a, b, w = columns
        read = {}
        for what, index in (("time", t), ("algbw", a), ("busbw", b)):
            value = lines.decimal(fields[index])
            if value is None:
                return (f"{place} {what} {fields[index]!r} is not a non-negative number as nccl-tests prints "
                        "it (such as 52.43 or 1.2e+04)")
            read[what] = value
        if read["time"][0] <= 0 and size > 0:
            return f"{place} time must be positive (us), got {fields[t]}"
        wrong = fields[w] if w is not None else None
        if wrong is not None and not _wrong_ok(wrong):
            return f"{place} #wrong {wrong!r} is not a count, N/A or an error figure"
        f = Figures(*read["time"], *read["algbw"], *read["busbw"], cputime=cols.cputime)
        if not algbw_ok(size, f):
            if (old := old_gather_figures(size, per_rank, f)) is None:
                return (f"{place} algbw {fields[a]} GB/s is not size / time = {size} B / {fields[t]} us = "
                        f"{size / read['time'][0] / 1e3:.4g} GB/s, to the printed digits")
            f, read["algbw"] = old, (old.algbw, old.algbw_half)
            if self.old_algbw_line is None:
                self.old_algbw_line = number
                self.warn(number, "algbw is (n - 1) / n x size / time and busbw equals it, as nccl-tests "
                                  "printed all_gather and reduce_scatter before commit ec1b5e2 (June 2020, "
                                  "first in v2.9.0): read as algbw = size / time, busbw as printed (the "
                                  "same as since)", note=True)
        if wrong not in (None, "N/A") and cols.max_error:
            limit = _max_error_allowed(dtype, self._ranks())
            if float(wrong) > limit:
                self.warn(number, f"{place} error is {wrong}, above nccl-tests' tolerance {limit:.0e} for "
                                  f"{dtype}: the results of this row were wrong (its time is kept)", note=True)
        elif wrong not in (None, "N/A") and float(wrong) > 0:
            self.warn(number, f"{place} #wrong is {wrong}: nccl-tests found wrong results in this row "
                              "(its time is kept)", note=True)
        return Timing(read["time"][0], read["algbw"][0], read["busbw"][0], wrong), f

    def _note_busbw(self, fields: list[str], cols: _Columns) -> None:
        if self.printed_busbw is None:
            return
        for _, _, b, _ in cols.placements:
            value = lines.decimal(fields[b])
            if value is None:
                self.printed_busbw = None
                return
            self.printed_busbw.append(value)

    def _row(self, fields: list[str], number: int, cols: _Columns) -> RowDraft | str:
        """The row, or why it cannot be used."""
        size = lines.plain_int(fields[cols.size])
        if size is None:
            return f"size {fields[cols.size]!r} is not a whole number of bytes (nccl-tests prints plain digits)"
        count = lines.plain_int(fields[cols.count])
        if count is None:
            return f"count {fields[cols.count]!r} is not a whole number of elements (plain digits)"
        dtype = fields[cols.type]
        if dtype not in TYPE_BYTES:
            return f"unknown data type {dtype!r}; nccl-tests prints one of {', '.join(sorted(TYPE_BYTES))}"
        redop = fields[cols.redop] if cols.redop is not None else None
        if redop is not None and redop not in REDOPS:
            return f"unknown reduction op {redop!r}; nccl-tests prints one of {', '.join(sorted(REDOPS))}"
        root = None
        if cols.root is not None:
            root = lines.signed_int(fields[cols.root])
            if root is None or root < -1:
                return f"root {fields[cols.root]!r} is not a rank (a whole number, -1 for none)"
        element = TYPE_BYTES[dtype]
        per_rank = 0
        if size or count:
            if count == 0 or size % (count * element):
                return (f"size {size} B is not a whole multiple of count {count} x {element} B ({dtype}): "
                        "one of them garbled?")
            per_rank = size // (count * element)
        timings, figures = [], []
        for place, columns in zip(("out-of-place", "in-place"), cols.placements):
            found = self._placement(place, columns, fields, size, per_rank, dtype, cols, number)
            if isinstance(found, str):
                if not timings:
                    return found
                self.warn(number, f"{found}: the row's out-of-place columns are kept")
                break
            timings.append(found[0])
            figures.append(found[1])
        row = Row(line=number, bytes=size, count=count, type=dtype, redop=redop, root=root,
                  out_of_place=timings[0], in_place=timings[1] if len(timings) > 1 else None)
        return RowDraft(row, tuple(figures), per_rank)

    def _place(self, found: RowDraft) -> bool:
        """Append the row to its sweep: a new one when type, redop or root change or the sizes start
        again; a size that falls back without starting again is left out. Without a header a new
        sweep is another test: True, and nothing appended."""
        segments = self.draft.segments
        row = found.row
        key = (row.type, row.redop, row.root)
        seg = segments[-1] if segments else None
        if seg and (seg[-1].row.type, seg[-1].row.redop, seg[-1].row.root) != key:
            # a sweep of this key that this row continues (the row between was garbled), else a new one
            seg = next((s for s in segments if s and (s[-1].row.type, s[-1].row.redop, s[-1].row.root) == key
                        and s[-1].row.bytes < row.bytes), None)
        elif seg:
            sized = [d for d in seg if d.row.bytes > 0]
            if row.bytes == 0 and sized:
                self.warn(row.line, f"row left out: 0 B after {sized[-1].row.bytes} B (line {sized[-1].row.line}); "
                                    "0 B rows come first, before the sizes grow", row=True)
                return False
            if sized and row.bytes < sized[-1].row.bytes:
                if self.inferred and row.bytes <= sized[0].row.bytes:
                    seg = None  # the sizes start again: another test's rows (kept by grep from several)
                else:
                    self.warn(row.line, f"row left out: size {row.bytes} B does not grow from the row before "
                                        f"({sized[-1].row.bytes} B on line {sized[-1].row.line}); a garbled size?",
                              row=True)
                    return False
        if seg is None:
            if self.inferred and segments:
                return True
            seg = []
            segments.append(seg)
        seg.append(found)
        return False

    def flush_partial(self) -> None:
        """A row cut by NCCL debug text whose rest never came: left out."""
        if self.partial is not None:
            start, first = self.partial
            self.partial = None
            self.printed_busbw = None
            self.warn(first, f"data row cut short by NCCL debug text: {len(start)} fields and nothing after", row=True)

    def close(self, number: int) -> None:
        """End of this test's table (its footer or a new test's start)."""
        self.flush_partial()
        self._drop_odd_ratios()
        self._drop_strays()
        ended = self.footer or self.draft.failed is not None  # (a failure is warned where it is reported)
        if self.columns is not None and not self.inferred and not ended and self.last_row_line:
            self.warn(self.last_row_line, "the table ends here without nccl-tests' footer ('# Out of bounds "
                                          "values', '# Avg bus bandwidth'): is the log cut short?")
        self._check_average()

    def _drop_odd_ratios(self) -> None:
        """Every sized row of one sweep has the same size / (count x type bytes) (1, or the rank count
        of a whole-array op): the rows that differ from most of their sweep's (the first row's on a
        tie) have a garbled size or count, and are left out, so one garbled first row costs only itself."""
        for seg in self.draft.segments:
            sized = [d for d in seg if d.row.bytes > 0]
            if len({d.per_rank for d in sized}) < 2:
                continue
            votes = Counter(d.per_rank for d in sized)
            top = max(votes.values())
            usual = next(d for d in sized if votes[d.per_rank] == top)
            if sum(1 for n in votes.values() if n == top) > 1:
                usual = sized[0]
            for d in sized:
                if d.per_rank != usual.per_rank:
                    others = votes[usual.per_rank]
                    self.warn(d.row.line, f"row left out: size / (count x type bytes) is {d.per_rank}, where {others} "
                                          f"other row{'s' if others > 1 else ''} of this sweep "
                                          f"{'have' if others > 1 else 'has'} {usual.per_rank} (line "
                                          f"{usual.row.line}): a garbled size or count?", row=True)
            seg[:] = [d for d in seg if d.row.bytes == 0 or d.per_rank == usual.per_rank]

    def _drop_strays(self) -> None:
        """A lone row whose type, redop or root differs from the rows of one sweep around it is a
        garbled row, not a sweep of its own: left out."""
        segments = self.draft.segments
        for seg in list(segments):
            if len(seg) != 1:
                continue
            line = seg[0].row.line
            if any(other is not seg and other and other[0].row.line < line < other[-1].row.line for other in segments):
                row = seg[0].row
                self.warn(line, f"row left out: its type, redop, root ({row.type}, {row.redop}, {row.root}) differ "
                                "from those of the rows around it: a garbled field?", row=True)
                segments.remove(seg)

    def _check_average(self) -> None:
        """``Avg bus bandwidth`` is the mean of every busbw printed (``writeResultFooter``)."""
        avg, values = self.draft.avg_busbw, self.printed_busbw
        if avg is None or not values or self.avg_line is None:
            return
        mean = sum(v for v, _ in values) / len(values)
        slack = sum(h for _, h in values) / len(values) + self.avg_half + 1e-9 * max(1.0, avg)
        if abs(mean - avg) > slack:
            self.warn(self.avg_line, f"Avg bus bandwidth {avg:g} GB/s, but the {len(values)} busbw figures of the "
                                     f"table average {mean:.6g}: a row missing or altered?")


class _Reader:
    """Feeds a log's lines, one at a time, to the test they belong to."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.done: list[_Test] = []
        self.cur = _Test(path)
        self.foreign_header: tuple[int, list[str]] | None = None
        """(line, missing names) of a table header that names size, time and busbw but not nccl-tests'
        count or type (another benchmark's), for the warnings of the rows under it."""

    def read(self, text: str) -> list[Draft]:
        number = 0
        for number, raw in enumerate(text.split("\n"), start=1):
            self.feed(raw[:-1] if raw.endswith("\r") else raw, number)
        self.cur.close(number)
        self.done.append(self.cur)
        return self._drafts()

    def _drafts(self) -> list[Draft]:
        with_rows = [t for t in self.done if t.has_table]
        if not with_rows:
            found = [w for t in self.done for w in t.draft.warnings]
            if failed := next((t.draft for t in self.done if t.draft.failed is not None), None):
                raise InputError(failed.failed_before_rows(), file=self.path, line=failed.failed[0])
            raise InputError("no nccl-tests column header ('#  size  count  type ... time  algbw  busbw') "
                             "nor data rows found; is this the output of an nccl-tests binary such as "
                             "all_reduce_perf?" + (f" (first unusable line: {found[0]})" if found else ""),
                             file=self.path)
        # a test without a table (it stopped before its header) hands its warnings to the next one
        carried: list[LogWarning] = []
        for t in self.done:
            if not t.has_table:
                if t.started_line is not None:
                    carried.append(LogWarning(self.path, t.started_line, "this test has no table (it stopped "
                                                                          "before its first row?)"))
                carried += t.draft.warnings
                continue
            t.draft.warnings[:0] = carried
            carried = []
        if carried:
            with_rows[-1].draft.warnings += carried
        return [t.draft for t in with_rows]

    def next_test(self, number: int) -> _Test:
        self.cur.close(number)
        self.done.append(self.cur)
        self.cur = _Test(self.path)
        return self.cur

    def preamble(self, number: int, taken: bool = False) -> _Test:
        """The test a preamble line (version, binary, nThread, rank, command line) belongs to: a new
        one once the current test has a table, or already holds what this line sets."""
        if self.cur.state != "preamble" or taken:
            return self.next_test(number)
        return self.cur

    def feed(self, raw: str, number: int) -> None:
        cleaned = lines.clean(raw)
        if cleaned.debug:
            self._debug(cleaned.debug, number)
        line = _unmarkdown(cleaned.text)
        if not line:
            return
        cur = self.cur
        if m := _STARTING.search(line):
            if m.group(1) == "starting":
                test = self.preamble(number, taken=cur.draft.binary_definitive)
                test.draft.saw_binary(m.group(2), number, definitive=True)
                test.started_line = test.started_line or number
            else:
                if cur.draft.binary is None:  # the only place a pasted table's binary may be named
                    cur.draft.saw_binary(m.group(2), number, definitive=True)
                cur.footer = True
                cur.state = "closed" if cur.has_table else cur.state
            return
        if m := _NTHREAD.match(line):
            test = self.preamble(number, taken=cur.draft.threads is not None)
            test.draft.threads, test.draft.gpus_per_thread = int(m.group(1)), int(m.group(2))
            test.started_line = test.started_line or number
            return
        if m := _VERSION.match(line):
            test = self.preamble(number, taken=cur.draft.version is not None)
            test.draft.version = m.group(1)
            if m.group(2):
                test.draft.nccl_version = nccl_version_name(int(m.group(2)))
            test.started_line = test.started_line or number
            return
        if m := _RANK.match(line):
            rank = RankLine(number, int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4)), m.group(6).strip())
            test = self.preamble(number)
            if rank.rank in test.draft.rank_lines:
                first = test.draft.rank_lines[rank.rank]
                raise InputError(
                    f"rank {rank.rank} is listed twice (also line {first.line}): each process ran its own test, "
                    "as when nccl-tests built without MPI=1 is started by mpirun; rebuild with MPI=1, or keep one "
                    "process's output", file=self.path, line=number)
            test.draft.rank_lines[rank.rank] = rank
            return
        if _RANK_LIKE.match(line):
            self.preamble(number).warn(number, "device line not understood (expected '#  Rank  r Group g Pid p "
                                               "on host device d [bus] name'); its rank is not counted")
            return
        if m := _AVG_BUSBW.match(line):
            value = lines.decimal(m.group(1))
            if value is None:
                cur.warn(number, f"Avg bus bandwidth {m.group(1)!r} is not a number")
            else:
                cur.draft.avg_busbw, cur.avg_half = value[0], value[1] + 5e-6 * value[0]  # printed with %g
                cur.avg_line = number
            cur.footer = True
            cur.state = "closed" if cur.has_table else cur.state
            return
        if "failure" in line and _FAILURE.search(line):
            if cur.draft.failed is None:
                cur.draft.failed = (number, _excerpt(line, 72))
                cur.flush_partial()
                rows = sum(len(seg) for seg in cur.draft.segments)
                kept = f"the {rows} row{'s' if rows != 1 else ''} before it kept" if rows else "no row before it"
                cur.warn(number, f"nccl-tests reports a failure, {cur.draft.failed[1]}: the run stopped here ({kept})")
            cur.state = "closed" if cur.has_table else cur.state
            return
        if _OUT_OF_BOUNDS.match(line):
            cur.draft.out_of_bounds = line.split(":", 1)[1].strip()
            cur.footer = True
            return
        tokens = _left_table(line.lstrip("#").split())
        if {"size", "count", "type", "busbw"} <= set(tokens):
            stray = tokens[:tokens.index("size")]
            if stray:  # a garbled header ('0  size count ...'): read from 'size' on, and say so
                tokens = tokens[tokens.index("size"):]
            test = self.next_test(number) if cur.has_table else cur
            if stray:
                test.warn(number, f"column header with {' '.join(stray)!r} before 'size' (expected "
                                  "'#  size  count  type ...'): read from 'size' on", note=True)
            test.columns = _header_columns(tokens, self.path, number)
            test.draft.header_line = number
            test.draft.columns_from = f"column header, line {number}"
            test.state = "table"
            return
        if self.foreign_header is None and "size" in tokens and {"size", "time", "busbw"} <= (
                lower := {t.lower() for t in tokens}):
            missing = [k for k in ("count", "type") if k not in lower]
            self.foreign_header = (number, missing)  # another benchmark's table (mscclpp-test has no type)
        if line.startswith("#") or _UNITS.match(line) or _PLACEMENTS.match(line):
            if cur.state == "preamble":
                self._command(line, number)
            return
        fields = line.split()
        if "|" in fields:
            fields = _left_table(fields)
            if not cur.side_by_side:
                cur.side_by_side = True
                cur.warn(number, "two tables side by side ('|' between them, as a diff shows them): the left one "
                                 "is read")
        if not lines.is_data_like(fields) and (cur.state == "table" or cur.columns is None) and (
                k := _labels_before_row(fields, cur.columns)):
            if tuple(fields[:k]) != cur.labels:
                again = "" if cur.labels is None else f" (before: {' '.join(cur.labels)!r}: rows of another setup?)"
                cur.labels = tuple(fields[:k])
                cur.warn(number, f"{' '.join(cur.labels)!r} before the row's size{again}: columns added in front of "
                                 "nccl-tests' own (a script's label?); this row and those like it read from the size on",
                         note=True)
            fields = fields[k:]
        if lines.is_data_like(fields) and cur.partial is None and lines.is_prose(fields):
            cur.warn(number, f"text starting with a number ({' '.join(fields[:4])} ...): mostly words, so not "
                             "read as a data row")
            return
        if lines.is_data_like(fields) or (cur.partial is not None and lines.DECIMAL.fullmatch(fields[0])):
            if cur.state == "closed":
                cur = self.next_test(number)
            elif cur.inferred and cur.columns is not None and cur.partial is None and any(cur.draft.segments):
                width = len(lines.without_timestamp(fields))
                other = _inferred_columns(lines.without_timestamp(fields)) if width != cur.columns.width else None
                cut = len(cur.columns.placements) > 1 and _placement_end(cur.columns, 0) <= width < cur.columns.width
                cut = cut or _cut_row_of(cur.columns, lines.without_timestamp(fields))
                if other is not None and not cut:  # (a row cut short stays: add_row says so)
                    cur = self.next_test(number)  # rows of another layout without a header: another log's
            if cur.columns is None:
                inferred = _inferred_columns(lines.without_timestamp(fields))
                if inferred is None:
                    if self.foreign_header is not None:
                        at, missing = self.foreign_header
                        names = " or ".join(map(repr, missing))
                        said = f"the column header at line {at} is not nccl-tests' (no {names} column: another tool?)"
                    else:
                        said = "the log has no column header to say"
                    cur.warn(number, f"row left out: {len(fields)} fields fit none of nccl-tests' column layouts "
                                     f"('size count type [redop] [root]' and 4 or 8 fields per placement), and {said}",
                             row=True)
                    return
                cur.columns, layout = inferred
                cur.inferred = True
                cur.draft.header_line = number
                cur.draft.columns_from = f"no header; inferred from line {number}: {layout}"
                cur.state = "table"
            if cur.add_row(fields, number, cleaned.glued):
                columns, columns_from = cur.columns, cur.draft.columns_from
                cur = self.next_test(number)
                cur.columns, cur.inferred, cur.state = columns, True, "table"
                cur.draft.header_line, cur.draft.columns_from = number, columns_from
                cur.add_row(fields, number, cleaned.glued)
            return
        if cur.state == "table" and not (_BINARY.search(line) or _NCCL_ENV.search(line)):
            cur.flush_partial()
            cur.warn(number, f"not a data row of the table (line {cur.draft.header_line}): {_excerpt(line)}")
            return
        self._command(line, number)  # a command line (in a table: the next test's, the table was cut)

    def _command(self, line: str, number: int) -> None:
        """A command line or comment before a table: the binary and NCCL_* settings it names."""
        settings = [(k, v.strip("'\""), number) for k, v in _NCCL_ENV.findall(line) if k not in _NOT_ENV_NAMES]
        m = _BINARY.search(line)
        if m is None and (wrapped := _WRAPPER_OP.search(line)):  # a wrapper's '-t all_gather'
            self.preamble(number).draft.saw_binary(f"{wrapped.group(1)}_perf", number, definitive=False)
        if not settings and not m:
            return
        test = self.preamble(number)
        test.draft.env += settings
        if m:
            test.draft.saw_binary(m.group(0), number, definitive=False)
            if test.draft.launched is None and (found := lines.launched_ranks(line, *m.span())) is not None:
                test.draft.launched = (found[0], found[1], number)

    def _debug(self, text: str, number: int) -> None:
        """An NCCL debug line: settings, version and communicator size; the rest is NCCL's business."""
        cur = self.cur

        def draft() -> Draft:  # a line after a closed table belongs to the next test
            return (self.preamble(number) if cur.state == "closed" else cur).draft

        found = lines.nccl_env(text)
        if found and found[0] not in _NOT_ENV_NAMES:
            draft().env.append((found[0], found[1], number))
        if version := lines.nccl_version(text):
            draft().nccl_version = version
        if (nodes := lines.nccl_nodes(text)) is not None:
            draft().info_nodes.append((*nodes, number))
        if "Init COMPLETE" in text and (n := lines.nccl_nranks(text)):
            draft().info_nranks.append((n, number))


def _excerpt(line: str, width: int = 60) -> str:
    text = line if len(line) <= width else line[: width - 3] + "..."
    return repr(text)
