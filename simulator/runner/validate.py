"""``validate`` as one request -> plan -> outcome path, in its two forms: every published figure
(``runner.validation``), or every size of the user's own nccl-tests logs on a topology
(``runner.nccl_tests_validation``). ``fabricsim validate`` and ``simulator.api.validate`` build the
same :class:`ValidateRequest` and get the same :class:`ValidateOutcome` (its ``to_dict()`` is the
command's ``--json``; ``failed`` rows make the command exit 1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from simulator.errors import InputError
from simulator.runner.fabrics import load_fabric
from simulator.runner.nccl_tests_validation import (compare_run, gpu_note, log_placement, row_counts, run_label,
                                                    settings_for, summarize)
from simulator.runner.tables import rows_frame
from simulator.runner.validation import DEFAULT_FILE, DEFAULT_THRESHOLD_PCT, load_published, predict
from simulator.shipped import find
from simulator.topology.builder import topology_files
from simulator.topology.fabric import Fabric
from simulator.topology.placement import Placement
from simulator.workloads.traces.nccl_tests_log import NcclTestsRun, parse_log

ROW_COUNT_KEYS = ("used", "skipped", "zero_bytes", "unusable")


@dataclass(frozen=True, slots=True)
class ValidateRequest:
    """What ``validate`` is asked; every field has the meaning of the flag of that name. With
    ``logs``, the log settings (``topology``, ``gpus``, ``placement``, ``op``, ``env``, ``strict``,
    ``run``, ``algo``, ``protocol``, ``engine``, ``in_place``) apply; without, only ``file``."""

    file: str | None = None
    """Published figures (YAML); None: the shipped ``validation/published.yaml``."""
    threshold: float | None = None
    """|error| in % above which a row fails; None: ``DEFAULT_THRESHOLD_PCT``."""
    logs: tuple[str, ...] = ()
    topology: str | None = None
    gpus: int | None = None
    placement: Placement | None = None
    op: str | None = None
    env: tuple[str, ...] = ()
    strict: bool = False
    run: int | None = None
    """Only the N-th test of each log (1-based); None: every one."""
    algo: str = "auto"
    protocol: str = "auto"
    engine: str = "auto"
    in_place: bool = False

    @property
    def threshold_pct(self) -> float:
        return DEFAULT_THRESHOLD_PCT if self.threshold is None else self.threshold


@dataclass(frozen=True)
class ValidatePlan:
    """A validate request made concrete: the published entries, or the logs read (each test with
    the reader's warnings) and the fabric they run on."""

    request: ValidateRequest
    entries: list = field(default_factory=list)
    root: Path = Path(".")
    """The folder published entries name their files from."""
    runs: tuple[NcclTestsRun, ...] = ()
    fabric: Fabric | None = None
    inputs: tuple[Path, ...] = ()
    """Every file the run reads (outputs may not overwrite them)."""


@dataclass(frozen=True)
class ValidateOutcome:
    """Predicted vs published (``rows``: one per entry) or measured vs predicted (``rows``: every
    size of every log; ``results``: per test of a log, its rows); ``failed``: rows over the threshold."""

    request: ValidateRequest
    rows: list[dict] = field(default_factory=list)
    results: list[tuple[NcclTestsRun, list[dict]]] = field(default_factory=list)
    system: str | None = None
    architectures: dict[str, str] = field(default_factory=dict)
    """The logs' topology's GPU parts -> their architecture (``gpu_note`` compares the logs' GPUs)."""
    placed: dict[tuple[str, int], str] = field(default_factory=dict)
    """(log, test) -> how its ranks were placed from the log itself (NCCL's init line or its ``#  Rank``
    lines: ``log_placement``), where no placement flag was given and that is not the first ranks."""

    def notes(self, run: NcclTestsRun) -> list[str]:
        """What the comparison of ``run`` took from its log (settings, placement) and noticed about
        its GPUs."""
        notes = list(settings_for(run, self.request.algo, self.request.protocol).notes)
        if (run.path, run.test) in self.placed:
            notes.append(self.placed[(run.path, run.test)])
        gpus = gpu_note(run, self.architectures)
        return notes + [gpus] if gpus else notes

    @property
    def every(self) -> list[dict]:
        """Every row: the published entries', or every size of every log (``rows``)."""
        return self.rows

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.every if not r["passed"]]

    def row_counts(self) -> dict[str, int]:
        """Data rows of every log: used, skipped (of 0 B, unusable)."""
        return {k: sum(row_counts(run).as_dict()[k] for run, _ in self.results) for k in ROW_COUNT_KEYS}

    def to_dict(self) -> dict:
        """The ``--json`` document of ``fabricsim validate``."""
        request = self.request
        if not request.logs:
            return {"threshold_pct": request.threshold_pct, "rows": self.rows, "failed": len(self.failed)}
        placement = request.placement
        return {"topology": request.topology, "threshold_pct": request.threshold_pct,
                "gpu_placement": placement.describe() if placement else None,
                "summary": summarize(self.every).as_dict(), "failed": len(self.failed),
                "row_counts": self.row_counts(),
                "logs": [{"log": run.path, "test": run.test, "op": run.op, "op_from": run.op_from,
                          "ranks_in_log": run.ranks, "ranks_from": run.ranks_from,
                          "hosts": list(run.hosts), "gpu": list(run.gpu_names),
                          "nccl_version": run.nccl_version, "columns_from": run.columns_from,
                          "env": {k: v for k, v, _ in run.nccl_env},
                          "settings_from_log": self.notes(run),
                          "row_counts": row_counts(run).as_dict(),
                          "warnings": [str(w) for w in run.warnings],
                          "summary": summarize(rows).as_dict(),
                          "rows": rows} for run, rows in self.results]}

    def to_pandas(self) -> Any:
        """Every row (entries, or sizes of every log); needs pandas."""
        return rows_frame(self.every)


def _log_only(request: ValidateRequest) -> list[tuple[str, object]]:
    """(flag, value) of the settings only a log run uses, in the order errors name them."""
    placement = request.placement
    return [("topology", request.topology), ("gpus", request.gpus), ("op", request.op), ("in_place", request.in_place),
            (placement.flag if placement else "placement", placement and not placement.is_default),
            ("env", request.env), ("strict", request.strict), ("run", request.run),
            ("algo", request.algo != "auto"), ("protocol", request.protocol != "auto"),
            ("engine", request.engine != "auto")]


def plan_validate(request: ValidateRequest) -> ValidatePlan:
    """The request checked (log settings without logs are errors naming the flag) and made
    concrete: entries loaded, or logs read and the topology built."""
    if not request.logs:
        for flag, value in _log_only(request):
            if value:
                raise InputError("only with --nccl-tests LOG (it sets up the simulation of a log)", field=flag)
        path = Path(request.file) if request.file else find(DEFAULT_FILE, "validation")
        entries = load_published(path)
        root = path.resolve().parent.parent if path.resolve().parent.name == "validation" else Path.cwd()
        return ValidatePlan(request=request, entries=entries, root=root, inputs=(path,))
    if request.topology is None:
        raise InputError("--nccl-tests needs --topology T, the topology YAML of the measured system",
                         field="topology")
    runs: list[NcclTestsRun] = []
    for log in request.logs:
        found = parse_log(log, op=request.op, gpus=request.gpus, env=list(request.env), strict=request.strict)
        if request.run is not None:
            if request.run > len(found):
                raise InputError(f"--run {request.run}: the log holds {len(found)} "
                                 f"test{'s' if len(found) != 1 else ''}", file=log)
            found = (found[request.run - 1],)
        runs += found
    inputs = (*(Path(log) for log in request.logs), *topology_files(find(request.topology, "topologies")))
    return ValidatePlan(request=request, runs=tuple(runs), fabric=load_fabric(request.topology), inputs=inputs)


def run_validate(planned: ValidatePlan | ValidateRequest,
                 on_row: Callable[[str], None] | None = None) -> ValidateOutcome:
    """Run a planned (or a plain) request; ``on_row(what)`` hears each entry or size as it starts
    (a status line), never changing what runs."""
    planned = planned if isinstance(planned, ValidatePlan) else plan_validate(planned)
    request = planned.request
    if not request.logs:
        rows = predict(planned.entries, planned.root, request.threshold_pct,
                       on_row=(lambda r: on_row(r["name"])) if on_row else None)
        return ValidateOutcome(request=request, rows=rows)
    results, placed = [], {}
    unplaced = request.placement is None or request.placement.is_default
    for run in planned.runs:
        if unplaced and run.ranks and (found := log_placement(planned.fabric, run, run.ranks)):
            placed[(run.path, run.test)] = found[1]
        heard = (lambda r, run=run: on_row(f"{run_label(run, r['ranks'])}: {r['bytes']} B")) if on_row else None
        rows = compare_run(planned.fabric, run, algo=request.algo, protocol=request.protocol, engine=request.engine,
                           in_place=request.in_place, threshold_pct=request.threshold_pct,
                           placement=request.placement, on_row=heard)
        results.append((run, rows))
    architectures = {part: spec.architecture for part, spec in planned.fabric.gpu_specs.items()}
    return ValidateOutcome(request=request, rows=[r for _, rows in results for r in rows], results=results,
                           system=planned.fabric.name, architectures=architectures, placed=placed)
