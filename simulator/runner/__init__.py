"""Running simulations: bench sweeps (``sweeps``), scenario runs (``scenario_run``), predictions
against published figures and nccl-tests logs (``validation``, ``nccl_tests_validation``), healthy vs
degraded runs (``degraded``), and sweep files expanded into points with a content-hash result cache
and a fan-out onto a Dask distributed cluster (``sweep_file``, ``cache``, ``distributed``,
``sweep_points``).

Layer: above workloads and metrics, below reports (which only format what is run here) and the CLI.
Nothing here imports ``simulator.reports``.
"""
