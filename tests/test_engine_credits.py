"""Credit loop: a saturated link runs at min(rate, buffer / credit round-trip), the closed form."""

from __future__ import annotations

import pytest

from simulator.engine.packet import PacketConfig, credit_limited_rate_Bps, credit_loop_rtt_s, run_packet
from simulator.engine.packet.credits import CreditBatcher, SharedCredits, StaticCredits, credits_for
from simulator.topology import synthetic

from engine_helpers import flows

PACKET = 256


def _throughput(buffer_bytes: int, latency_s: float, return_delay_s: float, header: int = 0) -> tuple[float, float]:
    credit = synthetic.default_credit(buffer_bytes=buffer_bytes, credit_bytes=64, return_delay_s=return_delay_s)
    fabric = synthetic.single_link(rate_Bps=50e9, latency_s=latency_s, credit=credit)
    nbytes = PACKET * 4000
    res = run_packet(fabric, flows(("gpu0", "gpu1", nbytes)), PacketConfig(packet_bytes=PACKET, header_bytes=header))
    # steady-state rate: exclude the last packet's one-way latency from the measured span
    span = res.finish_s[0] - res.start_s[0] - latency_s
    return nbytes / span, credit_limited_rate_Bps(fabric.channels[0], PACKET, header)


@pytest.mark.parametrize("buffer_bytes", [1024, 4096, 16384])
@pytest.mark.parametrize("latency_s", [5e-9, 60e-9, 250e-9])
@pytest.mark.parametrize("return_delay_s", [0.0, 20e-9])
def test_single_link_matches_closed_form(buffer_bytes, latency_s, return_delay_s):
    sim, closed = _throughput(buffer_bytes, latency_s, return_delay_s)
    assert sim == pytest.approx(closed, rel=0.03)


def test_credit_limited_regime_is_exercised():
    """The sweep above must contain points far below line rate, or it tests nothing."""
    sim, closed = _throughput(1024, 250e-9, 20e-9)
    assert closed < 0.1 * 50e9 and sim == pytest.approx(closed, rel=0.03)


def test_headers_serialize_at_line_rate_and_count_against_credits():
    sim, closed = _throughput(1920, 100e-9, 0.0, header=64)  # buffer = 6 wire packets of 320 B
    rtt = credit_loop_rtt_s(synthetic.single_link(latency_s=100e-9).channels[0], PACKET, 64)
    assert closed == pytest.approx(1920 / rtt * PACKET / (PACKET + 64))
    assert sim == pytest.approx(closed, rel=0.03)


def test_rtt_closed_form_terms():
    credit = synthetic.default_credit(return_delay_s=7e-9)
    ch = synthetic.single_link(rate_Bps=50e9, latency_s=10e-9, credit=credit).channels[0]
    assert credit_loop_rtt_s(ch, 500) == pytest.approx(500 / 50e9 + 10e-9 + 7e-9 + 10e-9)


def test_credit_counters_flag_out_of_range():
    c = StaticCredits(total_credits=8, vcs=2)
    assert c.fits(1, 4) and not c.fits(1, 5)
    c.take(1, 4)
    c.give(1, 5)
    assert c.violations and "beyond the buffer" in c.violations[0]


def test_shared_pool_lends_beyond_the_static_share():
    static, shared = StaticCredits(8, vcs=2), SharedCredits(8, vcs=2, vc_min=1)
    assert not static.fits(0, 5) and shared.fits(0, 5)
    shared.take(0, 7)
    assert not shared.fits(0, 1) and shared.fits(1, 1)  # VC1 keeps its minimum
    shared.take(1, 1)
    shared.give(0, 7)
    shared.give(1, 1)
    assert shared.pool_used == 0 and not shared.violations


def test_batcher_returns_whole_batches():
    b = CreditBatcher(batch=4, vcs=1)
    assert [b.free(0, 3), b.free(0, 3), b.free(0, 2)] == [0, 4, 4]
    assert credits_for(257, 256) == 2


def test_batched_credits_never_exceed_the_buffer():
    credit = synthetic.default_credit(buffer_bytes=2048, credit_bytes=64, batch=8)
    fabric = synthetic.single_link(latency_s=50e-9, credit=credit)
    res = run_packet(fabric, flows(("gpu0", "gpu1", PACKET * 500)), PacketConfig(packet_bytes=PACKET))
    assert res.invariants["credits_in_range"] and res.bytes_delivered == PACKET * 500
    # batching withholds credits: never faster than the unbatched closed form
    assert PACKET * 500 / res.makespan_s <= credit_limited_rate_Bps(fabric.channels[0], PACKET) * 1.01


def test_fine_packet_size_is_the_largest_that_keeps_the_link_at_rate():
    """``fine_packet_bytes`` on a 32 KiB buffer: the chosen size runs at line rate (two packets
    cover the loop), twice that size is credit-bound in simulation, as ``is_fine`` says."""
    from simulator.engine.packet.sizing import fine_packet_bytes, is_fine

    credit = synthetic.default_credit(buffer_bytes=32768, credit_bytes=16, return_delay_s=20e-9, batch=16)
    fabric = synthetic.single_link(rate_Bps=40e9, latency_s=65e-9, credit=credit)
    size = fine_packet_bytes(fabric)
    assert size == 16384 and is_fine(fabric.channels[0], size) and not is_fine(fabric.channels[0], 2 * size)

    def rate(packet: int) -> float:
        res = run_packet(fabric, flows(("gpu0", "gpu1", packet * 60)), PacketConfig(packet_bytes=packet))
        return packet * 60 / (res.finish_s[0] - res.start_s[0] - 65e-9)

    assert rate(size) == pytest.approx(40e9, rel=0.02)
    assert rate(3 * size // 2) < 0.9 * 40e9  # one packet in flight: the loop caps the link
