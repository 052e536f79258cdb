"""``fabricsim lab``: JSON rows on stdout, rich tables with an explanation, PNG figures, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

from simulator.reports.plots.lab_arbitration import build_lab_arbitration
from simulator.reports.plots.lab_credits import build_lab_credits
from simulator.reports.plots.lab_hol import build_lab_hol


def _lab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simulator", "lab", *args], capture_output=True, text=True,
                          timeout=120)


def test_credits_json_is_a_list_of_rows(tmp_path):
    png = tmp_path / "credits.png"
    proc = _lab("credits", "--json", "--buffers", "2K,32K", "--cables", "1,30", "--generation", "nvlink4",
                "--generation", "nvlink5", "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)  # the whole stdout, nothing else
    assert len(rows) == 8 and {r["generation"] for r in rows} == {"nvlink4", "nvlink5"}
    assert {"buffer_bytes", "cable_m", "rtt_ns", "simulated_GBps", "closed_form_GBps"} <= set(rows[0])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_credits_table_explains_what_it_shows():
    proc = _lab("credits", "--buffers", "4K", "--cables", "1,100")
    assert proc.returncode == 0, proc.stderr
    assert "closed" in proc.stdout and "one direction" in proc.stdout
    assert "rate x RTT" in proc.stdout and "credit-limited" in proc.stdout


def test_bad_generation_is_one_line_and_exit_2():
    proc = _lab("credits", "--generation", "nvlink9")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "generation: unknown link generation 'nvlink9'" in proc.stderr


def test_bad_cable_length_is_exit_2():
    proc = _lab("credits", "--cables", "1,far")
    assert proc.returncode == 2 and "cables:" in proc.stderr


def test_arbitration_and_hol_print_tables(tmp_path):
    proc = _lab("arbitration", "--inputs", "3", "--plot", str(tmp_path / "arb.png"))
    assert proc.returncode == 0, proc.stderr
    assert "Jain" in proc.stdout and "starves" in proc.stdout and (tmp_path / "arb.png").is_file()
    proc = _lab("hol", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert [r["voq"] for r in result["voq"]] == [False, True]
    assert [r["policy"] for r in result["pools"]] == ["static", "shared"]


def test_lab_figures_draw_what_the_rows_hold():
    rows = [{"generation": "nvlink5", "cable_m": m, "cable": "optical", "buffer_bytes": b, "line_GBps": 40.0,
             "simulated_GBps": b / m / 1e3, "closed_form_GBps": b / m / 1e3}
            for m in (5.0, 50.0) for b in (1024, 2048)]
    ax = build_lab_credits(rows).axes[0]
    assert len(ax.lines) == 2 * 2 + 1  # simulated + closed form per cable, line-rate guide
    arb = [{"arbiter": "round_robin", "jain": 1.0, "inputs": [{"input": f"in{i}", "weight": 1, "share": 0.5}
                                                              for i in (1, 2)]}]
    assert len(build_lab_arbitration(arb).axes[0].patches) == 2
    voq = [{"voq": v, "speedup": 2.0, "free_GBps": f, "incast_GBps": 30.0, "hot_GBps": 2.0, "available_GBps": 38.0,
            "line_GBps": 40.0, "n_incast": 3} for v, f in ((False, 20.0), (True, 38.0))]
    assert len(build_lab_hol({"voq": voq, "pools": []}).axes) == 1


def test_switch_lab_json_table_and_plot(tmp_path):
    png = tmp_path / "switch.png"
    proc = _lab("switch", "--json", "--ports", "2", "--slots", "300", "--design", "FIFO",
                "--design", "VOQ + iSLIP k=1", "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["design"] for r in rows] == ["FIFO", "VOQ + iSLIP k=1"]
    assert rows[0]["published"] == 0.75 and rows[1]["throughput"] > rows[0]["throughput"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    proc = _lab("switch", "--ports", "2", "--slots", "200", "--design", "FIFO")
    assert proc.returncode == 0 and "Karol 1987" in proc.stdout and "paper" in proc.stdout


def test_switch_lab_bad_design_and_ports_are_exit_2():
    proc = _lab("switch", "--design", "crossbar of dreams")
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "design:" in proc.stderr
    proc = _lab("switch", "--ports", "1")
    assert proc.returncode == 2 and "ports:" in proc.stderr
    proc = _lab("switch", "--load", "1.5")
    assert proc.returncode == 2 and "load: load is a fraction of the line rate in (0, 1], got 1.5" in proc.stderr


def test_scheduler_figure_shows_the_engines_own_picks():
    from simulator.reports.plots.scheduler_steps import one_round

    requests = ((1, 1, 0, 1), (1, 0, 1, 0), (0, 1, 0, 0), (1, 0, 0, 1))
    grants, accepts, before, after = one_round("islip", requests, (0, 0, 1, 0), (1, 0, 2, 0))
    assert grants == {0: 0, 1: 0, 2: 1, 3: 0} and accepts == {0: 1, 1: 2}
    # only accepted grants move pointers: out1 and out2 move, out0 and out3 (rejected) stay
    assert after.grant_ptr == [0, 1, 2, 0] and after.accept_ptr == [2, 3, 2, 0]
