"""busbw vs size plot: log2 size axis with binary labels, one line per system, published markers."""

import numpy as np
import pytest
from matplotlib.colors import to_rgba

from simulator.errors import InputError
from simulator.reports.plots import build_busbw_vs_size, busbw_vs_size
from simulator.reports.plots.busbw import size_label

SIZES = [2**e for e in range(10, 34)]  # 1K .. 8G
SERIES = {
    "NVL72": [(s, 850 * s / (s + 2**24)) for s in SIZES],
    "HGX H100": [(s, 360 * s / (s + 2**22)) for s in reversed(SIZES)],  # unsorted input
}
PUBLISHED = [("NVL72", 512 * 2**20, 586.0), ("NVL72", 8 * 2**30, 847.0), ("DGX A100", 8 * 2**30, 230.0)]


def test_writes_a_png(tmp_path):
    path = busbw_vs_size(SERIES, PUBLISHED, path=tmp_path / "busbw.png")
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def test_same_data_gives_identical_bytes(tmp_path):
    a = busbw_vs_size(SERIES, PUBLISHED, path=tmp_path / "a.png").read_bytes()
    b = busbw_vs_size(SERIES, PUBLISHED, path=tmp_path / "b.png").read_bytes()
    assert a == b


def test_log2_axis_with_binary_labels():
    ax = build_busbw_vs_size(SERIES, PUBLISHED).axes[0]
    assert ax.get_xscale() == "log"
    assert ax.xaxis.get_transform().base == 2
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "2K" and labels[-1] == "8G"  # 24 powers of two: every 2nd one labelled
    assert all(np.log2(x).is_integer() for x in ax.get_xticks())
    assert len(ax.xaxis.get_minorticklocs()) + len(ax.get_xticks()) == len(SIZES)  # a tick per power of 2
    assert "GB/s" in ax.get_ylabel() and "1e9" in ax.get_ylabel()
    assert "1K = 1024 B" in ax.get_xlabel()


def test_short_sweeps_label_every_power_of_two():
    ax = build_busbw_vs_size({"a": [(2**e, 1.0) for e in range(20, 28)]}).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1M", "2M", "4M", "8M", "16M", "32M", "64M", "128M"]


def test_one_line_per_system_and_published_markers_in_its_colour():
    ax = build_busbw_vs_size(SERIES, PUBLISHED).axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"NVL72 (simulated)", "HGX H100 (simulated)"}
    markers = {c.get_label(): c for c in ax.collections}
    assert set(markers) == {"NVL72 (published)", "DGX A100 (published)"}
    assert len(markers["NVL72 (published)"].get_offsets()) == 2
    assert tuple(markers["NVL72 (published)"].get_facecolor()[0]) == to_rgba(lines["NVL72 (simulated)"].get_color())
    assert len(ax.get_legend().get_texts()) == 4


def test_lines_are_drawn_in_size_order_with_the_given_values():
    ax = build_busbw_vs_size(SERIES).axes[0]
    line = next(l for l in ax.get_lines() if l.get_label() == "HGX H100 (simulated)")
    assert list(line.get_xdata()) == SIZES
    assert line.get_ydata()[-1] == pytest.approx(360 * SIZES[-1] / (SIZES[-1] + 2**22))


@pytest.mark.parametrize("n, text", [(512, "512"), (1024, "1K"), (64 * 2**20, "64M"), (8 * 2**30, "8G"),
                                     (1536, "1536")])
def test_size_labels_follow_nccl_tests(n, text):
    assert size_label(n) == text


def test_bad_input_is_refused(tmp_path):
    with pytest.raises(ValueError):
        build_busbw_vs_size({"x": [(0, 1.0)]})
    with pytest.raises(ValueError):
        build_busbw_vs_size({})
    with pytest.raises(InputError, match="does not exist"):
        busbw_vs_size(SERIES, path=tmp_path / "missing" / "b.png")
