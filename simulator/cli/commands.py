"""The list of command modules; each defines ``register(app)``."""

from simulator.cli import describe

MODULES = [describe]
