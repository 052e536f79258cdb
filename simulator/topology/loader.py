"""YAML reading that remembers where every value came from (file and line), with ``extends:``.

The document is composed by ``hardware.yamlfile`` (safe, with limits on size, depth and alias
expansion) into nodes that carry marks. A file may start with ``extends: base.yaml`` (relative to
itself): the base document is composed first and this file's keys are merged over it (mappings key
by key; lists of mappings whose items have a ``name`` item by item, a new name appended; anything
else replaced). YAML merge keys (``<<: *defaults``) work inside a file. The merged node tree is
then turned into plain Python data plus a :class:`SourceMap` from data paths to ``(file, line)``,
so a later error about ``links[2].cable.length`` points at the line the user wrote, in the file
they wrote it in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from simulator.errors import InputError, format_path  # noqa: F401  (format_path: also imported from here)
from simulator.hardware.yamlfile import compose, read_text

Path_ = tuple[str | int, ...]
"""A data path: mapping keys and list indices from the document root, e.g. ``("links", 2, "cable")``."""

EXTENDS_KEY = "extends"
MAX_EXTENDS_DEPTH = 8
"""Longest ``extends`` chain accepted (a loop is reported before this is reached)."""


@dataclass(slots=True)
class SourceMap:
    """Where each value of a loaded document was written: data path -> (file, 1-based line)."""

    file: str
    """The file the user named (errors without a better place point here)."""
    locations: dict[Path_, tuple[str, int]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    """Every file the document was read from: the file itself, then each file it ``extends:``."""

    def where(self, path: Path_) -> tuple[str, int | None]:
        """File and line of ``path``, or of its nearest ancestor that was written down."""
        for cut in range(len(path), -1, -1):
            loc = self.locations.get(tuple(path[:cut]))
            if loc is not None:
                return loc
        return self.file, None

    def error(self, path: Path_, message: str) -> InputError:
        """An :class:`InputError` located at ``path``."""
        file, line = self.where(path)
        return InputError(message, file=file, line=line, field=format_path(path) or None)


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _file_error(path: Path, message: str, ref: tuple[str, int] | None, field_: str | None) -> InputError:
    if ref is not None:
        return InputError(f"{path}: {message}", file=ref[0], line=ref[1], field=field_)
    return InputError(message, file=str(path))


def _compose(path: Path, ref: tuple[str, int] | None = None, field_: str | None = None) -> yaml.Node:
    """Compose one YAML file into a node tree (``hardware.yamlfile``'s limits); errors become
    located InputErrors."""
    if not path.is_file():
        raise _file_error(path, "no such file" if not path.exists() else "not a file", ref, field_)
    try:
        text = read_text(path)
    except InputError as err:
        raise _file_error(path, err.message, ref, field_) from None
    node, _ = compose(text, str(path))
    if node is None:
        raise InputError("the file is empty", file=str(path))
    if not isinstance(node, yaml.MappingNode):
        raise InputError("a topology file must be a mapping of keys (name:, devices:, links: ...)",
                         file=str(path), line=_line(node))
    _check_duplicate_keys(node, path)
    return node


def _check_duplicate_keys(node: yaml.Node, path: Path, done: set[int] | None = None) -> None:
    """YAML silently keeps the last of two equal keys; a topology file treats that as a mistake.
    A node an alias repeats is checked once (``done``: ids of the nodes checked)."""
    done = set() if done is None else done
    if id(node) in done:
        return
    done.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    raise InputError(f"duplicate key {key.value!r} (first written on line {seen[key.value]})",
                                     file=str(path), line=_line(key), field=key.value)
                seen[key.value] = _line(key)
            _check_duplicate_keys(value, path, done)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check_duplicate_keys(item, path, done)


def _get(node: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return k, v
    return None


def _item_name(node: yaml.Node) -> str | None:
    if isinstance(node, yaml.MappingNode):
        entry = _get(node, "name")
        if entry is not None and isinstance(entry[1], yaml.ScalarNode):
            return entry[1].value
    return None


def _merge(base: yaml.Node, over: yaml.Node) -> yaml.Node:
    """``over`` merged onto ``base`` (see module docstring); nodes keep their own marks."""
    if isinstance(base, yaml.MappingNode) and isinstance(over, yaml.MappingNode):
        pairs = list(base.value)
        for key, value in over.value:
            for i, (bkey, bvalue) in enumerate(pairs):
                if isinstance(bkey, yaml.ScalarNode) and isinstance(key, yaml.ScalarNode) \
                        and bkey.value == key.value:
                    pairs[i] = (key, _merge(bvalue, value))
                    break
            else:
                pairs.append((key, value))
        return yaml.MappingNode(base.tag, pairs, over.start_mark, over.end_mark)
    if isinstance(base, yaml.SequenceNode) and isinstance(over, yaml.SequenceNode):
        names = [_item_name(n) for n in base.value]
        if all(names) and all(_item_name(n) for n in over.value):
            items = list(base.value)
            for item in over.value:
                name = _item_name(item)
                if name in names:
                    idx = names.index(name)
                    items[idx] = _merge(items[idx], item)
                else:
                    items.append(item)
                    names.append(name)
            return yaml.SequenceNode(base.tag, items, over.start_mark, over.end_mark)
    return over


def _resolve_extends(path: Path, node: yaml.MappingNode, chain: tuple[Path, ...],
                     read: list[str]) -> yaml.Node:
    entry = _get(node, EXTENDS_KEY)
    if entry is None:
        return node
    key, value = entry
    ref = (str(path), _line(key))
    if not isinstance(value, yaml.ScalarNode) or not value.value:
        raise InputError("expected the name of a topology file", file=ref[0], line=ref[1], field=EXTENDS_KEY)
    base_path = path.parent / value.value
    if base_path.resolve() in chain or len(chain) >= MAX_EXTENDS_DEPTH:
        raise InputError(f"{value.value} extends itself (directly or through other files)",
                         file=ref[0], line=ref[1], field=EXTENDS_KEY)
    base = _compose(base_path, ref, EXTENDS_KEY)
    read.append(str(base_path))
    base = _resolve_extends(base_path, base, chain + (base_path.resolve(),), read)
    own = yaml.MappingNode(node.tag, [(k, v) for k, v in node.value if k is not key],
                           node.start_mark, node.end_mark)
    merged = _merge(base, own)
    merged.value = [(k, v) for k, v in merged.value
                    if not (isinstance(k, yaml.ScalarNode) and k.value == EXTENDS_KEY)]
    return merged


_PLAIN_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")
"""Tags of the mappings and lists a document may hold (a ``!!set``, ``!!omap`` or ``!!python/...``
tag on one is an error, not silently dropped)."""


class _Builder(yaml.constructor.SafeConstructor):
    """Turns a (merged) node tree into plain data while recording each path's location."""

    def __init__(self, sources: SourceMap) -> None:
        super().__init__()
        self.sources = sources

    def data(self, node: yaml.Node, path: Path_) -> Any:
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.tag not in _PLAIN_TAGS:
            raise InputError(f"cannot read value: the tag {node.tag!r} is not supported (plain mappings and "
                             "lists only)", file=node.start_mark.name, line=_line(node), field=format_path(path) or None)
        if isinstance(node, yaml.MappingNode):
            self._merge_keys(node, path)
            out: dict[Any, Any] = {}
            for key, value in node.value:
                k = self.construct_object(key, deep=True) if isinstance(key, yaml.ScalarNode) else None
                if not isinstance(k, (str, int, float, bool)):
                    raise InputError("mapping keys must be plain names", file=key.start_mark.name,
                                     line=_line(key), field=format_path(path) or None)
                child = path + (str(k),)
                self.sources.locations[child] = (key.start_mark.name, _line(key))
                out[str(k)] = self.data(value, child)
            return out
        if isinstance(node, yaml.SequenceNode):
            items = []
            for i, item in enumerate(node.value):
                self.sources.locations[path + (i,)] = (item.start_mark.name, _line(item))
                items.append(self.data(item, path + (i,)))
            return items
        try:
            return self.construct_object(node, deep=True)
        except yaml.YAMLError as err:
            raise InputError(f"cannot read value: {_first_line(err)}", file=node.start_mark.name, line=_line(node),
                             field=format_path(path) or None) from None

    def _merge_keys(self, node: yaml.MappingNode, path: Path_) -> None:
        """Apply ``<<:`` merge keys in place (YAML 1.1: the merged keys first, the mapping's own over them)."""
        if not any(k.tag == "tag:yaml.org,2002:merge" for k, _ in node.value):
            return
        try:
            self.flatten_mapping(node)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None) or node.start_mark
            raise InputError(f"bad merge key (<<): {getattr(err, 'problem', None) or _first_line(err)}",
                             file=mark.name, line=mark.line + 1, field=format_path(path) or None) from None


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def load_yaml(path: str | Path) -> tuple[dict[str, Any], SourceMap]:
    """Read a topology file (following ``extends``) into plain data and its source map."""
    path = Path(path)
    node = _compose(path)
    sources = SourceMap(file=str(path), files=[str(path)])
    node = _resolve_extends(path, node, (path.resolve(),), sources.files)
    sources.locations[()] = (str(path), _line(node))
    data = _Builder(sources).data(node, ())
    return data, sources
