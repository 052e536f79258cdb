"""Write result files safely: atomically, readable by others (0644), never over a file the user gave
as input; ``-`` as the path means standard output."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from simulator.errors import InputError

FILE_MODE = 0o644
"""Permissions of written results and figures (mkstemp's private 0600 would hide them from others)."""
STDOUT = "-"
"""The path that means standard output."""


def guard(path: Path, inputs: Iterable[str | Path]) -> None:
    """Refuse to write over an input file, or into a folder that does not exist."""
    resolved = path.resolve()
    for item in inputs:
        if Path(item).resolve() == resolved:
            raise InputError("refusing to overwrite an input file with results", file=str(path))
    if path.parent and not path.parent.exists():
        raise InputError(f"output folder {path.parent} does not exist", file=str(path))


def write_text(path: str | Path, text: str, inputs: Iterable[str | Path] = ()) -> Path:
    """Write ``text`` to ``path`` atomically (temp file + rename, mode 0644), or to standard output
    when ``path`` is ``-``; refuse to clobber an input."""
    if str(path) == STDOUT:
        import sys

        sys.stdout.write(text)
        sys.stdout.flush()
        return Path(STDOUT)
    return write_bytes(path, text.encode("utf-8"), inputs)


def write_bytes(path: str | Path, data: bytes, inputs: Iterable[str | Path] = ()) -> Path:
    """Write ``data`` to ``path`` atomically (temp file + rename) with mode 0644; refuse to clobber an input."""
    path = Path(path)
    guard(path, inputs)
    fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: str | Path, data: Any, inputs: Iterable[str | Path] = ()) -> Path:
    """JSON with sorted keys so the same run gives byte-identical files."""
    return write_text(path, json.dumps(data, indent=2, sort_keys=True, default=_jsonable) + "\n", inputs)


def write_csv(path: str | Path, rows: Sequence[Mapping[str, Any]], inputs: Iterable[str | Path] = ()) -> Path:
    """CSV with the union of row keys as header, in first-seen order; every cell a scalar (nested
    mappings become ``key.subkey`` columns, lists ``a;b;c``)."""
    rows = [flatten(row) for row in rows]
    fields: list[str] = []
    for row in rows:
        fields.extend(k for k in row if k not in fields)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return write_text(path, buffer.getvalue(), inputs)


def flatten(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """One level of scalars: ``{"dynamic_J": {"nvlink": 1.0}}`` -> ``{"dynamic_J.nvlink": 1.0}``."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple, set, frozenset)):
            out[name] = ";".join(str(v) for v in (sorted(value) if isinstance(value, (set, frozenset)) else value))
        else:
            out[name] = value
    return out


def _jsonable(value: Any) -> Any:
    """numpy scalars and arrays, paths and sets into plain JSON types."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (Path, set, frozenset)):
        return str(value) if isinstance(value, Path) else sorted(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
