"""The ``fabricsim`` application: registers each command module and maps errors to exit codes.

Exit codes: 0 success; 1 a check failed (e.g. validation error above threshold); 2 bad input
(one line ``FILE:LINE: field: what is wrong`` on stderr); 3 the simulation stopped itself
(deadlock, broken invariant) with a report; 130 interrupted (Ctrl-C), one line, no output replaced.
"""

from __future__ import annotations

import functools
from typing import Callable

import typer

from simulator.errors import InputError, SimulationError

app = typer.Typer(
    name="fabricsim",
    help="Discrete-event simulator of GPU cluster interconnects (NVLink, NVSwitch, PCIe, InfiniBand).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: rendering it through rich costs ~0.2 s of imports per call
)


def _version(value: bool) -> None:
    if value:
        from simulator.version import __version__

        typer.echo(f"fabricsim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Simulate GPU interconnects: describe topologies, run scenarios, benchmark collectives."""


def _mapped(callback: Callable) -> Callable:
    """Wrap a command so bad input exits 2 with one line and a stopped simulation exits 3."""

    @functools.wraps(callback)
    def run(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        try:
            return callback(*args, **kwargs)
        except InputError as err:
            for one in getattr(err, "errors", [err]):  # InputErrors: every problem, one line each
                if one.file is None and one.field:
                    one.field = _as_flag(callback, one.field)
                typer.echo(f"fabricsim: {one}", err=True)
            raise typer.Exit(2) from None
        except SimulationError as err:
            typer.echo(f"fabricsim: simulation stopped: {err}", err=True)
            raise typer.Exit(3) from None
        except KeyboardInterrupt:  # Ctrl-C: one line, exit 130 (128 + SIGINT), outputs left as they were
            import signal

            signal.signal(signal.SIGINT, signal.SIG_IGN)  # exiting: a second Ctrl-C must not kill the clean-up
            typer.echo("\nfabricsim: interrupted", err=True)
            raise typer.Exit(130) from None

    return run


def _as_flag(callback: Callable, field: str) -> str:
    """A command parameter's Python name as the user typed it (``hot_load`` -> ``--hot-load``,
    ``json_path`` -> ``--json``, an argument -> ``TOPOLOGY``); other field names unchanged."""
    import inspect

    try:
        param = inspect.signature(callback, eval_str=True).parameters.get(field)
    except (NameError, TypeError):  # an annotation that cannot be evaluated here
        param = None
    if param is None:
        return field
    for meta in getattr(param.annotation, "__metadata__", ()):
        if isinstance(meta, typer.models.ArgumentInfo):
            return field.upper()
        if isinstance(meta, typer.models.OptionInfo):
            decls = [d for d in (meta.param_decls or ()) if d.startswith("--")]
            if decls:
                return decls[0]
    return "--" + field.replace("_", "-")


def _wrap_all(typer_app: typer.Typer) -> None:
    for info in typer_app.registered_commands:
        if info.callback is not None and not getattr(info.callback, "__wrapped__", None):
            info.callback = _mapped(info.callback)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _wrap_all(group.typer_instance)


_registered = False


def _register() -> None:
    """Each command lives in its own module with a ``register(app)`` function; every command's
    errors are mapped to exit codes in one place."""
    global _registered
    if _registered:
        return
    from simulator.cli import commands

    for module in commands.MODULES:
        module.register(app)
    _wrap_all(app)
    _registered = True


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script and of ``python -m simulator``."""
    _register()
    try:
        app(args=argv, prog_name="fabricsim", standalone_mode=True)
    except KeyboardInterrupt:  # Ctrl-C outside a command (while click parses), or while one exits
        raise SystemExit(130) from None
