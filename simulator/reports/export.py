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
from simulator.runner.tables import flatten  # noqa: F401  (one flattening: CSV columns and to_pandas)

FILE_MODE = 0o644
"""Permissions of written results and figures (mkstemp's private 0600 would hide them from others)."""
STDOUT = "-"
"""The path that means standard output."""


FIGURE_FORMATS = ("png", "svg", "pdf")
"""Figure formats, chosen by the file's suffix (none: PNG)."""
PACKAGE_DIR = Path(__file__).resolve().parents[1]
"""fabricsim's own folder: its parts files, models and protocol tables are inputs of every run."""


def _same(a: Path, b: Path) -> bool:
    """``a`` and ``b`` name one file (the same path after links, or hard links to one inode)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(path: str | Path, inputs: Iterable[str | Path] = (), *, flag: str | None = None,
                 figure: bool = False) -> Path:
    """Refuse, as an :class:`InputError` naming ``flag`` (else the path), an output that would
    replace an input (one of ``inputs``, or a file of fabricsim's own), that is a folder, whose
    folder does not exist or is a file, that cannot be written (read-only folder), or a figure
    whose suffix names no format matplotlib writes here. Nothing is written; returns the path."""
    text = str(path)
    path = Path(path)

    def refuse(message: str) -> InputError:
        return InputError(message, field=flag) if flag else InputError(message, file=text)

    at = f"{text}: " if flag else ""
    if text.endswith(("/", os.sep)) or path.is_dir():
        raise refuse(f"{at}is a folder; give a file name (e.g. {path / 'out'})")
    if figure:
        _check_figure_format(path, refuse, at)
    if any(_same(path, Path(item)) for item in inputs) or (path.is_file() and PACKAGE_DIR in path.resolve().parents):
        raise refuse(f"{at}refusing to overwrite an input file with results (this run reads it)")
    folder = path.parent
    if not folder.is_dir():
        above = next((p for p in (folder, *folder.parents) if p.exists()), None)
        if above is not None and not above.is_dir():
            raise refuse(f"{at}cannot write here: {above} is a file, not a folder")
        raise refuse(f"{at}output folder {folder} does not exist")
    if path.exists() and not path.is_file():
        return path  # a device or pipe (/dev/null): written in place, never replaced
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".probe")
    except OSError as err:
        raise refuse(f"{at}cannot write in folder {folder}: {(err.strerror or str(err)).lower()}") from None
    os.close(fd)
    os.unlink(probe)
    return path


def _check_figure_format(path: Path, refuse, at: str) -> None:  # noqa: ANN001
    fmt = path.suffix.lower().lstrip(".") or "png"
    if fmt not in FIGURE_FORMATS:
        raise refuse(f"{at}cannot write a {path.suffix} figure; name the file .png, .svg or .pdf")
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:  # pragma: no cover - matplotlib is a dependency
        raise refuse(f"{at}writing a figure needs matplotlib (pip install matplotlib)") from None
    if fmt not in FigureCanvasBase.get_supported_filetypes():  # pragma: no cover - always there today
        raise refuse(f"{at}this matplotlib cannot write .{fmt} figures")


def guard(path: Path, inputs: Iterable[str | Path]) -> None:
    """Refuse to write over an input file, or where the file cannot be written (``check_output``)."""
    check_output(path, inputs)


class OutputPlan:
    """The output files of one command, each checked with :func:`check_output` when it is added,
    that is before the run: against every file the run reads (``inputs``), against the outputs
    added before it (two outputs on one path, or two on standard output, are an error) and for
    being writable. ``add_*`` take the flag as the user typed it (``--json``) and ignore None."""

    def __init__(self, inputs: Iterable[str | Path]) -> None:
        self.inputs: tuple[Path, ...] = tuple(dict.fromkeys(Path(p) for p in inputs))
        """Every file the run reads: give these to the writers."""
        self._taken: list[tuple[str, Path | None]] = []

    def add_data(self, flag: str, path: str | Path | None, *, stdout: bool = True) -> OutputPlan:
        """A JSON, CSV or trace file; ``-`` is standard output where ``stdout``."""
        if path is None:
            return self
        if str(path) == STDOUT:
            if not stdout:
                raise InputError("cannot write to standard output ('-'); give a file name", field=flag)
            self._claim(flag, None, "standard output")
            return self
        return self._add(flag, path, figure=False)

    def add_figure(self, flag: str, path: str | Path | None) -> OutputPlan:
        """A figure (.png, .svg, .pdf by suffix)."""
        return self if path is None else self._add(flag, path, figure=True)

    def _add(self, flag: str, path: str | Path, *, figure: bool) -> OutputPlan:
        checked = check_output(path, self.inputs, flag=flag, figure=figure)
        self._claim(flag, checked, str(path))
        return self

    def _claim(self, flag: str, path: Path | None, shown: str) -> None:
        if path is not None and path.exists() and not path.is_file():
            return  # a device (/dev/null) takes any number of outputs
        for other, taken in self._taken:
            if (path is None and taken is None) or (path is not None and taken is not None and _same(path, taken)):
                raise InputError(f"{shown} is also the {other} output; give each output its own file", field=flag)
        self._taken.append((flag, path))


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
    """Write ``data`` to ``path`` atomically (temp file + rename) with mode 0644; refuse to clobber an input.
    A device or pipe (``/dev/null``) is written in place: renaming over it would replace it. A write
    that fails all the same (a full disk) is an InputError naming the file, and leaves no temp file."""
    path = Path(path)
    guard(path, inputs)
    try:
        if path.exists() and not path.is_file():
            with path.open("wb") as handle:
                handle.write(data)
            return path
        fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, FILE_MODE)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as err:
        raise InputError(f"cannot write: {(err.strerror or str(err)).lower()}", file=str(path)) from None
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


def _jsonable(value: Any) -> Any:
    """numpy scalars and arrays, paths and sets into plain JSON types."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (Path, set, frozenset)):
        return str(value) if isinstance(value, Path) else sorted(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
