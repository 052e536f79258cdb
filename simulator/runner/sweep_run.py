"""``sweep`` as one request -> plan -> outcome path: ``fabricsim sweep`` and ``simulator.api.sweep``
build the same :class:`SweepRequest` and get the same :class:`SweepOutcome` (its ``to_dict()`` is
the command's ``--json``; points that failed make the command exit 1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from simulator.runner.cache import ResultCache, default_dir
from simulator.runner.distributed import Outcome, run_points
from simulator.runner.sweep_file import Sweep, load_sweep
from simulator.runner.sweep_points import DEFAULT_METRIC, execute, result_rows
from simulator.runner.tables import rows_frame
from simulator.shipped import find


@dataclass(frozen=True, slots=True)
class SweepRequest:
    """What ``sweep`` is asked; every field has the meaning of the flag of that name."""

    file: str
    """A sweep file, or a shipped sweep's name (``sweep_credit_buffer``)."""
    workers: int | None = None
    """Worker processes of the local Dask cluster; None: one per core."""
    scheduler: str | None = None
    """A running Dask scheduler's address instead of a local cluster."""
    cache: str | None = None
    """Result cache folder; None: ``$FABRICSIM_CACHE`` or ``~/.cache/fabricsim/sweeps``."""
    no_cache: bool = False


@dataclass(frozen=True)
class SweepOutcome:
    """One row per point (``rows``: the point's axes and figures), the raw outcomes (cached or
    not, with each point's error), and the metric plotted by default."""

    name: str
    axes: list[str]
    rows: list[dict] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    metric: str = "busbw_GBps"

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.error is not None]

    def to_dict(self) -> dict:
        """The ``--json`` document of ``fabricsim sweep``."""
        return {"sweep": self.name, "axes": list(self.axes), "rows": self.rows}

    def to_pandas(self) -> Any:
        return rows_frame(self.rows)


def plan_sweep_file(request: SweepRequest) -> Sweep:
    """The sweep file (a path or a shipped name) validated and expanded into its points."""
    return load_sweep(find(request.file, "scenarios"))


def run_sweep(planned: Sweep | SweepRequest, request: SweepRequest | None = None,
              on_point: Callable[[Outcome], None] | None = None) -> SweepOutcome:
    """Run every point (on Dask, cached by content hash); ``on_point`` hears each finished or
    cached point (a progress bar), never changing what runs."""
    if isinstance(planned, SweepRequest):
        request, planned = planned, plan_sweep_file(planned)
    request = request or SweepRequest(file=str(planned.path))
    store = ResultCache(None if request.no_cache else (request.cache or default_dir()))
    outcomes = run_points(planned.points, execute, workers=request.workers, scheduler=request.scheduler,
                          cache=store, on_outcome=on_point)
    return SweepOutcome(name=planned.model.name, axes=list(planned.model.axes), rows=result_rows(outcomes),
                        outcomes=list(outcomes), metric=DEFAULT_METRIC[planned.kind])
