"""Credit time series: two panels sharing a µs axis, buffer size dashed, data drawn as given."""

import numpy as np
import pytest

from simulator.reports.plots import build_credit_timeseries, credit_timeseries

BUFFER = 32


def _credit_loop(n=400, rate_credits_per_s=2e9, rtt_s=40e-9):
    """Credits in use of a saturated sender: grows at the send rate until the first credit returns,
    then holds at min(buffer, rate x RTT) (the credit-loop closed form)."""
    t = np.linspace(0.0, 200e-9, n)
    steady = min(BUFFER, rate_credits_per_s * rtt_s)
    in_use = np.minimum(np.floor(rate_credits_per_s * t), steady)
    queue = np.maximum(0, np.floor(rate_credits_per_s * t) - in_use)
    return t, in_use, queue


def test_writes_a_png(tmp_path):
    t, c, q = _credit_loop()
    path = credit_timeseries(t, c, q, BUFFER, tmp_path / "credits.png", label="gpu0 -> sw0")
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 5_000


def test_two_panels_share_a_microsecond_axis_and_show_the_buffer():
    t, c, q = _credit_loop()
    fig = build_credit_timeseries(t, c, q, BUFFER, label="gpu0 -> sw0")
    top, bottom = fig.axes
    assert top.get_shared_x_axes().joined(top, bottom)
    assert "µs" in bottom.get_xlabel()
    credit_line, buffer_line = top.get_lines()
    np.testing.assert_allclose(credit_line.get_xdata(), t * 1e6)
    np.testing.assert_array_equal(credit_line.get_ydata(), c)
    assert buffer_line.get_linestyle() == "--" and set(buffer_line.get_ydata()) == {BUFFER}
    assert top.get_ylim()[0] == 0 and top.get_ylim()[1] > BUFFER
    np.testing.assert_array_equal(bottom.get_lines()[0].get_ydata(), q)
    assert "gpu0 -> sw0" in fig.get_suptitle()


def test_closed_form_loop_stays_within_the_buffer():
    t, c, _ = _credit_loop(rate_credits_per_s=5e9)  # rate x RTT = 200 > buffer: buffer-limited
    assert c.max() == BUFFER and c.min() >= 0


def test_mismatched_or_unordered_samples_are_refused():
    with pytest.raises(ValueError, match="must match"):
        build_credit_timeseries([0, 1], [0], [0, 0], BUFFER)
    with pytest.raises(ValueError, match="non-decreasing"):
        build_credit_timeseries([1, 0], [0, 0], [0, 0], BUFFER)
    with pytest.raises(ValueError, match="non-empty"):
        build_credit_timeseries([], [], [], BUFFER)
