"""Write result files safely: atomically, and never over a file the user gave as input."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from simulator.errors import InputError


def _guard(path: Path, inputs: Iterable[str | Path]) -> None:
    resolved = path.resolve()
    for item in inputs:
        if Path(item).resolve() == resolved:
            raise InputError("refusing to overwrite an input file with results", file=str(path))
    if path.parent and not path.parent.exists():
        raise InputError(f"output folder {path.parent} does not exist", file=str(path))


def write_text(path: str | Path, text: str, inputs: Iterable[str | Path] = ()) -> Path:
    """Write ``text`` to ``path`` atomically (temp file + rename); refuse to clobber an input."""
    path = Path(path)
    _guard(path, inputs)
    fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: str | Path, data: Any, inputs: Iterable[str | Path] = ()) -> Path:
    """JSON with sorted keys so the same run gives byte-identical files."""
    return write_text(path, json.dumps(data, indent=2, sort_keys=True, default=_jsonable) + "\n", inputs)


def write_csv(path: str | Path, rows: Sequence[Mapping[str, Any]], inputs: Iterable[str | Path] = ()) -> Path:
    """CSV with the union of row keys as header, in first-seen order."""
    fields: list[str] = []
    for row in rows:
        fields.extend(k for k in row if k not in fields)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return write_text(path, buffer.getvalue(), inputs)


def _jsonable(value: Any) -> Any:
    """numpy scalars and arrays, paths and sets into plain JSON types."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (Path, set, frozenset)):
        return str(value) if isinstance(value, Path) else sorted(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
