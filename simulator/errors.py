"""Errors that reach the user as one line, ``FILE:LINE: field.path: what is wrong``, and exit code 2."""

from __future__ import annotations


class InputError(Exception):
    """Bad user input (a YAML file, a CLI argument): reported as one line, never a traceback."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.field = field

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"


class SimulationError(Exception):
    """The engine stopped a run (deadlock, broken invariant): a report, not a crash."""
