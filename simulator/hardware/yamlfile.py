"""Read a parts file with ``yaml.safe_load`` and keep node marks to report ``FILE:LINE`` on errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import yaml

from simulator.errors import InputError

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""``yaml.safe_load``'s loader with libyaml's parser when PyYAML was built with it (the same
constructors and resolver as ``SafeLoader``, several times faster on the parts catalog)."""


class YamlFile:
    """Parsed data plus the node tree, to find the line of any key path."""

    __slots__ = ("path", "data", "_text", "_root")

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read parts file: {exc.strerror or exc}", file=str(path)) from None
        try:
            self.data: Any = yaml.load(text, Loader=LOADER)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise InputError(f"broken YAML: {problem}", file=str(path), line=line) from None
        self._text, self._root = text, None

    @property
    def root(self) -> yaml.Node | None:
        """The node tree (line marks), composed on first use: only errors need it."""
        if self._root is None and self._text:
            self._root = yaml.compose(self._text, Loader=LOADER)
        return self._root

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
