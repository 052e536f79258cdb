"""One line of a log as found: launcher prefixes taken off, NCCL's debug text told apart from
nccl-tests' own, and the number spellings nccl-tests prints.

What launchers add in front of every line: Open MPI ``--tag-output`` (``[1,0]<stdout>:``), Ray's
worker tags (``(head, rank=0, pid=3808)``, as SkyPilot runs jobs), Slurm
``srun --label`` (``0: ``), pdsh/clush and ``mpirun`` host tags (``node001: ``, ``[node001] ``), MPICH
and Intel MPI ranks (``[0] ``), the quote marks of a log pasted into a reply (``> ``), and timestamps
(``2024-05-01T12:00:00.123Z``, ``[2024-05-01 12:00:00]``, ``Mon May  1 12:00:00 2024``, ``12:00:00``).
NCCL's debug lines (``NCCL_DEBUG=INFO``) look like ``[timestamp] host:pid:tid [dev] NCCL INFO text`` and
``... [dev] file.cc:123 NCCL WARN text`` (``ncclDebugLog`` in NCCL ``src/debug.cc``); interleaved with
nccl-tests' output, one may be glued to the end of a data row, or cut a row in two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from simulator.workloads.traces.nccl_tests_records import REDOPS, TYPE_BYTES

_TIMESTAMP = (r"(?:\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?"
              r"|\[?[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}\]?"
              r"|\[?[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}\]?"
              r"|\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?)")
_PREFIXES = (
    re.compile(r"\[\d+,\d+\]<std(?:out|err|diag)>:\s?"),   # Open MPI --tag-output
    re.compile(r"\([\w.-]+(?:,\s*[\w.]+=[^,()\s]*)*\)\s"),        # Ray workers: (head, rank=0, pid=3808)
    re.compile(_TIMESTAMP + r"(?=[\s\[<#]|$)\s*"),          # timestamps (also Open MPI --timestamp-output)
    re.compile(r"\d+:\s"),                                 # srun --label
    re.compile(r"\[\d+\]\s"),                              # MPICH / Intel MPI -prepend-rank
    re.compile(r"\[[A-Za-z][\w.-]*\]:?\s"),                # [host] tags
    re.compile(r"[A-Za-z][\w./-]*:\s"),                    # host: (pdsh, clush, mpirun tags), srun:
    re.compile(r">+(?:\s|$)"),                             # a log quoted in a mail or an issue reply
)
"""Prefixes taken off the start of a line, as often as they come (up to :data:`MAX_PREFIXES`)."""
_PREFIX = re.compile("|".join(f"(?:{p.pattern})" for p in _PREFIXES))
"""The first of :data:`_PREFIXES` that matches, in one match (none of them matches nothing)."""

MAX_PREFIXES = 6

_TIMESTAMP_TAG = re.compile(_TIMESTAMP)

_NCCL_MARK = re.compile(r"NCCL (?:INFO|WARN|TRACE|CALL|ABORT)\b|NCCL version \d")
_DEBUG_START = re.compile(
    r"(?:\[\d{4}-\d{2}-\d{2}[^\]]*\]\s*)?"          # NCCL_DEBUG_TIMESTAMP_FORMAT
    r"(?P<host>[A-Za-z][\w.-]*):\d+:\d+\s+\[\d+\]\s+(?:\S+:\d+\s+(?:\([^)]*\)\s+)?)?"
    r"(?:[\d.]+\s+\S+:\d+\s+)?NCCL ")
"""Where an NCCL debug line starts inside a longer line (its hostname must start with a letter to be
told apart from the digits of a data row it is glued to)."""

_SET_BY_ENV = re.compile(r"\b(NCCL_[A-Z0-9_]+) set by environment to (\S+?)\.?$")
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_NRANKS = re.compile(r"\bnranks (\d{1,9})\b")
_NODES = re.compile(r"\bnRanks (\d{1,9}) nNodes (\d{1,9}) localRanks (\d{1,9})(?: localRank \d{1,9})?(?: MNNVL (\d))?")

PLAIN_INT = re.compile(r"\d{1,20}")
"""How nccl-tests prints sizes and counts (``%12li``): digits only (at most 20: a size_t)."""
_SIGNED_INT = re.compile(r"-?\d{1,9}")
DECIMAL = re.compile(r"\d{1,40}(?:\.\d{0,40})?(?:[eE][-+]?\d{1,4})?")
"""How nccl-tests prints time, algbw and busbw (``%7.2f`` ... ``%7.1e``, never negative)."""
NUMBER_LIKE = re.compile(r"[-+]?(?:\d[\d,_]*(?:\.\d*)?|\.\d+|0[xX][0-9a-fA-F]+)(?:[eE][-+]?\d+)?")
"""A first field in any spelling of a number (``-8``, ``1e3``, ``0x100``, ``1,024``): the line was meant
as a data row, so when it cannot be read it is reported, not skipped as text."""
_ROW_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True, slots=True)
class CleanLine:
    """A line with its launcher prefix taken off, split into nccl-tests text and NCCL debug text."""

    text: str
    """What nccl-tests printed (empty for a whole NCCL debug line)."""
    debug: str | None
    """NCCL debug text found on the line (a whole INFO/WARN line, or one glued after ``text``)."""
    glued: bool = False
    """True when debug text was glued to the end of nccl-tests text."""


def strip_prefixes(line: str) -> str:
    """``line`` without launcher prefixes and surrounding white space."""
    return _strip(line)[0]


def _strip(line: str) -> tuple[str, tuple[str, ...]]:
    """``line`` without launcher prefixes, and the bracketed rank or host tags among them."""
    line = line.strip()
    tags = []
    for _ in range(MAX_PREFIXES):
        if line.startswith("#"):
            break
        m = _PREFIX.match(line)
        if not m:
            break
        tag = m.group().strip()
        if tag.startswith("[") and not _TIMESTAMP_TAG.fullmatch(tag):
            tags.append(tag)
        line = line[m.end():].lstrip()
    return line, tuple(tags)


def _untag(text: str, tags: tuple[str, ...]) -> str:
    """``text`` without the line's own rank or host tags inside it: a launcher that labels each
    write (MPICH's ``-prepend-rank``) labels again where nccl-tests printed a row in pieces
    (``... sum  -1[0]    1626.5  0.64 ...``, NVIDIA/nccl issue 1453)."""
    for tag in tags:
        if tag in text:
            text = text.replace(tag, " ")
    return text


def clean(raw: str) -> CleanLine:
    """``raw`` (one line, without its newline) cleaned: prefixes off, NCCL debug text apart."""
    line, tags = _strip(raw)
    mark = _NCCL_MARK.search(line)
    if mark is None:
        return CleanLine(_untag(line, tags).strip(), None)
    start = None
    for m in _DEBUG_START.finditer(line):
        if m.end() > mark.start() - 1 and m.start() <= mark.start():
            start = m.start()
            break
    if start is None:
        start = mark.start()
    # a hostname glued to a digit: "0host-a:42:43 [0] NCCL INFO" -> cut before the letter
    before = _untag(line[:start], tags).strip()
    if not before:
        return CleanLine("", line)
    return CleanLine(before, line[start:], glued=True)


def nccl_env(debug: str) -> tuple[str, str] | None:
    """``NCCL_X set by environment to V`` (``ncclGetEnv`` users and ``NCCL_PARAM`` in NCCL
    ``src/misc/param.cc``, which ends integers with a period) as (name, value)."""
    m = _SET_BY_ENV.search(debug.rstrip())
    return (m.group(1), m.group(2)) if m else None


def nccl_version(debug: str) -> str | None:
    """``NCCL version 2.21.5+cuda12.4`` (``showVersion`` in NCCL ``src/init.cc``) as ``2.21.5``."""
    m = _NCCL_VERSION.search(debug)
    return m.group(1) if m else None


def nccl_nranks(debug: str) -> int | None:
    """The communicator size of ``comm 0x... rank 0 nranks 8 ... - Init COMPLETE`` lines."""
    if "NCCL INFO" not in debug:
        return None
    m = _NRANKS.search(debug)
    return int(m.group(1)) if m else None


def nccl_nodes(debug: str) -> tuple[int, int, int, int | None] | None:
    """(nRanks, nNodes, localRanks, MNNVL or None) of NCCL's ``comm 0x... rank 0 nRanks 16 nNodes 2
    localRanks 8 localRank 0 MNNVL 0`` line (src/init.cc, ``INFO(NCCL_INIT, ...)``, NCCL 2.20 on;
    MNNVL from 2.21): how NCCL grouped the ranks into nodes."""
    if "NCCL INFO" not in debug:
        return None
    m = _NODES.search(debug)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), None if m.group(4) is None else int(m.group(4))


_LAUNCHERS = frozenset({"mpirun", "mpiexec", "orterun", "srun", "mpirun.mpich", "mpirun.openmpi", "mpiexec.hydra",
                        "prun", "aprun", "jsrun"})
_LAUNCH_COUNT = re.compile(r"(?:^|\s)(?:-np|--np|-n|--n|--ntasks)(?:\s+|=)(\d{1,7})(?=\s|$)")
_BEFORE_BINARY = re.compile(r"\S*=\S*|\S*[$#>%]|\+|env|sudo|time|exec|numactl|taskset")
"""What a line that runs the binary itself may hold before it: a shell prompt (``$``, ``root@h:~#``),
``set -x``'s ``+``, ``VAR=value`` settings, and a few commands that run the next one."""
_PER_PROCESS = re.compile(r"(?:^|\s)(-g|--ngpus|-t|--nthreads)(?:\s+|=)(\d{1,4})(?=\s|$)")


def launched_ranks(line: str, start: int, end: int) -> tuple[int, str] | None:
    """The rank count a command line starts (processes x threads x GPUs per thread, nccl-tests'
    ``-t`` and ``-g``), with how it reads it; ``start:end`` is the binary's name in ``line``. A
    launcher (``mpirun -np 16``, ``srun -n 16``) must give its count; a line that starts with the
    binary itself is one process and must run 2 or more GPUs by ``-g`` or ``-t`` (``-g 1`` alone is
    one rank of an MPI job whose launcher was left out of the paste); else None (prose that names a
    binary, a launcher whose count is elsewhere)."""
    before, after = line[:start], line[end:]
    words = [w.rsplit("/", 1)[-1] for w in before.split()]
    per = {flag.lstrip("-")[0]: int(n) for flag, n in _PER_PROCESS.findall(after)}
    if any(w in _LAUNCHERS for w in words):
        counts = _LAUNCH_COUNT.findall(before)
        if not counts:
            return None
        procs = int(counts[-1])
        how = f"{procs} processes"
    elif all(_BEFORE_BINARY.fullmatch(w) for w in before.split()[:-1]) and per.get("t", 1) * per.get("g", 1) > 1:
        procs, how = 1, "one process"  # $ VAR=x ./all_gather_perf -g 8; with -g 1 its mpirun was left out
    else:
        return None
    threads, gpus = per.get("t", 1), per.get("g", 1)
    return procs * threads * gpus, f"{how} x {threads} thread{'s' if threads != 1 else ''} x {gpus} GPU" + (
        "s" if gpus != 1 else "")


def is_data_like(fields: list[str]) -> bool:
    """The line starts with a number in any spelling and has a second field: a data row, readable
    or not."""
    return len(fields) >= 2 and NUMBER_LIKE.fullmatch(fields[0]) is not None


_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[,.:;!?]?")


def is_prose(fields: list[str]) -> bool:
    """A line of words that happens to start with a number (``128 GPU all reduce test without
    sharp``): at least three fields, more than half of them plain words that no nccl-tests column
    prints (a type, a reduction, ``N/A``). A data row has at most three such fields (type, redop,
    a garbled one) among seven or more numbers."""
    if len(fields) < 3 or fields[1][:1].isdigit():  # a data row's second field is its count
        return False
    words = [f for f in fields[1:] if _WORD.fullmatch(f) and f.lower() not in _COLUMN_WORDS]
    return len(words) * 2 > len(fields)


_COLUMN_WORDS = frozenset({"n/a", *REDOPS, *TYPE_BYTES})
"""Words nccl-tests prints in a data row: N/A, a reduction, a type."""


def without_timestamp(fields: list[str]) -> list[str]:
    """A row's fields without the ``YYYY-MM-DD HH:MM:SS`` that ``-Z`` adds at its end."""
    if len(fields) >= 2 and _ROW_TIMESTAMP.fullmatch(fields[-2]) and ":" in fields[-1]:
        return fields[:-2]
    return fields


def plain_int(text: str) -> int | None:
    """``text`` as a whole number if it is plain digits, else None."""
    return int(text) if PLAIN_INT.fullmatch(text) else None


def signed_int(text: str) -> int | None:
    return int(text) if _SIGNED_INT.fullmatch(text) else None


def decimal(text: str) -> tuple[float, float] | None:
    """``text`` as nccl-tests prints a time or bandwidth: (value, half a unit of its last digit), or None
    if it is not such a number (negative, hex, ``inf``, ``nan``, thousands separators)."""
    if not DECIMAL.fullmatch(text):
        return None
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    try:
        value = float(text)
        half = 0.5 * 10.0 ** (int(exponent or 0) - decimals)
    except OverflowError:
        return None
    if value != value or value == float("inf"):
        return None
    return value, half
