"""Errors that reach the user as one line, ``FILE:LINE: field.path: what is wrong``, and exit code 2."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


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


def format_path(path: Sequence[str | int]) -> str:
    """``("links", 2, "cable", "length")`` -> ``links[2].cable.length``: how a field is named in errors."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass(frozen=True, slots=True)
class Origin:
    """Where one parsed item was written, kept beside it from the moment it is read, so that any
    later error about it is placed by :meth:`error` alone: a place in a YAML document (its source
    map, ``topology.loader.SourceMap``, and the item's data path: FILE:LINE and field), or a
    command-line flag (``--fault``, with the item's own words as ``label``)."""

    sources: Any = None
    """The document's source map (anything with ``error(path, message) -> InputError``); None for a flag."""
    path: tuple = ()
    """The item's data path in the document, e.g. ``("faults", 2)``."""
    flag: str | None = None
    """The flag the item was given with (``--fault``), when it came from the command line."""
    label: str = ""
    """How the item reads in an error about a flag (``link_down from=a to=b``)."""

    def error(self, message: str, key: str | None = None) -> InputError:
        """The error ``message`` about the item, or about its field ``key``, placed where it was
        written: FILE:LINE of the key (else of the item) and its field path, or the flag."""
        if self.sources is not None:
            return self.sources.error(self.path + ((key,) if key else ()), message)
        if self.flag is not None:
            return InputError(f"{self.label}: {message}" if self.label else message, field=self.flag)
        return InputError(message, field=format_path(self.path + ((key,) if key else ())) or None)


class InputErrors(InputError):
    """Several problems found at once (every mistake of a scenario file, each with its FILE:LINE)."""

    def __init__(self, errors: Sequence[InputError]) -> None:
        super().__init__(f"{len(errors)} problems", file=None)
        self.errors = list(errors)

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


def raise_all(errors: Sequence[InputError]) -> None:
    """Raise nothing, the one error, or all of them together."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InputErrors(errors)


def did_you_mean(value: str, choices: Sequence[str]) -> str:
    """``"; did you mean 'ring'?"`` for the closest of ``choices`` (difflib), or an empty string."""
    import difflib

    folded = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(str(value).lower(), list(folded), n=1, cutoff=0.6)
    return f"; did you mean {folded[close[0]]!r}?" if close else ""


def unknown_choice(what: str, value: object, choices: Sequence[str], **where: object) -> InputError:
    """The one wording of an unknown name: ``unknown algo 'rign'; choose ring, tree, ...; did you mean 'ring'?``"""
    return InputError(f"unknown {what} {value!r}; choose {', '.join(choices)}{did_you_mean(str(value), choices)}",
                      **where)  # type: ignore[arg-type]


class SimulationError(Exception):
    """The engine stopped a run (deadlock, broken invariant): a report, not a crash."""
