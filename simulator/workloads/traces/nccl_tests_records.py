"""The frozen records an nccl-tests log is read into, and nccl-tests' own definitions they obey.

Pure data: :mod:`nccl_tests_log` (text) and :mod:`nccl_tests_json` (``-J FILE.json``) fill them.
Sizes and bandwidths are as nccl-tests prints them: size in bytes (for all_gather, reduce_scatter,
alltoall, gather, scatter the whole array, count x ranks), time in us, algbw and busbw in GB/s with
GB = 10^9 B.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workloads.collectives.ops import OPS as SIMULATED_OPS
from simulator.workloads.collectives.ops import WHOLE_ARRAY_OPS

OPS = SIMULATED_OPS
"""Operations of nccl-tests this reader knows (binary ``<op>_perf``): the collectives fabricsim
simulates (``collectives.ops.OPS``), each an nccl-tests binary of that name."""

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

REDOPS = frozenset({"sum", "prod", "max", "min", "avg", "mulsum", "premulsum", "none"})
"""Reduction names nccl-tests prints (``test_opnames`` in ``src/common.cu``; ``none`` for ops that
do not reduce)."""


def bus_factor(op: str, ranks: int) -> float:
    """busbw = algbw x this (nccl-tests ``*GetBw`` in ``src/*.cu``): all_reduce 2(n-1)/n; all_gather,
    reduce_scatter, alltoall, gather, scatter (n-1)/n; broadcast, reduce, sendrecv 1. In every one of
    them algbw = printed size / time."""
    if op == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if op in PER_RANK_COUNT_OPS:
        return (ranks - 1) / ranks
    return 1.0


@dataclass(frozen=True, slots=True)
class LogWarning:
    """A line of a log the reader could not use (or used with a doubt), and why."""

    file: str
    line: int | None
    message: str
    row: bool = False
    """True when the line is a data row that was left out (it counts as a skipped row)."""
    note: bool = False
    """True when the line was used as it is and the warning only says something about it (old
    nccl-tests' algbw, wrong results its time is kept with, a script's label read past): ``strict``
    lets it pass."""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"


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
    """0 for all_gather/reduce_scatter/alltoall sizes below ranks x 16 B (nccl-tests rounds the
    per-rank count down to 16 B): such rows carry no bandwidth and are never simulated."""
    count: int
    type: str
    redop: str | None
    root: int | None
    out_of_place: Timing
    in_place: Timing | None
    """None when the log has only one set of columns."""


@dataclass(frozen=True, slots=True)
class NcclNodes:
    """How NCCL grouped a test's ranks into nodes, from its init lines (``nRanks 128 nNodes 2
    localRanks 64 ... MNNVL 1``): an MNNVL node is an NVLink domain (an NVL72 rack), else a host."""

    nodes: int
    local_ranks: int
    """Ranks of each node (every node the same)."""
    mnnvl: int | None
    """1: the nodes are multi-node NVLink domains; 0: hosts; None: the line does not say (NCCL 2.20)."""
    line: int


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
    """The rank count of the test; None if neither the log nor ``gpus=`` says (then the caller must)."""
    rank_lines: tuple[RankLine, ...]
    rows: tuple[Row, ...]
    header_line: int
    """Line of the column header (``# size count type ...``), or of the first row when the columns
    were inferred (rows kept by ``grep`` without the header)."""
    threads: int | None = None
    gpus_per_thread: int | None = None
    """``nThread`` and ``nGpus`` (``-t``, ``-g``) of the header line."""
    version: str | None = None
    """nccl-tests version (``# nccl-tests version 2.17.6``)."""
    avg_busbw_GBps: float | None = None
    out_of_bounds: str | None = None
    """The ``# Out of bounds values`` result as printed (``0 OK``, ``2 FAILED``)."""
    nccl_env: tuple[tuple[str, str, int | None], ...] = ()
    """``NCCL_*`` settings in line order: a command line (``NCCL_ALGO=Ring ./all_reduce_perf``,
    ``mpirun -x NCCL_PROTO=Simple``), NCCL's ``NCCL_X set by environment to V`` INFO lines, the
    ``env`` list of the JSON output, then ``--env K=V`` (line None): (name, value, line)."""
    ranks_from: str = ""
    """Where the rank count came from (``4 '#  Rank' lines (lines 6-9)``, ``--gpus``, ...)."""
    nccl_version: str | None = None
    """NCCL library version (``nccl-library=22703`` in the header, ``NCCL version 2.27.3`` INFO line,
    ``nccl_version`` in JSON), as ``2.27.3``."""
    columns_from: str = ""
    """``column header (line N)``, or how the columns were inferred from a row."""
    warnings: tuple[LogWarning, ...] = ()
    """Lines of this test the reader could not use (rows among them are left out of :attr:`rows`)."""
    test: int = 1
    """1-based position of this test in its file."""
    nccl_nodes: NcclNodes | None = None
    """NCCL's grouping of the ranks into nodes, where its init lines say it."""

    def setting(self, name: str) -> tuple[str, int | None] | None:
        """The last value given to a variable in the log (or ``--env``), with its line (None for
        ``--env``); None if unset."""
        found = [(value, line) for key, value, line in self.nccl_env if key == name]
        return found[-1] if found else None

    @property
    def sized_rows(self) -> tuple[Row, ...]:
        """The rows of more than 0 bytes: the sizes a simulation can be asked for."""
        return tuple(r for r in self.rows if r.bytes > 0)

    @property
    def skipped_rows(self) -> int:
        """Data rows of this test left out because they could not be used (each has a warning)."""
        return sum(1 for w in self.warnings if w.row)

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.host for r in self.rank_lines))

    @property
    def processes(self) -> int:
        return len({(r.host, r.pid) for r in self.rank_lines})

    @property
    def gpu_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.gpu for r in self.rank_lines))


def nccl_version_name(code: int) -> str:
    """``22703`` -> ``2.27.3``, ``2708`` -> ``2.7.8`` (``NCCL_VERSION`` in nccl.h: X*1000+Y*100+Z up to
    2.8, X*10000+Y*100+Z after)."""
    if code >= 10000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"
