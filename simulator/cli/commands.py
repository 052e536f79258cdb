"""The list of command modules; each defines ``register(app)``."""

from simulator.cli import bench, compare, describe, lab, run, sweep, validate

MODULES = [describe, bench, run, compare, sweep, validate, lab]
