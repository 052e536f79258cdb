"""The list of command modules; each defines ``register(app)``."""

from simulator.cli import bench, describe, lab

MODULES = [describe, bench, lab]
