"""The packet engine's unit per run (``runner.packet_unit``): fine packets over the channels a run
crosses, trains of them only where no switch arbitrates, no CTA paces and every loop is covered,
and trains that give the fine packets' times."""

import logging
from pathlib import Path

import pytest

from simulator.engine.dispatch import simulate
from simulator.engine.packet import PacketConfig
from simulator.engine.packet.sizing import fine_packet_bytes, is_fine, route_use, transit_s
from simulator.reports.run_notice import unit_note
from simulator.runner.packet_unit import TRAIN_MAX_BYTES, TRAIN_MIN_UNITS, choose, run_unit
from simulator.runner.sweeps import SweepSpec, build_workload
from simulator.topology.builder import build_fabric
from simulator.topology.fabric import SwitchScheduling

ROOT = Path(__file__).resolve().parent.parent
GiB, MiB = 1 << 30, 1 << 20


@pytest.fixture(scope="module")
def nvl72():
    return build_fabric(ROOT / "topologies" / "gb200_nvl72.yaml")


@pytest.fixture(scope="module")
def hgx():
    return build_fabric(ROOT / "topologies" / "hgx_h100.yaml")


def _work(fabric, op, gpus, size, **kw):
    return build_workload(fabric, SweepSpec(op=op, gpus=gpus, sizes=(size,), **kw), size)


def test_nvls_routes_end_at_the_switch_and_ring_routes_go_through_it(nvl72):
    nvls = route_use(nvl72, [_work(nvl72, "all_reduce", 72, GiB)])
    assert nvls and not any(nvls.values())  # every route is one hop: GPU -> switch or switch -> GPU
    ring = route_use(nvl72, [_work(nvl72, "all_gather", 72, GiB, algo="ring")])
    into_switch = [cid for cid in ring if nvl72.nodes[nvl72.channels[cid].dst].kind == "switch"]
    assert into_switch and all(ring[cid] for cid in into_switch)
    assert not any(ring[cid] for cid in ring if cid not in into_switch)


def test_a_switch_that_only_receives_frees_on_arrival_so_nvls_runs_take_16_KiB(nvl72):
    """The fabric-wide fine packet is 8 KiB (a route through the switch holds the space for its
    forwarding and next serialization); 16 KiB covers the loop into a switch where routes end."""
    assert fine_packet_bytes(nvl72) == 8192
    use = route_use(nvl72, [_work(nvl72, "all_reduce", 72, GiB)])
    assert fine_packet_bytes(nvl72, use=use) == 16384
    up = next(nvl72.channels[cid] for cid in use if nvl72.nodes[nvl72.channels[cid].dst].kind == "switch")
    back = nvl72.reverse_latency_s(up)
    assert is_fine(up, 16384, reverse_latency_s=back)
    assert not is_fine(up, 16384, reverse_latency_s=back, transit_s=transit_s(nvl72, up, 16384))


def test_channels_a_run_does_not_cross_do_not_set_its_unit():
    """On 8 NVL72 racks on InfiniBand the Grace C2C links cover their loop only at 256 B; a
    collective inside one rack never crosses them and keeps NVLink's unit."""
    racks = build_fabric(ROOT / "topologies" / "gb200_nvl72_x8_ib.yaml")
    assert fine_packet_bytes(racks) == 256
    unit = run_unit(racks, [_work(racks, "all_gather", 8, 64 * MiB)])
    assert unit.fine_bytes == 8192


def test_nvls_runs_in_trains_that_leave_every_transfer_its_units(nvl72):
    work = _work(nvl72, "all_reduce", 72, GiB)
    unit = run_unit(nvl72, [work])
    assert unit.trains and unit.fine_bytes == 16384
    smallest = min(t.bytes for t in work.transfers if t.bytes and t.src != t.dst)
    assert smallest // unit.bytes >= TRAIN_MIN_UNITS
    assert unit.bytes * 2 > TRAIN_MAX_BYTES or smallest // (unit.bytes * 2) < TRAIN_MIN_UNITS  # the largest
    assert unit.bytes == 131072


@pytest.mark.parametrize("case", ["alltoall", "fifo inputs", "matching crossbar", "store and forward"])
def test_no_trains_where_a_switch_arbitrates(hgx, case):
    """Trains change who goes first at a contended output, a FIFO input's head-of-line blocking
    and a matching crossbar's cell times: the fine packet is kept. (NVLS
    routes end at the switch, which forwards nothing: there its scheduling does not matter; a
    host-to-device copy crosses the PCIe switch.)"""
    host = build_fabric(ROOT / "topologies" / "hgx_h200.yaml")
    copy = _work(host, "h2d", 2, GiB)
    assert run_unit(host, [copy]).trains and any(route_use(host, [copy]).values())
    fabric, work, switch, config = hgx, _work(hgx, "all_reduce", 8, GiB), None, PacketConfig()
    if case in ("fifo inputs", "matching crossbar"):
        fabric, work = host, copy
    if case == "alltoall":
        work = _work(hgx, "alltoall", 8, GiB)
    elif case == "fifo inputs":
        switch = SwitchScheduling(queueing="fifo")
    elif case == "matching crossbar":
        switch = SwitchScheduling(arbiter="islip")
    else:
        config = PacketConfig(switching="store_and_forward")
    if switch is not None:
        config = config.with_switch(switch)
    assert run_unit(hgx, [_work(hgx, "all_reduce", 8, GiB)]).trains  # the same run otherwise has them
    unit = run_unit(fabric, [work], config)
    assert not unit.trains and unit.bytes == unit.fine_bytes


@pytest.mark.parametrize("topology, op, gpus, size, tolerance", [
    ("hgx_h100", "all_reduce", 8, 64 * MiB, 0.004),  # NVLS, 8 KiB packets, 32 KiB trains: +0.13%
    ("hgx_h100", "all_gather", 8, 256 * MiB, 0.008),  # ring, CTA-paced, 4 KiB packets, 16 KiB: +0.45%
    ("hgx_h200", "all_reduce", 2, 256 * MiB, 0.004),  # ring on direct links, 16 KiB trains: +0.07%
    ("hgx_h200", "h2d", 2, 64 * MiB, 1e-9),  # one flow on its route: the same time to float rounding
])
def test_trains_give_the_fine_packets_time(topology, op, gpus, size, tolerance):
    """Trains against their fine packets one by one."""
    fabric = build_fabric(ROOT / "topologies" / f"{topology}.yaml")
    work = _work(fabric, op, gpus, size)
    config, unit = choose(fabric, [work])
    assert unit.trains and config.packet_bytes == unit.bytes and config.fine_packet_bytes == unit.fine_bytes
    fine = simulate(fabric, work, engine="packet", packet=PacketConfig(packet_bytes=unit.fine_bytes))
    trains = simulate(fabric, work, engine="packet", packet=config)
    assert trains.makespan_s == pytest.approx(fine.makespan_s, rel=tolerance)
    assert trains.bytes_delivered == fine.bytes_delivered
    assert all(trains.invariants.values())


def test_trains_do_not_warn_about_coarse_mode_but_a_coarse_packet_asked_for_does(hgx, caplog):
    work = _work(hgx, "all_reduce", 8, 64 * MiB)
    config, unit = choose(hgx, [work])
    assert unit.trains
    with caplog.at_level(logging.WARNING):
        simulate(hgx, work, engine="packet", packet=config)
    assert "coarse mode" not in caplog.text
    with caplog.at_level(logging.WARNING):
        simulate(hgx, work, engine="packet", packet=PacketConfig(packet_bytes=config.packet_bytes))
    assert "coarse mode" in caplog.text


def test_the_given_packet_size_wins(hgx):
    config, unit = choose(hgx, [_work(hgx, "all_reduce", 8, GiB)], packet_bytes=2048)
    assert unit is None and config.packet_bytes == 2048 and config.fine_packet_bytes is None


def test_titles_say_how_runs_were_cut():
    assert unit_note([{"packet_bytes": None}]) == ""
    assert unit_note([{"packet_bytes": 8192, "fine_packet_bytes": 8192}]) == "8 KiB packets"
    assert unit_note([{"packet_bytes": 131072, "fine_packet_bytes": 16384}]) == "16 KiB packets in trains of 128 KiB"
    assert unit_note([{"packet_bytes": 16384, "fine_packet_bytes": 16384},
                      {"packet_bytes": 32768, "fine_packet_bytes": 16384},
                      {"packet_bytes": 131072, "fine_packet_bytes": 16384}]) == \
        "16 KiB packets in trains of 32 KiB-128 KiB"
    assert unit_note([{"packet_bytes": 4096, "fine_packet_bytes": None},
                      {"packet_bytes": 65536, "fine_packet_bytes": 8192}]) == "4 KiB-8 KiB packets in trains of 64 KiB"


def test_a_cta_hands_over_the_fine_runs_bursts_in_whole_trains():
    """``PACE_PACKETS`` fine packets per burst, rounded up to whole trains."""
    from simulator.engine.packet.network import PACE_PACKETS, pace_bytes

    assert pace_bytes(PacketConfig(packet_bytes=4096)) == PACE_PACKETS * 4096
    assert pace_bytes(PacketConfig(packet_bytes=32768, fine_packet_bytes=4096)) == PACE_PACKETS * 4096
    assert pace_bytes(PacketConfig(packet_bytes=65536, fine_packet_bytes=4096)) == 65536


def test_ring_collectives_on_one_switch_level_run_in_trains(nvl72):
    """A ring's routes through an NVSwitch never meet at an output (each GPU's ring successor is fed
    by one predecessor): trains, although every transfer is paced by its CTA. (The ring and its
    LL128 protocol are pinned: auto's choice between near-equal candidates is not what this checks.)"""
    work = _work(nvl72, "all_gather", 72, GiB, algo="ring", protocol="LL128")
    assert all(t.rate_Bps for t in work.transfers if t.bytes)
    unit = run_unit(nvl72, [work])
    assert unit.trains and unit.fine_bytes == 8192 and unit.bytes == 65536


def test_an_observed_run_moves_fine_packets(hgx):
    """A credit timeline or a packet trace records packets: with an observer the sweep keeps the
    fine packet where it would otherwise run trains, and its row says so."""
    from simulator.engine.packet import EngineObserver
    from simulator.runner.sweeps import sweep

    spec = SweepSpec(op="all_reduce", gpus=8, sizes=(64 * MiB,), engine="packet")
    (plain,) = sweep(hgx, spec)
    (seen,) = sweep(hgx, spec, observer=EngineObserver())
    assert plain["packet_bytes"] > plain["fine_packet_bytes"] == 8192
    assert seen["packet_bytes"] == seen["fine_packet_bytes"] == 8192
    assert seen["time_us"] == pytest.approx(plain["time_us"], rel=0.004)


def test_no_train_fits_a_buffer_without_covering_its_loop():
    """A unit that fits a receive buffer but not twice over its loop waits for its own credits each
    time: on a chain with 256 KiB buffers a 256 KiB unit ends 2.7% late, while 128 KiB (fine) and
    512 KiB (streaming) end with the 4 KiB packets. Such sizes are never chosen as trains."""
    from simulator.engine.packet import run_packet
    from simulator.engine.transfer import Transfer, Workload
    from simulator.topology import synthetic

    credit = synthetic.default_credit(buffer_bytes=256 * 1024, credit_bytes=256, return_delay_s=20e-9)
    chain = synthetic.chain(8, credit=credit, switch_latency_s=100e-9)
    work = Workload("chain", (Transfer(0, "gpu0", "gpu1", 50_000 * 4096),))
    times = {size: run_packet(chain, work, PacketConfig(packet_bytes=size, fine_packet_bytes=4096)).makespan_s
             for size in (4096, 262144, 524288)}
    assert times[262144] > 1.02 * times[4096] and times[524288] == pytest.approx(times[4096], rel=1e-9)
    assert run_unit(chain, [work]).bytes != 262144
