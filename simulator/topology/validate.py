"""YAML file -> validated pydantic model (topologies and other file schemas), errors located by line.

Pydantic reports errors by ``loc`` (a path of keys and indices); the source map from the loader
turns that path back into the file and line the user wrote. Only the first error is reported:
one line, as the CLI promises.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from simulator.errors import InputError
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


def validate_model(model: type[M], data: Any, sources: SourceMap) -> M:
    """Validate loaded YAML data as ``model`` (any file schema: topologies, scenarios, validation
    tables); the first error becomes an :class:`InputError` at the file and line it came from."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise _to_input_error(model, err, sources) from None


def _to_input_error(model: type[BaseModel], err: ValidationError, sources: SourceMap) -> InputError:
    first = err.errors(include_url=False)[0]
    loc: Path_ = tuple(first["loc"])
    path = _data_path(loc, sources, missing=first["type"] == "missing")
    return sources.error(path, _message(model, first, loc))


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
        return f"unknown key {loc[-1]!r}{hint}"
    if kind == "missing":
        return "required key is missing"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"expected a mapping of keys, got {error.get('input')!r}"
    if kind == "value_error":
        text = text.removeprefix("Value error, ")
    if kind == "literal_error" or kind.endswith("_type") or kind.endswith("_parsing"):
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

