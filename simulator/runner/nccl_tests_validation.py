"""Predict every size of a real nccl-tests log and set measured against predicted.

Each size is simulated on the user's topology through the same path as ``fabricsim bench``
(:func:`simulator.runner.sweeps.sweep`), with the log's operation and rank count. Nothing is
fitted to the log. Errors follow ``validation.py``: ``error_pct = 100 (predicted - measured) /
measured``, for time and for busbw.

nccl-tests prints busbw with two decimals, so below :data:`MIN_BUSBW_FOR_ERROR_GBPS` the printed
value has fewer than three significant digits (8 B rows print ``0.00``): there the busbw error is
left out (None) and the time error, printed with four digits, stands alone. Rows of 0 bytes (all_gather,
reduce_scatter and alltoall below ranks x 16 B) carry no bandwidth and are not simulated; they, and the
rows the reader left out with a warning, are counted as skipped (:func:`row_counts`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from simulator.errors import InputError
from simulator.runner.sweeps import SweepSpec, per_tray_job, select_gpus, sweep
from simulator.topology.fabric import Fabric
from simulator.topology.placement import Placement, layout
from simulator.hardware.protocols import PROTOCOL_NAMES
from simulator.workloads.collectives import ALGORITHMS, choices
from simulator.workloads.collectives import OPS as SIMULATED_OPS
from simulator.workloads.collectives.ops import P2P_OPS
from simulator.workloads.traces.nccl_tests_log import NcclTestsRun
from simulator.workloads.traces.nccl_tests_records import NcclNodes

NCCL_ALGO_NAMES = {r.nccl_algo.lower(): r.name for r in ALGORITHMS.values() if r.nccl_algo}
NCCL_PROTO_NAMES = {p.lower(): p for p in PROTOCOL_NAMES}
"""NCCL_ALGO / NCCL_PROTO names (case-insensitive, as NCCL reads them) of fabricsim algorithms and
protocols; NCCL_ALGO lists and exclusions (``^NVLS``) map name by name (``nccl_algo_choice``)."""

MIN_BUSBW_FOR_ERROR_GBPS = 1.0
"""Smallest printed busbw (GB/s) whose error is reported: at 1.00 the rounding to 0.01 is <= 0.5%."""


@dataclass(frozen=True, slots=True)
class Summary:
    """Median and worst |error| (%) over the rows that have one; ``worst_*_bytes`` says where."""

    rows: int
    busbw_median_pct: float | None
    busbw_worst_pct: float | None
    busbw_worst_bytes: int | None
    time_median_pct: float
    time_worst_pct: float
    time_worst_bytes: int

    def as_dict(self) -> dict:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


def error_pct(predicted: float, measured: float) -> float:
    """100 (predicted - measured) / measured: positive when fabricsim predicts more."""
    return 100.0 * (predicted - measured) / measured


@dataclass(frozen=True, slots=True)
class RunSettings:
    """What to simulate a logged test with: the user's flags, else the NCCL_* settings in the log."""

    algo: str = "auto"
    protocol: str = "auto"
    channels: int | None = None
    notes: tuple[str, ...] = ()
    """One line per NCCL_* setting read from the log (or ignored, and why)."""
    per_tray: tuple[str, int | None] | None = None
    """MNNVL off (NCCL_MNNVL_ENABLE=0, or MNNVL 0 in NCCL's init line across nodes): what said so and
    its line, to run on the fabric with NVLink confined to each compute tray
    (``topology.partitions.per_tray``), every tray its own NCCL node; None: MNNVL as the topology."""


NVLS_RECORDS = tuple(r.name for r in ALGORITHMS.values() if r.nccl_algo.lower().startswith("nvls"))
"""The algorithms NCCL_NVLS_ENABLE=0 turns off (NCCL's NVLS and NVLSTree, src/transport/nvls.cc
``ncclNvlsInit``: no NVLS support, so neither runs)."""

NCCL_FUNCS = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter",
              "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "sendrecv"}
"""fabricsim op -> NCCL's function name in per-function NCCL_ALGO / NCCL_PROTO values (src/enqueue.cc
``ncclFuncStr``, lower case; ``allreduce:tree;broadcast:ring``)."""


SWITCH_NOTES = {
    "NCCL_MNNVL_ENABLE": ("MNNVL off: every compute tray its own NCCL node, NVLink inside it, the other trays "
                          "over the network (topology.partitions)",
                          "each NVLink domain is one NCCL node, as in fabricsim (an NVL72 rack's trays joined over "
                          "NVLink)"),
    "NCCL_PXN_DISABLE": ("PXN on, NCCL's default (src/graph/paths.cc ncclTopoGetPxnRanks), but not in fabricsim's "
                         "runs: each GPU sends from its own NICs, as rings and trees do anyway (they leave on the rail "
                         "they enter); point-to-point ops across rails cross the spine instead of an NVLink relay",
                         "PXN off, as in fabricsim's runs: each GPU sends from its own NICs"),
    "NCCL_COLLNET_ENABLE": ("CollNet off, as fabricsim's tuner, which never chooses it",
                            "CollNet on: fabricsim runs CollNetChain where NCCL_ALGO (or --algo collnet_chain) names "
                            "it; its tuner does not choose CollNet, and CollNetDirect and NVLS with SHARP are not "
                            "modelled"),
}
"""Settings that switch an NCCL mechanism on or off: what the comparison makes of the value 0 and of
any other (NCCL_PXN_DISABLE=0 turns PXN on)."""


def _off(value: str) -> bool:
    """An NCCL on/off setting's value says off: 0, as a command line or a sentence may end it (``0,``)."""
    return value.strip().rstrip(",.;") == "0"


def _short(value: str, width: int = 24) -> str:
    return value if len(value) <= width else value[:width - 3] + "..."


def _where(line: int | None) -> str:
    return f"line {line}" if line is not None else "--env"


def _for_op(value: str, op: str) -> str | None:
    """The part of an NCCL_ALGO / NCCL_PROTO value that applies to ``op``: NCCL reads
    ``func:list;func:list`` per function and a list without ``func:`` for all (src/graph/tuning.cc
    ``parseList``); None when the value names other functions only."""
    general = None
    for part in value.split(";"):
        if ":" in part:
            func, _, listed = part.partition(":")
            if func.strip().lower() == NCCL_FUNCS.get(op, op):
                return listed.strip()
        elif part.strip():
            general = part.strip()
    return general


def nccl_algo_choice(value: str, op: str) -> tuple[str, str]:
    """The fabricsim ``algo`` an NCCL_ALGO value asks for on ``op`` (one algorithm, a list to choose
    among, or ``^`` ones to leave out: ``registry.choices``; ``auto``: the tuner chooses freely) and
    what became of the names fabricsim does not model."""
    if not value.strip(" ;:,^"):
        return "auto", "names no algorithm; the tuner chooses"
    part = _for_op(value, op)
    if part is None:
        return "auto", "names other functions only; the tuner chooses"
    exclude = part.startswith("^")
    names = [n.strip().lower() for n in part.lstrip("^").split(",") if n.strip()]
    known = [NCCL_ALGO_NAMES[n] for n in names if n in NCCL_ALGO_NAMES]
    unknown = [n for n in names if n not in NCCL_ALGO_NAMES]
    left = f"; {', '.join(unknown)} not modelled, left out" if unknown else ""
    if exclude:
        return ("^" + ",".join(known) if known else "auto"), f"the tuner chooses among the others{left}"
    if not known:
        return "auto", f"names no fabricsim algorithm{left}; the tuner chooses"
    if len(known) == 1:
        return known[0], f"--algo {known[0]}{left}"
    return ",".join(known), f"the tuner chooses among {', '.join(known)}{left}"


GPU_ARCHITECTURES = (("GB300", "blackwell"), ("GB200", "blackwell"), ("B300", "blackwell"), ("B200", "blackwell"),
                     ("B100", "blackwell"), ("H200", "hopper"), ("H100", "hopper"), ("H800", "hopper"),
                     ("H20", "hopper"), ("A100", "ampere"), ("A800", "ampere"))
"""GPU model names as ``#  Rank`` lines print them (``NVIDIA H100 80GB HBM3``, ``NVIDIA GB200``) ->
the architecture of fabricsim's GPU parts (``parts/devices.yaml``), matched as whole words."""


FEWER_NVLINKS = {
    "H800": "H800 SXM has 8 NVLink 4 links, 400 GB/s both directions, where H100 SXM has 18, 900 GB/s "
            "(NVIDIA H800 product brief)",
    "A800": "A800 SXM has 8 NVLink 3 links, 400 GB/s both directions, where A100 SXM has 12, 600 GB/s "
            "(NVIDIA A800 datasheet)",
}
"""Export models of an architecture whose NVLink is cut down: their logs run on fewer links than the
full part's topology has."""


def gpu_note(run: NcclTestsRun, architectures: Mapping[str, str]) -> str | None:
    """A note when the log's GPUs (its ``#  Rank`` lines) are of another model than the topology's
    (``architectures``: GPU part -> architecture): another architecture's CTA rates, NVLink and NVLS
    are not the log's; the same architecture's are (H200 on an H100 topology). None when they match,
    or the log does not name a known model (``NVIDIA Graphics Device``)."""
    arch_of = dict(GPU_ARCHITECTURES)
    models = sorted({m for gpu in run.gpu_names for m in gpu.upper().replace("-", " ").split() if m in arch_of})
    if not architectures:
        return None
    parts = ", ".join(sorted(architectures))
    if not models:
        named = sorted({g for g in run.gpu_names if g and "GRAPHICS DEVICE" not in g.upper()})
        if not named:
            return None
        known = ", ".join(m for m, _ in GPU_ARCHITECTURES)
        return (f"the log's GPUs are {', '.join(named)} (line {run.rank_lines[0].line}), not a GPU model "
                f"fabricsim knows by name ({known}): the topology's {parts} stand in for their CTA rates, "
                "NVLink and NVLS")
    archs = {arch_of[m] for m in models}
    theirs = sorted(set(architectures.values()))
    line = run.rank_lines[0].line
    if archs - set(theirs):
        return (f"the log's GPUs are {', '.join(models)} (line {line}, {'/'.join(sorted(archs))}), the topology's "
                f"{parts} ({'/'.join(theirs)}): another architecture's CTA rates, NVLink and NVLS; validate on a "
                f"topology of the log's GPUs")
    if fewer := [m for m in models if m in FEWER_NVLINKS and m.lower() not in parts.lower()]:
        return (f"the log's GPUs are {', '.join(models)} (line {line}), the topology's {parts}: the same "
                f"architecture ({'/'.join(theirs)}), but {'; '.join(FEWER_NVLINKS[m] for m in fewer)}, so the "
                "topology's NVLink is not the log's")
    if any(m.lower() not in parts.lower() for m in models):
        return (f"the log's GPUs are {', '.join(models)} (line {line}), the topology's {parts}: the same "
                f"architecture ({'/'.join(theirs)}), whose collective model is the same")
    return None


def leave_out(algo: str, names: tuple[str, ...], why: str) -> tuple[str, str]:
    """``algo`` (auto, a choice list or one algorithm) without the algorithms ``names`` (those a
    setting or the log's NCCL version rules out; ``why`` names the cause), and what became of it."""
    listed = choices(algo)
    if listed is None:
        if algo in names:
            return algo, f"not applied; the algorithm is {algo}, as asked"
        return algo, f"no matter here, the algorithm is {algo}"
    kept = [a for a in listed if a not in names]
    if not kept:
        return algo, f"not applied; every algorithm of {algo} is ruled out by {why}"
    out = ("^" + ",".join(a for a in ALGORITHMS if a not in kept)) if algo == "auto" or algo.startswith("^") \
        else ",".join(kept)
    return out, f"{_and([n for n in names if n in listed])} left out of the tuner's choice"


def _and(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def newer_than(version: str | None) -> tuple[str, ...]:
    """The algorithms an NCCL of ``version`` (``2.16.2``) did not have yet (``nccl_since``), in
    registry order; () for an unknown or unreadable version."""
    parts = (version or "").split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return ()
    have = (int(parts[0]), int(parts[1]))
    return tuple(r.name for r in ALGORITHMS.values() if r.nccl_since is not None and have < r.nccl_since)


def settings_for(run: NcclTestsRun, algo: str = "auto", protocol: str = "auto") -> RunSettings:
    """Flags win; ``auto`` takes NCCL_ALGO / NCCL_PROTO from the log (or ``--env``: one algorithm,
    a list or an exclusion, per function where the value says so), NCCL_NVLS_ENABLE=0 leaves NVLS
    and NVLSTree out of the tuner's choice, so does a log's NCCL older than an algorithm
    (``AlgorithmRecord.nccl_since``), and NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = N gives N
    channels (as ``bench --channels N``)."""
    notes = []
    found = run.setting("NCCL_ALGO")
    if found is not None:
        value, line = found
        if algo != "auto":
            notes.append(f"NCCL_ALGO={value} ({_where(line)}) overridden by --algo {algo}")
        elif run.op in P2P_OPS:  # NCCL runs them as grouped send/recv (enqueue.cc): no algorithm to pick
            notes.append(f"NCCL_ALGO={value} ({_where(line)}): no matter here, NCCL runs {run.op} point to point")
        else:
            algo, what = nccl_algo_choice(value, run.op)
            notes.append(f"NCCL_ALGO={value} ({_where(line)}): {what}")
    found = run.setting("NCCL_PROTO")
    if found is not None:
        value, line = found
        part = _for_op(value, run.op) or ""
        if protocol != "auto":
            notes.append(f"NCCL_PROTO={value} ({_where(line)}) overridden by --protocol {protocol}")
        elif part.lower() in NCCL_PROTO_NAMES:
            protocol = NCCL_PROTO_NAMES[part.lower()]
            notes.append(f"NCCL_PROTO={value} ({_where(line)}): --protocol {protocol}")
        else:
            notes.append(f"NCCL_PROTO={value} ({_where(line)}) names no single fabricsim protocol; the tuner chooses")
    low, high = run.setting("NCCL_MIN_NCHANNELS"), run.setting("NCCL_MAX_NCHANNELS")
    channels = None
    applied = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", *SWITCH_NOTES}
    if low and high and low[0] == high[0] and low[0].isdigit() and int(low[0]) > 0:
        applied |= {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"}
        channels = int(low[0])
        where = f"lines {low[1]}, {high[1]}" if low[1] is not None and high[1] is not None else \
            f"{_where(low[1])}, {_where(high[1])}"
        notes.append(f"NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS={channels} ({where}): {channels} channels")
    found = run.setting("NCCL_NVLS_ENABLE")
    if found is not None:
        value, where = found[0], _where(found[1])
        if not _off(value):
            notes.append(f"NCCL_NVLS_ENABLE={value} ({where}): NVLS where the GPUs support it, as fabricsim's default")
        else:
            algo, what = leave_out(algo, NVLS_RECORDS, "NVLS")
            notes.append(f"NCCL_NVLS_ENABLE={value} ({where}): {what}")
    newer = newer_than(run.nccl_version)
    if newer:
        algo, what = leave_out(algo, newer, f"NCCL {run.nccl_version}")
        notes.append(f"NCCL {run.nccl_version} (the log's, older than these algorithms): {what}")
    for var, (zero, other) in SWITCH_NOTES.items():
        found = run.setting(var)
        if found is not None:
            notes.append(f"{var}={found[0]} ({_where(found[1])}): {zero if _off(found[0]) else other}")
    others: dict[int | None, list[str]] = {}  # the settings fabricsim does not model, by the line that gives them
    for name in dict.fromkeys(k for k, _, _ in run.nccl_env):
        if name not in applied:
            value, line = run.setting(name)
            others.setdefault(line, []).append(f"{name}={_short(value)}")
    if others:
        said = "; ".join(f"{', '.join(names)} ({_where(line)})" for line, names in others.items())
        notes.append(f"{said}: not modelled, simulated as if unset")
    mnnvl = run.setting("NCCL_MNNVL_ENABLE")
    per_tray = (f"NCCL_MNNVL_ENABLE={mnnvl[0]} ({_where(mnnvl[1])})", mnnvl[1]) if mnnvl and _off(mnnvl[0]) else None
    nodes = run.nccl_nodes
    if per_tray is None and nodes is not None and nodes.mnnvl == 0 and nodes.nodes > 1:
        per_tray = (f"MNNVL 0 in NCCL's init line (line {nodes.line})", nodes.line)
        notes.append(f"NCCL's init line (line {nodes.line}): nNodes {nodes.nodes}, MNNVL 0: NCCL's nodes are hosts "
                     "(on NVL72 racks every compute tray its own node, as NCCL_MNNVL_ENABLE=0)")
    return RunSettings(algo=algo, protocol=protocol, channels=channels, notes=tuple(notes), per_tray=per_tray)


@dataclass(frozen=True, slots=True)
class RowCounts:
    """What happened to a logged test's data rows."""

    used: int
    """Rows simulated and compared."""
    zero_bytes: int
    """Rows of 0 B: parsed, but they carry no bandwidth and are not simulated."""
    unusable: int
    """Rows the reader left out, each with a warning at its line."""

    @property
    def skipped(self) -> int:
        return self.zero_bytes + self.unusable

    def as_dict(self) -> dict:
        return {"used": self.used, "skipped": self.skipped, "zero_bytes": self.zero_bytes,
                "unusable": self.unusable}


def log_placement(fabric: Fabric, run: NcclTestsRun, ranks: int) -> tuple[Placement, str] | None:
    """Where the log puts its ranks, for a log compared without a placement flag, and a note; None
    where that is the default (the first ranks) or the log cannot say (``log_says``)."""
    said = log_says(fabric, run, ranks)
    return None if said is None or _first_ranks(fabric, ranks, said[0]) else said


def log_says(fabric: Fabric, run: NcclTestsRun, ranks: int) -> tuple[Placement, str] | None:
    """Where the log says its ranks ran, first ranks included, and a note; None where it cannot say
    or this topology cannot hold it:

    - NCCL's init line ``nNodes K localRanks L MNNVL 1`` (``NcclTestsRun.nccl_nodes``): K NVLink
      domains of L GPUs each, ``--per-rack L`` (two NVL72 racks x 64, not 72 + 56);
    - else every rank's ``#  Rank r ... on HOST device d`` line: each host of the log one compute
      tray of the topology (an HGX server, a GB200 tray), hosts in order of first appearance on
      trays in rank order, each rank its tray's GPU of its device index, so two hosts of 4 GPUs are
      4 GPUs of each of two servers, not one server's 8, and ranks dealt round-robin keep their
      hosts (a rank without its line, more hosts than trays or a device beyond its tray: no say);
    - else the init line of nodes that are hosts (MNNVL 0, or not said): ``--per-tray L``."""
    nodes = run.nccl_nodes
    if nodes is not None and nodes.nodes > 1 and nodes.mnnvl == 1:
        return _held(fabric, ranks, Placement(per_rack=nodes.local_ranks), _nodes_note(nodes))
    by_hosts = _from_rank_lines(fabric, run, ranks)
    if by_hosts is not None:
        return _held(fabric, ranks, *by_hosts)
    if nodes is not None and nodes.nodes > 1:
        return _held(fabric, ranks, Placement(per_tray=nodes.local_ranks), _nodes_note(nodes))
    return None


def _tray_counts(fabric: Fabric, gpus: tuple[str, ...]) -> list[int]:
    """GPUs of ``gpus`` on each compute tray they use (an HGX server, a GB200 tray), largest first."""
    tray_of = layout(fabric).unit_of["tray"]
    return sorted(Counter(tray_of.get(g, g) for g in gpus).values(), reverse=True)


def _agrees(fabric: Fabric, ranks: int, placement: Placement, from_log: tuple[Placement, str]) -> None:
    """A placement flag must put the log's ranks on trays as the log says they ran (its init line or
    its rank lines: ``log_says``); an error naming the flag where it does not."""
    flagged = _tray_counts(fabric, select_gpus(fabric, ranks, placement))
    logged = _tray_counts(fabric, select_gpus(fabric, ranks, from_log[0]))
    if flagged != logged:
        raise InputError(f"puts the log's {ranks} ranks {_shape(flagged, 'tray')}, but the log ran "
                         f"{_shape(logged, 'tray')} ({from_log[1]}); drop the flag or make it agree",
                         field=_flag(placement))


def _shape(counts: list[int], unit: str) -> str:
    """``4 GPUs on each of 2 hosts``, ``4 + 2 GPUs on 2 hosts``, ``4 GPUs on 1 tray``: GPUs per
    ``unit`` of a placement."""
    if len(counts) == 1:
        return f"{counts[0]} GPU{'s' if counts[0] != 1 else ''} on 1 {unit}"
    if len(set(counts)) == 1:
        return f"{counts[0]} GPU{'s' if counts[0] != 1 else ''} on each of {len(counts)} {unit}s"
    return f"{' + '.join(map(str, counts))} GPUs on {len(counts)} {unit}s"


def _from_rank_lines(fabric: Fabric, run: NcclTestsRun, ranks: int) -> tuple[Placement, str] | None:
    """The placement of ``log_says``' second rule (each host a compute tray), and its note."""
    lines = sorted(run.rank_lines, key=lambda r: r.rank)
    if len(lines) != ranks or [r.rank for r in lines] != list(range(ranks)):
        return None
    trays = list(layout(fabric).units("tray").values())
    order = list(dict.fromkeys(r.host for r in lines))
    if len(order) > len(trays):
        return None
    tray_of = {host: trays[i] for i, host in enumerate(order)}
    if any(not 0 <= r.device < len(tray_of[r.host]) for r in lines):
        return None
    picked = [tray_of[r.host][r.device] for r in lines]
    if len(set(picked)) != ranks:
        return None
    shape = _shape([sum(1 for r in lines if r.host == h) for h in order], "host")
    where = f"lines {lines[0].line}-{lines[-1].line}" if len(lines) > 1 else f"line {lines[0].line}"
    placement = Placement(ranks=tuple(fabric.nodes[g].rank for g in picked))
    return placement, (f"placement from the log's '#  Rank' lines ({where}): {shape}, each host a compute tray of "
                       f"the topology, each rank its device there ({placement.describe()})")


def _nodes_note(nodes: NcclNodes) -> str:
    what = "NVLink domains (MNNVL)" if nodes.mnnvl == 1 else "hosts"
    flag = "--per-rack" if nodes.mnnvl == 1 else "--per-tray"
    return (f"placement from NCCL's init line (line {nodes.line}): nNodes {nodes.nodes}, localRanks "
            f"{nodes.local_ranks}, {nodes.local_ranks} GPUs of each of {nodes.nodes} {what} ({flag} "
            f"{nodes.local_ranks})")


def _held(fabric: Fabric, ranks: int, placement: Placement, note: str) -> tuple[Placement, str] | None:
    """``placement`` and its note where this topology can hold ``ranks`` GPUs so; else None."""
    try:
        select_gpus(fabric, ranks, placement)
    except InputError:
        return None
    return placement, note


def _first_ranks(fabric: Fabric, ranks: int, placement: Placement) -> bool:
    """Whether ``placement`` takes the topology's first ``ranks`` GPUs, as no flag does."""
    return list(select_gpus(fabric, ranks, placement)) == list(fabric.gpus[:ranks])


def _flag(placement: Placement) -> str:
    """The flag of a placement request (the first given)."""
    from simulator.topology.placement import FLAGS

    return next(FLAGS[k] for k in ("per_rack", "per_tray", "per_node", "ranks", "hosts")
                if getattr(placement, k) is not None)


def row_counts(run: NcclTestsRun) -> RowCounts:
    sized = len(run.sized_rows)
    return RowCounts(used=sized, zero_bytes=len(run.rows) - sized, unusable=run.skipped_rows)


def compare_run(fabric: Fabric, run: NcclTestsRun, *, gpus: int | None = None, algo: str = "auto",
                protocol: str = "auto", engine: str = "auto", in_place: bool = False,
                threshold_pct: float | None = None,
                on_row: Callable[[dict], None] | None = None, placement: Placement | None = None) -> list[dict]:
    """One row per size of ``run`` above 0 B: measured and predicted time (us) and busbw (GB/s), errors
    (%), and the algorithm, protocol and engine of the prediction. ``gpus`` says the rank count where
    the log does not (it must agree where it does); ``algo``/``protocol`` left at auto take
    NCCL_ALGO/NCCL_PROTO from the log (:func:`settings_for`); ``in_place`` compares the in-place
    columns, not the out-of-place ones. With ``threshold_pct``, ``passed`` says whether |busbw error|
    (else |time error|) is within it. ``placement`` (``--per-rack``, ``--ranks``, ``--hosts``...) says
    which GPUs of the topology the log's ranks ran on; default the first in rank order; a placement
    that gives another count than the log's ranks is an error naming the flag."""
    if run.op not in SIMULATED_OPS:
        raise InputError(f"fabricsim does not simulate {run.op} (found from the {run.op_from}); it simulates "
                         f"{', '.join(SIMULATED_OPS)}", file=run.path, line=run.header_line)
    if gpus and run.ranks and gpus != run.ranks:
        raise InputError(f"--gpus {gpus} contradicts the log, which ran on {run.ranks} ranks ({run.ranks_from})",
                         file=run.path, line=run.rank_lines[0].line if run.rank_lines else run.header_line)
    ranks = gpus or run.ranks
    silent = ("the log says nothing to count ranks from (no '#  Rank ... device ...' lines, no NCCL Init lines, "
              "and its rows' busbw / algbw do not pin a rank count down)")
    if ranks is None and placement is not None and not placement.is_default:  # it says how many if it names GPUs
        if (per := placement.per()) is not None and placement.hosts is None:
            every = len(select_gpus(fabric, None, placement))
            raise InputError(f"{silent}; {_flag(placement)} {per[1]} alone would take {every} GPUs, from every "
                             f"{per[0]} of {fabric.name}: pass --gpus N", file=run.path, line=run.header_line)
        ranks = len(select_gpus(fabric, None, placement))
    if ranks is None:
        hint = f": {run.ranks_from}" if run.ranks_from else ""
        raise InputError(f"{silent}; pass --gpus N{hint}", file=run.path, line=run.header_line)
    where = run.rank_lines[0].line if run.rank_lines else run.header_line
    if ranks < 2:
        raise InputError(f"the log ran on 1 rank ({run.ranks_from or '--gpus'}): {run.op} on one GPU crosses no "
                         "link, so there is nothing to compare; validate a log of 2 or more ranks",
                         file=run.path, line=where)
    if ranks > len(fabric.gpus):
        who = "--gpus asks for" if run.ranks_from.startswith("--gpus") else "the log ran on"
        raise InputError(f"{who} {ranks} ranks but {fabric.name} has {len(fabric.gpus)} GPUs; pick a topology "
                         "with enough GPUs", file=run.path, line=where)
    logged = run.sized_rows
    if not logged:
        raise InputError(f"every usable row of this test is of 0 B ({len(run.rows)} rows): nothing to simulate; "
                         "run nccl-tests with a larger -b", file=run.path, line=run.header_line)
    if in_place and (lacking := [r for r in logged if r.in_place is None]):
        if len(lacking) == len(logged):
            raise InputError("--in-place: the log has no in-place columns", file=run.path, line=run.header_line)
        raise InputError(f"--in-place: this row has no in-place columns (cut short; {len(lacking)} of "
                         f"{len(logged)} rows lack them); compare the out-of-place ones", file=run.path,
                         line=lacking[0].line)
    if placement is not None:
        try:
            select_gpus(fabric, ranks, placement)
        except InputError as err:
            if err.field != "--gpus":
                raise
            said = f"the log ran on {ranks} ranks ({run.ranks_from})"  # the count came from the log: say so
            if placement.ranks is not None or (placement.hosts is not None and placement.per() is None):
                given = len(select_gpus(fabric, None, placement))
                raise InputError(f"{said}, but it {'lists' if placement.ranks is not None else 'gives'} {given} "
                                 f"GPUs; place {ranks}", field=_flag(placement)) from None
            raise InputError(f"{said}: {err.message}", field=_flag(placement)) from None
    settings = settings_for(run, algo, protocol)
    from_log = log_says(fabric, run, ranks)
    if from_log is not None and (placement is None or placement.is_default):
        placement = from_log[0]
    elif from_log is not None:  # a flag where the log says where its ranks ran, first ranks too: they must agree
        _agrees(fabric, ranks, placement, from_log)
    if settings.per_tray is not None:  # place on the racks as written, then run where NCCL sees trays as nodes
        said, line = settings.per_tray
        fabric, placement = per_tray_job(fabric, ranks, placement, said, file=run.path, line=line or run.header_line)
    root = next((r.root for r in logged if r.root is not None and r.root >= 0), 0)  # rooted ops' -r
    spec = SweepSpec(op=run.op, gpus=ranks, sizes=tuple(r.bytes for r in logged), algo=settings.algo,
                     protocol=settings.protocol, engine=engine, channels=settings.channels, root=root,
                     placement=placement)
    placement = "in-place" if in_place else "out-of-place"
    rows: list[dict] = []

    def add(predicted: dict) -> None:
        row = logged[len(rows)]
        measured = row.in_place if in_place else row.out_of_place
        assert measured is not None and predicted["bytes"] == row.bytes
        busbw_error = (error_pct(predicted["busbw_GBps"], measured.busbw_GBps)
                       if measured.busbw_GBps >= MIN_BUSBW_FOR_ERROR_GBPS else None)
        time_error = error_pct(predicted["time_us"], measured.time_us)
        out = {"log": run.path, "line": row.line, "op": run.op, "ranks": ranks, "ranks_in_log": run.ranks,
               "placement": placement, "bytes": row.bytes,
               "measured_time_us": measured.time_us, "predicted_time_us": predicted["time_us"],
               "time_error_pct": time_error,
               "measured_busbw_GBps": measured.busbw_GBps, "predicted_busbw_GBps": predicted["busbw_GBps"],
               "busbw_error_pct": busbw_error,
               "algo": predicted["algo"], "protocol": predicted["protocol"], "engine": predicted["engine"],
               "channels": predicted.get("channels")}
        if threshold_pct is not None:
            judged = busbw_error if busbw_error is not None else time_error
            out["passed"] = abs(judged) <= threshold_pct
        rows.append(out)
        if on_row:
            on_row(out)

    sweep(fabric, spec, on_row=add)
    return rows


def summarize(rows: list[dict]) -> Summary:
    """Median and worst |error| of busbw (rows that have one) and of time."""
    if not rows:
        raise ValueError("no rows to summarize")
    with_busbw = [r for r in rows if r["busbw_error_pct"] is not None]
    busbw = np.abs([r["busbw_error_pct"] for r in with_busbw])
    time = np.abs([r["time_error_pct"] for r in rows])
    worst_b = with_busbw[int(np.argmax(busbw))] if with_busbw else None
    worst_t = rows[int(np.argmax(time))]
    return Summary(rows=len(rows),
                   busbw_median_pct=float(np.median(busbw)) if with_busbw else None,
                   busbw_worst_pct=abs(worst_b["busbw_error_pct"]) if worst_b else None,
                   busbw_worst_bytes=worst_b["bytes"] if worst_b else None,
                   time_median_pct=float(np.median(time)), time_worst_pct=abs(worst_t["time_error_pct"]),
                   time_worst_bytes=worst_t["bytes"])


def run_label(run: NcclTestsRun, ranks: int | None = None) -> str:
    """``hgx_h100_all_reduce_8gpu.log: all_reduce, 8 ranks`` (for titles and legends)."""
    return f"{Path(run.path).name}: {run.op}, {ranks or run.ranks} ranks"
