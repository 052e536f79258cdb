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
import signal
import threading
from dataclasses import dataclass
from typing import Any, Callable

from simulator.errors import InputError
from simulator.runner.cache import ResultCache
from simulator.runner.sweep_file import Point

Execute = Callable[[dict[str, Any]], dict[str, Any]]
CONNECT_TIMEOUT = "5s"
"""How long to try reaching a given scheduler before reporting it unreachable."""
ABANDON_TIMEOUT_S = 5
"""How long closing a cluster whose start was interrupted may take (s)."""


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
    """A distributed.Client on a new LocalCluster or an existing scheduler, closed on exit.

    A Ctrl-C while the local cluster starts lets the start finish (about a second), closes the
    cluster quietly, then raises ``KeyboardInterrupt`` (a second Ctrl-C stops the start at once);
    an interrupted run silences what Dask logs about the tasks it cancels."""

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
        from distributed.deploy.spec import SpecCluster

        n = self.workers or default_workers()
        before = set(SpecCluster._instances)
        interrupted: list[bool] = []

        def on_sigint(signum: int, frame: object) -> None:
            # the first Ctrl-C waits for the start to finish (a worker process cut off while it
            # reads what its parent sends prints a traceback of its own); a second one stops it now
            interrupted.append(True)
            if len(interrupted) > 1:
                raise KeyboardInterrupt

        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, on_sigint) if main else None
        try:
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=self.processes,
                                        dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
            if interrupted:
                raise KeyboardInterrupt
        except BaseException:
            # Ctrl-C while the cluster starts (or a start that fails): close what did start,
            # quietly, so neither this nor distributed's own exit hook prints a traceback
            _quiet_logs()
            self._abandon([c for c in list(SpecCluster._instances) if c not in before])
            if interrupted:
                raise KeyboardInterrupt from None
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        if interrupted:  # Ctrl-C between the check above and putting the old handler back
            _quiet_logs()
            self._abandon([c for c in list(SpecCluster._instances) if c not in before])
            raise KeyboardInterrupt
        return self.client

    def _abandon(self, clusters: list) -> None:
        """Close a client and clusters that a start-up left half made; nothing they raise escapes."""
        for closing in ([self.client] if self.client is not None else []) + clusters:
            try:
                closing.close(timeout=ABANDON_TIMEOUT_S)
            except BaseException:  # noqa: BLE001 - a half-started cluster fails its own asserts
                pass
            finally:
                if closing in clusters:
                    closing.shutdown_on_close = False  # distributed's atexit hook would try again, loudly
        self.client = self.cluster = None

    def __exit__(self, kind: type | None, *exc: object) -> None:
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            _quiet_logs()  # the tasks in flight are cancelled: what Dask logs about them is no news
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


QUIET_LOGGERS = ("distributed", "tornado", "asyncio")
"""Loggers that report the tasks and workers an interrupt cancels (tracebacks from Dask's and
Tornado's callbacks, "Task exception was never retrieved"): silenced once the run is interrupted."""


def _quiet_logs() -> None:
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
