"""Fan sweep points out on Dask distributed and collect one outcome per point.

A local cluster (one single-threaded worker process per core by default) or an existing
scheduler (``tcp://HOST:PORT``; start one with ``dask scheduler`` and workers with
``dask worker tcp://HOST:8786``; workers need fabricsim installed and the same topology parts
files). Points already in the cache are not sent; each finished point is cached the moment it
arrives, so a failure or an interrupt never loses finished work. The function that simulates a
point is passed in (``execute(payload) -> {"rows": [...]} or {"error": "..."}``) and must be
importable by workers; it must not raise.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Callable

from simulator.errors import InputError
from simulator.runner.cache import ResultCache
from simulator.runner.sweep_file import Point

Execute = Callable[[dict[str, Any]], dict[str, Any]]
CONNECT_TIMEOUT = "5s"
"""How long to try reaching a given scheduler before reporting it unreachable."""


@dataclass(frozen=True)
class Outcome:
    """What became of one point."""

    point: Point
    rows: list[dict] | None
    """Result rows (None if the point failed)."""
    error: str | None = None
    cached: bool = False
    """True when the rows came from the cache, not a simulation."""


def default_workers() -> int:
    """One worker process per core."""
    return max(1, os.cpu_count() or 1)


def run_points(points: list[Point], execute: Execute, *, workers: int | None = None,
               scheduler: str | None = None, processes: bool = True, cache: ResultCache | None = None,
               on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every point's outcome, in point order; cached points first reported, then the rest as they
    finish on the cluster."""
    cache = cache or ResultCache(None)
    outcomes: dict[int, Outcome] = {}

    def record(outcome: Outcome) -> None:
        outcomes[outcome.point.index] = outcome
        if on_outcome:
            on_outcome(outcome)

    todo = []
    for point in points:
        rows = cache.get(point.digest)
        if rows is not None:
            record(Outcome(point, rows, cached=True))
        else:
            todo.append(point)
    if todo:
        with _client(workers, scheduler, processes) as client:
            from distributed import as_completed

            futures = {client.submit(execute, _shipped(p.payload), key=f"fabricsim-{p.digest[:16]}-{p.index}",
                                     pure=False): p for p in todo}
            for future in as_completed(futures):
                point = futures[future]
                try:
                    result = future.result()
                except Exception as err:  # a worker died or the task was lost: report, keep going
                    result = {"error": f"{type(err).__name__}: {err}"}
                if "error" in result:
                    record(Outcome(point, None, error=str(result["error"])))
                else:
                    cache.put(point.digest, result["rows"])
                    record(Outcome(point, result["rows"]))
    return [outcomes[p.index] for p in points]


def _shipped(payload: dict[str, Any]) -> dict[str, Any]:
    """What a worker needs: the payload without its copy of the hashed inputs."""
    return {k: v for k, v in payload.items() if k != "hashed"}


class _client:
    """A distributed.Client on a new LocalCluster or an existing scheduler, closed on exit."""

    def __init__(self, workers: int | None, scheduler: str | None, processes: bool) -> None:
        self.workers, self.scheduler, self.processes = workers, scheduler, processes
        self.cluster = self.client = None

    def __enter__(self):  # noqa: ANN204
        from distributed import Client, LocalCluster

        if self.scheduler:
            try:
                self.client = Client(self.scheduler, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as err:
                raise InputError(f"cannot reach the Dask scheduler {self.scheduler!r}: {err}; start one with "
                                 "'dask scheduler' and workers with 'dask worker ADDRESS'",
                                 field="scheduler") from None
            return self.client
        n = self.workers or default_workers()
        self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=self.processes,
                                    dashboard_address=None, silence_logs=logging.ERROR)
        self.client = Client(self.cluster)
        return self.client

    def __exit__(self, *exc: object) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
