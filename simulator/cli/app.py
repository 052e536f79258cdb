"""The ``fabricsim`` application: registers each command module and maps errors to exit codes.

Exit codes: 0 success; 1 a check failed (e.g. validation error above threshold); 2 bad input
(one line ``FILE:LINE: field: what is wrong`` on stderr); 3 the simulation stopped itself
(deadlock, broken invariant) with a report.
"""

from __future__ import annotations

import sys

import typer

from simulator.errors import InputError, SimulationError

app = typer.Typer(
    name="fabricsim",
    help="Discrete-event simulator of GPU cluster interconnects (NVLink, NVSwitch, PCIe, InfiniBand).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Simulate GPU interconnects: describe topologies, run scenarios, benchmark collectives."""


def _register() -> None:
    """Each command lives in its own module with a ``register(app)`` function."""
    from simulator.cli import commands

    for module in commands.MODULES:
        module.register(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script and of ``python -m simulator``."""
    _register()
    try:
        app(args=argv, prog_name="fabricsim", standalone_mode=True)
    except InputError as err:
        print(f"fabricsim: {err}", file=sys.stderr)
        sys.exit(2)
    except SimulationError as err:
        print(f"fabricsim: simulation stopped: {err}", file=sys.stderr)
        sys.exit(3)
