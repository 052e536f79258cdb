"""Figures the docs quote from a command are what the command gives (issue 27, item 9)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("buffer,quoted", [("32 KiB", 280), ("4 KiB", 167), ("2 KiB", 100)])
def test_the_credit_buffer_how_to_quotes_what_the_run_gives(tmp_path, buffer, quoted):
    text = (ROOT / "docs" / "index.md").read_text()
    assert f"~{quoted}" in text  # docs/index.md, "Sweep buffer depth"
    topo = tmp_path / "nvl72.yaml"
    topo.write_text(f"extends: {ROOT / 'topologies' / 'gb200_nvl72.yaml'}\nname: t\nlinks:\n  - name: spine\n"
                    f"    credit_buffer: {buffer}\n")
    out = subprocess.run([sys.executable, "-m", "simulator", "bench", str(topo), "--gpus", "8", "--algo", "ring",
                          "--sizes", "16M", "--engine", "packet", "--packet-bytes", "1024", "--json", "-"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    busbw = float(re.search(r'"busbw_GBps":\s*([0-9.]+)', out.stdout).group(1))
    assert busbw == pytest.approx(quoted, rel=0.02)


@pytest.mark.parametrize("topology,row", [
    ("gb200_nvl72", "| GB200 NVL72, copper spine | 5,400 W (18 switch chips) | 12.9 J | 2.46 ms | 10.6 kW |"),
    ("gb200_nvl72_optical", "| same spine made optical | 24,840 W (+19,440 W of optics) | 12.9 J | 2.46 ms | 30.1 kW |"),
    ("hopper_ib_rack", "| Hopper IB rack (9 x HGX H100), NVLSTree | 17,264 W | 17.8 J | 5.57 ms | 20.5 kW |")])
def test_the_energy_table_of_model_md_is_what_bench_gives(topology, row):
    import json

    assert row in (ROOT / "docs" / "model.md").read_text()
    out = subprocess.run([sys.executable, "-m", "simulator", "bench", topology, "--gpus", "72", "--sizes", "1G",
                          "--json", "-"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)["rows"][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert f"{sum(r['dynamic_J'].values()):.1f} J" == cells[2]
    assert f"{r['time_us'] / 1e3:.2f} ms" == cells[3]
    assert f"{r['avg_power_W'] / 1e3:.1f} kW" == cells[4]


@pytest.mark.parametrize("scenario,workload,quoted", [
    ("tp_decode", "Llama-3-70B decode, TP8, batch 1, 8k context", "15,436 us"),
    ("tp_decode", "same without Flash-Decoding (plain FlashAttention)", "21,388 us"),
    ("tp_decode", "Llama-3-70B decode, TP8, batch 64", "18,831 us"),
    ("prefill", "Llama-3-70B prefill, TP8, 4k prompt", "199,353 us")])
def test_the_readme_quotes_the_scenarios_answers(tmp_path, scenario, workload, quoted):
    import json

    assert quoted in (ROOT / "README.md").read_text()  # "What the shipped scenarios now answer"
    out = tmp_path / "r.json"
    run = subprocess.run([sys.executable, "-m", "simulator", "run", str(ROOT / "scenarios" / f"{scenario}.yaml"),
                          "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    (row,) = [r for s in json.loads(out.read_text())["systems"] for r in s["rows"] if r["workload"] == workload]
    assert f"{row['time_us']:,.0f} us" == quoted


def _bench_row(*args: str) -> dict:
    import json

    out = subprocess.run([sys.executable, "-m", "simulator", "bench", *args, "--json", "-"], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["rows"][-1]


def test_the_tutorials_fault_step_quotes_what_bench_gives():
    """docs/index.md, tutorial step 5: a tray down on NVL72 (healthy -> degraded busbw at 1 GiB) and
    an NVSwitch lost 1 ms into an HGX H100 ring (degraded and healthy time)."""
    text = (ROOT / "docs" / "index.md").read_text()
    healthy, degraded = (float(x) for x in re.search(r"\((\d+) -> (\d+) GB/s\)", text).groups())
    ring = ["--sizes", "1G", "--algo", "ring", "--engine", "flow"]
    assert _bench_row("gb200_nvl72", *ring)["busbw_GBps"] == pytest.approx(healthy, rel=0.01)
    assert _bench_row("gb200_nvl72", *ring, "--fault", "switch_down:enclosure=switch_tray0")["busbw_GBps"] == \
        pytest.approx(degraded, rel=0.01)
    late, early = (float(x) for x in re.search(r"takes (\d+) us\s+instead of (\d+)", text).groups())
    assert _bench_row("hgx_h100", *ring)["time_us"] == pytest.approx(early, rel=0.01)
    assert _bench_row("hgx_h100", *ring, "--fault", "switch_down:device=hgx.nvsw0,at=1ms")["time_us"] == \
        pytest.approx(late, rel=0.01)


@pytest.mark.parametrize("topology, deployment, rate, quoted", [
    ("gb200_nvl72", "18 x TP4", 200, "(706 tok/s per GPU, TPOT p50 30.62 ms, 724.1 tok/s per kW)"),
    ("hopper_ib_rack", "5 prefill + 4 decode TP8", 50, "(189.3 tok/s per GPU, TPOT p50 16.57 ms, 270.4 tok/s per kW)"),
])
def test_the_readme_quotes_what_serve_gives(topology, deployment, rate, quoted):
    """The README's serving headline (the main job's) is what fabricsim serve gives for those rows;
    a rate's requests are the same whether it runs alone or among the scenario's rates."""
    import json

    readme = " ".join((ROOT / "README.md").read_text().replace("> ", "").split())
    assert quoted in readme
    out = subprocess.run([sys.executable, "-m", "simulator", "serve", "serving_nvl72_vs_hopper", "--topology", topology,
                          "--deployment", deployment, "--rate", str(rate), "--json", "-"], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(out.stdout)["rows"]
    assert row["slo_attainment"] >= 0.9
    from simulator.reports.numbers import number

    assert (f"({number(row['output_tok_per_s_per_gpu'])} tok/s per GPU, TPOT p50 {number(row['tpot_p50_ms'])} ms, "
            f"{number(row['output_tok_per_s_per_kW'])} tok/s per kW)") == quoted  # as the headline prints them
