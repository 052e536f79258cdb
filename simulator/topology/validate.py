"""YAML file -> validated pydantic model (topologies and other file schemas), errors located by line.

Pydantic reports errors by ``loc`` (a path of keys and indices); the source map from the loader
turns that path back into the file and line the user wrote. Every problem of a file is reported
at once, one line each (``errors.InputErrors``; the first ``MAX_PROBLEMS``), a name outside a closed
set with its closest choice ("did you mean 'ring'?").
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

import re

from simulator.errors import InputError, did_you_mean, raise_all
from simulator.topology.loader import Path_, SourceMap, load_yaml
from simulator.topology.schema import TopologyModel


def load_topology(path: str | Path) -> TopologyModel:
    """Read and validate a topology file; raises :class:`InputError` with file, line and field."""
    data, sources = load_yaml(path)
    return validate_topology(data, sources)


def validate_topology(data: dict[str, Any], sources: SourceMap) -> TopologyModel:
    """Validate already-loaded data; errors are located through ``sources``."""
    model = validate_model(TopologyModel, data, sources)
    model._sources = sources
    return model


M = typing.TypeVar("M", bound=BaseModel)


MAX_PROBLEMS = 20
"""Problems of one file listed at most (a file of another kind can fail on every key); the count of
the rest follows."""


def validate_model(model: type[M], data: Any, sources: SourceMap) -> M:
    """Validate loaded YAML data as ``model`` (any file schema: topologies, scenarios, validation
    tables); every error becomes an :class:`InputError` at the file and line it came from, raised
    together (one, or :class:`InputErrors`)."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        problems = [_to_input_error(model, e, sources) for e in err.errors(include_url=False)]
        unique = list({str(p): p for p in problems}.values())  # one line per place and problem
        if len(unique) > MAX_PROBLEMS:
            rest = len(unique) - MAX_PROBLEMS
            unique = unique[:MAX_PROBLEMS] + [InputError(f"and {rest} more problem{'s' if rest > 1 else ''}",
                                                         file=sources.file)]
        raise_all(unique)
        raise AssertionError("unreachable: a ValidationError has errors")  # pragma: no cover


def _to_input_error(model: type[BaseModel], error: dict[str, Any], sources: SourceMap) -> InputError:
    loc: Path_ = tuple(error["loc"])
    path = _data_path(loc, sources, missing=error["type"] == "missing")
    return sources.error(path, _message(model, error, loc))


def _data_path(loc: Path_, sources: SourceMap, *, missing: bool) -> Path_:
    """The part of a pydantic ``loc`` that names data in the file (drops union/validator tags)."""
    path: Path_ = ()
    for part in loc:
        if path + (part,) in sources.locations:
            path += (part,)
        elif missing and part == loc[-1]:
            return path + (part,)
    return path


def _message(model: type[BaseModel], error: dict[str, Any], loc: Path_) -> str:
    kind, text = error["type"], error["msg"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return f"unknown key {loc[-1]!r}{hint}{did_you_mean(str(loc[-1]), allowed)}"
    if kind == "missing":
        return "required key is missing"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"expected a mapping of keys, got {error.get('input')!r}"
    if kind == "value_error":
        text = text.removeprefix("Value error, ")
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", (error.get("ctx") or {}).get("expected", ""))
        return f"{text}, got {error.get('input')!r}{did_you_mean(str(error.get('input')), choices)}"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{text}, got {error.get('input')!r}"
    return text


def _allowed_keys(model: type[BaseModel], loc: Path_) -> list[str]:
    """Field names (by alias) of the model found at ``loc`` inside ``model``."""
    target: Any = model
    for part in loc:
        target = _element(target, part)
        if target is None:
            return []
    if isinstance(target, type) and issubclass(target, BaseModel):
        return [f.alias or name for name, f in target.model_fields.items()]
    return []


def _element(target: Any, part: str | int) -> Any:
    target = _unwrap(target)
    if isinstance(part, int):
        args = typing.get_args(target)
        return _unwrap(args[0]) if args else None
    if typing.get_origin(target) in (typing.Union, types.UnionType):  # a tagged union: pydantic's loc
        for member in map(_unwrap, typing.get_args(target)):  # names the member by its tag (``decode``)
            kind = getattr(member, "model_fields", {}).get("kind")
            if kind is not None and part in typing.get_args(kind.annotation):
                return member
        return None
    if isinstance(target, type) and issubclass(target, BaseModel):
        for name, info in target.model_fields.items():
            if part in (name, info.alias):
                return _unwrap(info.annotation)
    return None


def _unwrap(tp: Any) -> Any:
    """Strip Annotated and Optional around a type."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp

