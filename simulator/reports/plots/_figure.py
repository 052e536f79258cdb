"""Headless figures and PNG files: no pyplot, no global state, byte-identical output for equal input.

Figures are plain :class:`matplotlib.figure.Figure` objects on an Agg canvas, never registered with
pyplot, so nothing is ever shown, no GUI backend is touched and nothing has to be closed: a figure
is freed when its last reference goes. PNGs carry no software/version metadata, so the same data
gives the same bytes.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Iterable

from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from simulator.errors import InputError

DPI = 120
"""Resolution of written PNGs (dots per inch): README-sized images, small files."""

PNG_MODE = 0o644
"""Permissions of written PNGs (mkstemp's private 0600 would hide README images from other users)."""


def new_figure(width_in: float, height_in: float) -> Figure:
    """An empty figure (size in inches) with an Agg canvas and constrained layout."""
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def palette(n: int) -> list[tuple[float, float, float, float]]:
    """``n`` distinct colours in a fixed order (tab10, then tab20 beyond ten)."""
    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def save_png(fig: Figure, path: str | Path, inputs: Iterable[str | Path] = (), dpi: int = DPI) -> Path:
    """Render ``fig`` to ``path`` atomically (temp file + rename); refuse to overwrite an input file."""
    path = Path(path)
    if any(Path(item).resolve() == path.resolve() for item in inputs):
        raise InputError("refusing to overwrite an input file with a plot", file=str(path))
    if not path.parent.exists():
        raise InputError(f"output folder {path.parent} does not exist", file=str(path))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(buffer.getvalue())
        os.chmod(tmp, PNG_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
