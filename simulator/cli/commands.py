"""The list of command modules; each defines ``register(app)``."""

from simulator.cli import (bench, calibrate, chakra_example, compare, describe, lab, listing, run, serve, sweep,
                           validate)

MODULES = [describe, bench, run, compare, serve, sweep, validate, lab, chakra_example, listing, calibrate]
