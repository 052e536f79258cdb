"""fabricsim: a discrete-event simulator of GPU cluster interconnects.

Data flows one way: YAML -> validated model (topology) -> graph (topology) -> engine -> metrics -> reports.
"""

from simulator.version import __version__

_API = ("load_topology", "bench", "run_scenario", "compare", "serve", "validate", "sweep", "lab", "calibrate", "BenchOutcome",
        "ScenarioOutcome", "ServeOutcome", "BenchResult", "ScenarioResult")


def __getattr__(name: str):  # noqa: ANN202
    """The public API (:mod:`simulator.api`), imported on first use so ``fabricsim --help`` stays fast."""
    if name in _API:
        from simulator import api

        return getattr(api, name)
    raise AttributeError(f"module 'simulator' has no attribute {name!r}")


__all__ = [*_API, "__version__"]
