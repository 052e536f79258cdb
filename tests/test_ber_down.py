"""High bit error rates (issue 28, item 3): a BER at which a packet fails every transmission the
link layer allows more often than not takes the link down, with a warning at the fault's FILE:LINE
or --fault flag that gives that BER and why; never a ZeroDivisionError, never a silent 0 GB/s."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import InputError, Origin
from simulator.hardware.faults import FaultSpec
from simulator.hardware.retry import DOWN_PROBABILITY, link_down, packet_error, retry_parts, unusable_ber
from simulator.topology import synthetic
from simulator.topology.faults import apply_faults
from simulator.workloads.labs.retry import retry_sweep

ROOT = Path(__file__).resolve().parents[1]
_register()
runner = CliRunner()

NVLINK_DOWN = ("at or above ber=0.00084 a 272 B packet fails all 4 transmissions more often than not")
WHY = "so the link layer retrains instead of delivering (hardware/retry.py); they are left out as with link_down"


def _origins(n=8):
    """Origins that place fault i's errors at ``faults[i].key`` (no file)."""
    return [Origin(path=("faults", i)) for i in range(n)]


# --- the threshold ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, packet_B, limit, ber", [("nvlink", 272, 4, 8.444e-4), ("pcie", 284, 4, 8.087e-4),
                                                       ("network", 4160, 8, 7.479e-5), ("c2c", 272, 4, 8.444e-4)])
def test_unusable_ber_is_where_a_packet_fails_all_its_transmissions_half_the_time(kind, packet_B, limit, ber):
    part = retry_parts()[kind]
    assert (part.packet_B, part.replay_limit) == (packet_B, limit)
    threshold = unusable_ber(part.packet_B, part.replay_limit)
    assert threshold == pytest.approx(ber, rel=1e-3)
    assert packet_error(threshold, part.packet_B) ** part.replay_limit == pytest.approx(DOWN_PROBABILITY)
    assert link_down(threshold, part) and not link_down(math.nextafter(threshold, 0), part)


def test_a_link_below_the_threshold_keeps_a_positive_rate_and_one_above_it_is_gone():
    fabric = synthetic.star(3)
    down = apply_faults(fabric, [FaultSpec(kind="ber", **{"from": "gpu0"}, to="sw0", ber=0.5)], _origins())
    assert not [c for c in down.channels if "gpu0" in (c.src, c.dst)]
    assert len(down.channels) == len(fabric.channels) - 2
    assert down.faults == ["ber from=gpu0 to=sw0 ber=0.5 (1 link down)"]
    assert down.warnings[0] == ("faults[0].ber: this bit error rate takes links down (1 nvlink link: "
                                f"{NVLINK_DOWN}), {WHY}")
    slow = apply_faults(fabric, [FaultSpec(kind="ber", **{"from": "gpu0"}, to="sw0", ber=8e-4)], _origins())
    rates = [c.rate_Bps for c in slow.channels if "gpu0" in (c.src, c.dst)]
    assert len(rates) == 2 and all(r > 0 for r in rates)
    assert slow.faults == ["ber from=gpu0 to=sw0 ber=0.0008"]
    assert slow.warnings[0].startswith("faults[0].ber: retries at this bit error rate leave the links it hits ")
    mild = apply_faults(fabric, [FaultSpec(kind="ber", **{"from": "gpu0"}, to="sw0", ber=1e-8)], _origins())
    assert mild.warnings == []


# --- through the commands ----------------------------------------------------------------------------

@pytest.mark.parametrize("ber", ["0.5", "1e-2"])
def test_bench_with_a_ber_that_takes_every_link_down_says_why_and_divides_by_nothing(ber):
    result = runner.invoke(app, ["bench", str(ROOT / "topologies" / "hgx_h100.yaml"), "--sizes", "1M",
                                 "--fault", f"ber:from=*,to=*,ber={ber}"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "ZeroDivision" not in result.output
    assert result.stdout == ""  # no table of 0.00 GB/s
    shown = f"{float(ber):g}"
    lines = result.stderr.strip().splitlines()
    assert lines[0] == (f"fabricsim: warning: --fault: ber from=* to=* ber={shown}: this bit error rate takes links "
                        f"down (144 nvlink links: {NVLINK_DOWN}; 12 pcie links: at or above ber=0.00081 a 284 B "
                        f"packet fails all 4 transmissions more often than not), {WHY}")
    assert lines[-1] == (f"fabricsim: --fault: all_reduce cannot run on HGX H100 with its faults (ber from=* to=* "
                         f"ber={shown} (156 links down)): no route from hgx.gpu0 to hgx.gpu1; the faults leave these "
                         "GPUs unconnected (fewer faults, or GPUs they leave connected, would run)")


def test_a_ber_that_takes_one_link_down_runs_around_it_with_the_warning(tmp_path):
    topo = tmp_path / "t.yaml"
    topo.write_text((ROOT / "topologies" / "hgx_h100.yaml").read_text()
                    + "faults:\n  - {kind: ber, from: hgx.gpu0, to: hgx.nvsw0, links: 1, ber: 1e-2}\n")
    line = len((ROOT / "topologies" / "hgx_h100.yaml").read_text().splitlines()) + 2
    result = runner.invoke(app, ["bench", str(topo), "--sizes", "64M", "--engine", "flow", "--json", "-"])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == (f"fabricsim: warning: {topo}:{line}: faults[0].ber: this bit error rate "
                                             f"takes links down (1 nvlink link: {NVLINK_DOWN}), {WHY}")
    busbw = json.loads(result.stdout)["rows"][0]["busbw_GBps"]
    assert busbw > 100  # 17 of 18 links left: far from 0
    assert "(1 link down)" in result.stderr  # the degraded table's title (on stderr with --json -)


def test_a_ber_that_leaves_a_trickle_is_a_warning_and_not_a_silent_zero():
    result = runner.invoke(app, ["bench", "hgx_h100", "--sizes", "1M", "--engine", "flow", "--json", "-",
                                 "--fault", "ber:from=*,to=*,ber=5e-4"])
    assert result.exit_code == 0, result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith("fabricsim: warning: --fault: ber from=* to=* ber=0.0005: retries at this bit error "
                            "rate leave the links it hits ") and first.endswith("% of their payload rate or less")
    assert json.loads(result.stdout)["rows"][0]["busbw_GBps"] > 1.0


def test_run_puts_the_warning_in_its_output(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: s\ntopologies: [{ROOT / 'topologies' / 'hgx_h100.yaml'}]\nengine: flow\n"
                        "faults:\n  - {kind: ber, from: hgx.gpu0, to: hgx.nvsw0, links: 1, ber: 0.1}\n"
                        "workloads:\n  - {kind: collective, name: ar, op: all_reduce, sizes: 1M}\n")
    result = runner.invoke(app, ["run", str(scenario), "--json", "-"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == [
        f"{scenario}:5: faults[0].ber: this bit error rate takes links down (1 nvlink link: {NVLINK_DOWN}), {WHY}"]


def test_lab_retry_refuses_a_ber_that_takes_its_link_down_before_running():
    start = time.perf_counter()
    result = runner.invoke(app, ["lab", "retry", "--bers", "1e-6,1e-2", "--buffers", "16K"])
    assert time.perf_counter() - start < 5  # was: a go-back-N sender replaying for ever
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip() == ("fabricsim: --bers: 0.01: at or above ber=0.00084 a nvlink5 link is down (a 272 B "
                                     "packet fails all 4 transmissions more often than not: hardware/retry.py); "
                                     "choose lower bit error rates")
    with pytest.raises(InputError, match="link is down"):
        retry_sweep("pcie5", bers=(1e-3,), buffers=(65536,), packets=100)


def test_a_tray_taken_down_stops_drawing_its_switch_power():
    # issue 27, item 5: with a tray down 144 links disappeared but switch power stayed 5,400 W
    from simulator.hardware.faults import FaultSpec
    from simulator.topology.builder import build_fabric
    from simulator.topology.faults import apply_faults

    fabric = build_fabric(ROOT / "topologies" / "gb200_nvl72.yaml")
    down = apply_faults(fabric, [FaultSpec.model_validate({"kind": "switch_down", "enclosure": "switch_tray0"})],
                        _origins())
    chip = next(n for n in fabric.nodes.values() if n.kind == "switch").static_power_W
    assert fabric.static_power_W["switch_chip"] == 18 * chip
    assert down.static_power_W["switch_chip"] == 16 * chip  # the tray's two NVSwitch chips are off
    assert set(down.static_power_W) == set(fabric.static_power_W)
