"""Dotted paths into loaded YAML data (``links.rails.cable.length``) and setting values there.

A path segment names a mapping key, or, inside a list of mappings, the item whose ``name`` is the
segment (links, enclosures, devices, scenario workloads are all named). Used by sweep axes such as
``topology.links.leaf_spine.credit_buffer`` or ``scenario.workloads.ar.sizes``.
"""

from __future__ import annotations

import copy
from typing import Any

from simulator.errors import InputError


def _step(node: Any, segment: str, walked: str) -> Any:
    if isinstance(node, dict):
        if segment not in node:
            keys = ", ".join(map(str, node)) or "none"
            raise KeyError(f"{walked or 'the file'} has no key {segment!r} (keys: {keys})")
        return node[segment]
    if isinstance(node, list):
        for item in node:
            if isinstance(item, dict) and str(item.get("name")) == segment:
                return item
        names = ", ".join(str(i.get("name")) for i in node if isinstance(i, dict) and "name" in i) or "none"
        raise KeyError(f"{walked} has no item named {segment!r} (names: {names})")
    raise KeyError(f"{walked} is a value, not a mapping or list")


def check_path(data: Any, path: str) -> None:
    """Raise ``KeyError`` (with a readable message) unless every segment but the last exists and
    the last one's parent is a mapping (a missing last key may be added, e.g. an optional field)."""
    parts = path.split(".")
    node, walked = data, ""
    for segment in parts[:-1]:
        node = _step(node, segment, walked)
        walked = f"{walked}.{segment}" if walked else segment
    if not isinstance(node, dict):
        raise KeyError(f"{walked or 'the file'} is not a mapping, so {parts[-1]!r} cannot be set there")


def with_values(data: Any, values: dict[str, Any]) -> Any:
    """A deep copy of ``data`` with each ``path -> value`` set."""
    out = copy.deepcopy(data)
    for path, value in values.items():
        try:
            check_path(out, path)
        except KeyError as err:
            raise InputError(str(err.args[0]), field=path) from None
        parts = path.split(".")
        node = out
        for segment in parts[:-1]:
            node = _step(node, segment, "")
        node[parts[-1]] = value
    return out
