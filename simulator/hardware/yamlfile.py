"""The one YAML reader under every input (parts files, topologies, scenarios, sweeps, fault files,
validation tables): safe (no Python tags), with limits, and errors at ``FILE:LINE``.

Limits, checked while the document is composed and before anything is built from it:

- ``MAX_BYTES``: a larger file is refused unread;
- ``MAX_DEPTH``: mappings and lists nested deeper are refused (5,000 ``[`` would otherwise exhaust
  Python's stack in the composer and in everything that walks the data);
- ``MAX_VALUES``: the values the document holds once every alias is expanded (an alias names
  the node of its anchor, so ``[*a, *a, ...]`` nested nine deep is a few lines of text and 10^9
  values to anything that walks it, as every validator here does); counted on the node graph
  without expanding it, so a bomb is refused at once.

Merge keys (``<<: *defaults``, ``<<: [*a, *b]``) work as YAML 1.1 defines them: the merged
mapping's keys first, the mapping's own keys over them.

The parser is libyaml's when PyYAML was built with it (``CParser``: several times faster on the
parts catalog), else PyYAML's own; the composer is always PyYAML's Python one with the limits
above, so both give the same nodes and the same errors.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Sequence

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, ScalarEvent
from yaml.resolver import Resolver

from simulator.errors import InputError

MAX_BYTES = 64 << 20
"""Largest YAML file read (B): 64 MiB, thousands of times the largest shipped topology."""
MAX_DEPTH = 100
"""Deepest nesting of mappings and lists (the shipped files nest fewer than 10 levels)."""
MAX_VALUES = 1_000_000
"""Most values (scalars, mappings, lists) a document may hold with its aliases expanded."""


class _LimitedComposer(Composer):
    """PyYAML's composer with a nesting limit (an error, not a RecursionError)."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self.check_event(AliasEvent, ScalarEvent):
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(None, None, f"mappings and lists nested more than {MAX_DEPTH} levels deep",
                                    self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


if getattr(yaml, "__with_libyaml__", False):
    from yaml._yaml import CParser

    class _Loader(_LimitedComposer, CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        def __init__(self, stream: Any) -> None:
            CParser.__init__(self, stream)
            _LimitedComposer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
else:  # pragma: no cover - PyYAML without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Loader(Reader, Scanner, Parser, _LimitedComposer, SafeConstructor, Resolver):  # type: ignore[misc,no-redef]
        def __init__(self, stream: Any) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            _LimitedComposer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)


class _Named(io.StringIO):
    """Text with a ``name``: the parser puts it in every mark, so each node knows its file."""

    def __init__(self, text: str, name: str) -> None:
        super().__init__(text)
        self.name = name


def _line(mark: Any) -> int | None:
    return mark.line + 1 if mark is not None else None


def _yaml_error(err: yaml.YAMLError, name: str) -> InputError:
    """A PyYAML error as one located line: ``FILE:LINE: YAML syntax error: what``."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        what = " ".join(x for x in (err.context, err.problem) if x) or "YAML syntax error"
        return InputError(f"YAML syntax error: {what}", file=name, line=_line(mark))
    return InputError(f"YAML syntax error: {str(err).splitlines()[0] if str(err) else type(err).__name__}",
                      file=name)


def read_text(path: Path, what: str = "file") -> str:
    """A YAML file's text (UTF-8, at most ``MAX_BYTES``); an unreadable one is an InputError
    (``cannot read {what}: ...``)."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise InputError(f"the file is {size:,} B, over the {MAX_BYTES:,} B limit of a YAML input",
                             file=str(path))
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"cannot read {what}: not UTF-8 text ({err.reason} at byte {err.start})",
                         file=str(path)) from None
    except OSError as err:
        raise InputError(f"cannot read {what}: {err.strerror or err}", file=str(path)) from None


def _check_expansion(root: yaml.Node, name: str) -> None:
    """Refuse a document whose aliases expand it past ``MAX_VALUES`` values, counted per distinct
    node (memoized), so the count costs what the text costs, not what the expansion would."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        total = 1
        if isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(item) for item in node.value)
        if total > MAX_VALUES:
            raise InputError(f"aliases expand the document past {MAX_VALUES:,} values (an alias bomb?); "
                             "write the values out or use fewer aliases", file=name, line=_line(node.start_mark))
        sizes[id(node)] = total
        return total

    size(root)


def compose(text: str, name: str) -> tuple[yaml.Node | None, _Loader]:
    """``text`` (from file ``name``) as a node tree with line marks, within the limits; and the
    loader that can construct data from it. Errors are InputErrors at ``name``'s line."""
    if len(text) > MAX_BYTES:
        raise InputError(f"the document is {len(text):,} characters, over the {MAX_BYTES:,} limit of a YAML "
                         "input", file=name)
    loader = _Loader(_Named(text, name))
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as err:
        raise _yaml_error(err, name) from None
    except RecursionError:  # pragma: no cover - MAX_DEPTH keeps the stack far from the limit
        raise InputError("YAML syntax error: nested too deeply", file=name) from None
    if node is not None:
        _check_expansion(node, name)
    return node, loader


def construct(loader: _Loader, node: yaml.Node, name: str) -> Any:
    """Plain data of a node tree from :func:`compose` (merge keys applied); a bad tag or merge is an
    InputError at its line."""
    try:
        return loader.construct_document(node)
    except yaml.YAMLError as err:
        raise _yaml_error(err, name) from None


def load_text(text: str, name: str) -> Any:
    """``text`` as plain data (None for an empty document), within the limits."""
    node, loader = compose(text, name)
    return None if node is None else construct(loader, node, name)


def load_file(path: str | Path) -> Any:
    """A YAML file as plain data (None for an empty document), within the limits."""
    path = Path(path)
    return load_text(read_text(path), str(path))


class YamlFile:
    """Parsed data plus the node tree, to find the line of any key path."""

    __slots__ = ("path", "data", "root")

    def __init__(self, path: Path) -> None:
        self.path = path
        text = read_text(path, "parts file")
        node, loader = compose(text, str(path))
        self.root: yaml.Node | None = node
        """The node tree (line marks)."""
        self.data: Any = None if node is None else construct(loader, node, str(path))

    def line_of(self, keys: Sequence[str | int]) -> int | None:
        """1-based line of the deepest node found along ``keys``."""
        node, line = self.root, (self.root.start_mark.line + 1 if self.root else None)
        for key in keys:
            if isinstance(node, yaml.MappingNode):
                match = next((k for k, v in node.value if str(k.value) == str(key)), None)
                if match is None:
                    break
                line = match.start_mark.line + 1
                node = next(v for k, v in node.value if k is match)
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
                node = node.value[key]
                line = node.start_mark.line + 1
            else:
                break
        return line

    def error(self, keys: Sequence[str | int], message: str) -> InputError:
        """An InputError pointing at ``keys`` in this file."""
        return InputError(message, file=str(self.path), line=self.line_of(keys),
                          field=".".join(str(k) for k in keys) or None)
