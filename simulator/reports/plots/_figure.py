"""Headless figures and PNG/SVG/PDF files: no pyplot, no global state, byte-identical output for equal input.

Figures are plain :class:`matplotlib.figure.Figure` objects on an Agg canvas, never registered with
pyplot, so nothing is ever shown, no GUI backend is touched and nothing has to be closed: a figure
is freed when its last reference goes. PNGs carry no software/version metadata, so the same data
gives the same bytes.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Iterable

from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from simulator.reports.export import FIGURE_FORMATS, FILE_MODE, check_output, write_bytes

DPI = 120
"""Resolution of written PNGs (dots per inch): README-sized images, small files."""

PNG_MODE = FILE_MODE
"""Permissions of written figures (mkstemp's private 0600 would hide README images from other users)."""


def new_figure(width_in: float, height_in: float) -> Figure:
    """An empty figure (size in inches) with an Agg canvas and constrained layout."""
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def palette(n: int) -> list[tuple[float, float, float, float]]:
    """``n`` distinct colours in a fixed order (tab10, then tab20 beyond ten)."""
    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


FORMATS = FIGURE_FORMATS
"""Figure formats, chosen by the file's suffix: PNG (raster, DPI dots per inch) or vector SVG/PDF."""

_NO_DATES = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}
"""Metadata left out so the same data gives the same bytes."""


def save_png(fig: Figure, path: str | Path, inputs: Iterable[str | Path] = (), dpi: int = DPI) -> Path:
    """Render ``fig`` to ``path`` atomically in the format its suffix names (.png, .svg, .pdf; vector
    for the last two), readable by others (0644); refuse to overwrite an input file."""
    import matplotlib

    path = check_output(path, inputs, figure=True)
    fmt = path.suffix.lower().lstrip(".") or "png"
    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "fabricsim"}):
        fig.savefig(buffer, format=fmt, dpi=dpi, metadata=_NO_DATES[fmt])
    return write_bytes(path, buffer.getvalue(), inputs)
