"""Credit time series: two panels sharing a µs axis, buffer size dashed, data drawn as given."""

import numpy as np
import pytest

from simulator.reports.plots import build_credit_timeseries, credit_timeseries
from simulator.reports.plots.credit_recorder import CreditRecorder, merge_step_series

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


def test_merge_holds_each_series_until_it_changes():
    t, a, b = merge_step_series([(0.0, 0), (3.0, 2), (1.0, 5)], [(0.0, 0), (2.0, 7)])
    np.testing.assert_array_equal(t, [0, 1, 2, 3])
    np.testing.assert_array_equal(a, [0, 5, 5, 2])
    np.testing.assert_array_equal(b, [0, 0, 7, 7])


def test_recorder_fed_by_the_packet_engine_stays_within_the_buffer(tmp_path):
    from simulator.engine.packet import run_packet
    from simulator.engine.transfer import Transfer, Workload
    from simulator.topology import synthetic

    # 8 KiB buffer against a 50 GB/s x 2 x 200 ns = 20 kB credit loop: the buffer limits, so it fills
    credit = synthetic.default_credit(buffer_bytes=8192, credit_bytes=256)
    fabric = synthetic.single_link(latency_s=200e-9, credit=credit)
    recorder = CreditRecorder(fabric.channels[0])
    run_packet(fabric, Workload("one", (Transfer(0, "gpu0", "gpu1", 200_000),)), observer=recorder)
    t, in_use, depth = recorder.series()
    assert recorder.buffer_credits == 32
    assert in_use.min() >= 0 and in_use.max() == 32
    assert np.all(np.diff(t) > 0) and depth.min() >= 0
    assert credit_timeseries(t, in_use, depth, 32, tmp_path / "c.png").stat().st_size > 5_000
