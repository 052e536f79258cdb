"""Scenario files: every shipped scenario runs; bad scenarios fail with FILE:LINE and exit 2."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import InputError
from simulator.workloads.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted(p for p in (ROOT / "scenarios").glob("*.yaml") if not p.name.startswith(("sweep_", "serving_")))
"""Scenario files (``sweep_*.yaml`` beside them are sweep files, tested in test_sweep_file.py;
``serving_*.yaml`` serving scenarios, tested in test_serving_run.py)."""
_register()
runner = CliRunner()


def test_scenarios_exist():
    assert len(SCENARIOS) >= 5


_RUNS: dict[str, dict] = {}
"""Scenario stem -> its ``run --json`` output, so the physics tests below reuse the smoke test's run."""


def _run(path: Path, tmp_path_factory) -> dict:
    if path.stem not in _RUNS:
        out = tmp_path_factory.mktemp(path.stem) / "out.json"
        result = runner.invoke(app, ["run", str(path), "--json", str(out)])
        assert result.exit_code == 0, result.output
        _RUNS[path.stem] = json.loads(out.read_text())
    return _RUNS[path.stem]


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_scenario_runs(path, tmp_path_factory):
    data = _run(path, tmp_path_factory)
    model, topologies = load_scenario(path)
    assert [s["topology"] for s in data["systems"]] == [str(t) for t in topologies]
    for system in data["systems"]:
        assert system["rows"], system["name"]
        for row in system["rows"]:
            assert row["time_us"] > 0
            assert row["energy_J"] > 0
        assert system["power_W"]["total"] == pytest.approx(
            sum(v for k, v in system["power_W"].items() if k != "total"))


def _rows(data: dict, system: str) -> dict[tuple[str, int], dict]:
    """(workload, bytes) -> row of the system whose name starts with ``system``."""
    (found,) = [s for s in data["systems"] if s["name"].startswith(system)]
    return {(r["workload"], r["bytes"]): r for r in found["rows"]}


def _payload_Bps(topology: str, src_kind: str, dst_kind: str, fabric_kind: str) -> float:
    """Payload rate (B/s, one direction) of the links of one kind in a shipped topology."""
    from simulator.topology.builder import build_fabric

    fabric = build_fabric(ROOT / "topologies" / f"{topology}.yaml")
    (rate,) = {c.rate_Bps for c in fabric.channels if (fabric.nodes[c.src].kind, fabric.nodes[c.dst].kind,
                                                        c.fabric) == (src_kind, dst_kind, fabric_kind)}
    return rate


def test_nvl72_vs_hopper_obeys_link_bounds(tmp_path_factory):
    from simulator.workloads.collectives import busbw_factor

    data = _run(ROOT / "scenarios" / "nvl72_vs_hopper.yaml", tmp_path_factory)
    n, G = 72, 1 << 30
    nvlink5 = 18 * _payload_Bps("gb200_nvl72", "gpu", "switch", "nvlink")  # one GPU, one direction
    nvlink4 = 18 * _payload_Bps("hopper_ib_rack", "gpu", "switch", "nvlink")
    nic = _payload_Bps("hopper_ib_rack", "nic", "switch", "network")  # one 400G NIC per GPU
    nvl72, hopper = _rows(data, "GB200 NVL72"), _rows(data, "Hopper IB rack")
    for rows, per_gpu in ((nvl72, nvlink5), (hopper, nvlink4)):
        for (name, size), r in rows.items():
            if "busbw_GBps" not in r:
                continue
            op = name.split()[0]
            assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * busbw_factor(op, n), rel=1e-9)
            assert r["time_us"] == pytest.approx(size / r["algbw_GBps"] / 1e3, rel=1e-6)
            # bandwidth-optimal bound: a GPU's links per direction; NVLS all_reduce moves S(1 + 1/n)
            # each way instead of 2(n-1)/n S, so its busbw may exceed the links by that ratio
            bound = per_gpu * (2 * (n - 1) / n / (1 + 1 / n) if r.get("algo") == "nvls" and op == "all_reduce" else 1)
            assert r["busbw_GBps"] * 1e9 <= bound * (1 + 1e-6), (name, size)
    # alltoall on the Hopper rack: 64 of a GPU's 71 peers sit in other nodes, behind its one NIC
    a2a = hopper[("alltoall 72 GPUs (MoE dispatch)", G)]
    nic_bound = nic * n / (n - 8) * (n - 1) / n / 1e9
    assert 0.95 * nic_bound <= a2a["busbw_GBps"] <= nic_bound * (1 + 1e-6)
    assert nvl72[("alltoall 72 GPUs (MoE dispatch)", G)]["busbw_GBps"] > 10 * a2a["busbw_GBps"]
    # the KV cache streams from one GPU to another at up to that GPU's NVLink rate
    kv = nvl72[("Llama-3-70B KV cache (8k tokens) to the farthest GPU", 2684354560)]
    assert 0.95 * nvlink5 <= kv["algbw_GBps"] * 1e9 <= nvlink5 * (1 + 1e-6)
    for key, r in nvl72.items():  # one NVLink domain beats NVLink islands joined by 400G
        if key[1] >= 64 << 20 or "decode" in key[0]:
            assert r["time_us"] < hopper[key]["time_us"], key


def test_two_jobs_share_the_spine_uplinks_as_the_scenario_predicts(tmp_path_factory):
    data = _run(ROOT / "scenarios" / "two_jobs_multirack.yaml", tmp_path_factory)
    (system,) = data["systems"]
    nic = _payload_Bps("gb200_nvl72_x8_ib_2to1", "nic", "switch", "network")
    S = 256 << 20
    # alone: 56 of a GPU's 63 peers are in other racks, reached through its Grace's two NICs
    alone_bound_us = S * 56 / 64 / (2 * nic) * 1e6
    for r in system["rows"]:
        assert 1.0 <= r["alone_us"] / alone_bound_us <= 1.05
        # together 9,600 GB/s of cross-rail bytes meet 6,400 GB/s of uplinks: 1.5 x slower
        assert r["slowdown"] == pytest.approx(1.5, abs=0.05)
        assert r["time_us"] == pytest.approx(r["alone_us"] * r["slowdown"], rel=1e-6)


def test_faults_never_speed_nvl72_up_and_cost_at_most_the_capacity_lost(tmp_path_factory):
    data = _run(ROOT / "scenarios" / "nvl72_degraded.yaml", tmp_path_factory)
    healthy = _rows(data, "GB200 NVL72")
    ring = ("all_reduce 72 GPUs (ring)", 1 << 30)
    for system in data["systems"][1:]:
        rows = _rows(data, system["name"])
        for key, r in rows.items():
            assert r["time_us"] >= healthy[key]["time_us"] * (1 - 1e-9), (system["name"], key)
    tray = _rows(data, "NVL72, tray 0 down")
    assert 16 / 18 <= tray[ring]["busbw_GBps"] / healthy[ring]["busbw_GBps"] < 1  # 2 of 18 planes gone
    link = _rows(data, "NVL72, one GPU link down")
    assert {r["algo"] for r in link.values()} == {"ring"}  # NVLS needs every GPU on every switch
    ber12 = _rows(data, "NVL72, spine BER 1e-12")
    assert all(ber12[k]["time_us"] == pytest.approx(healthy[k]["time_us"], rel=1e-3) for k in healthy)


def test_ring_attention_zigzag_balances_the_causal_mask(tmp_path_factory):
    # contiguous: the last GPU computes 2P - 1 half blocks per layer; zigzag: every GPU P of them
    data = _run(ROOT / "scenarios" / "ring_attention.yaml", tmp_path_factory)
    (system,) = data["systems"]
    plain, zig = system["rows"]
    assert zig["workload"] == "same, zigzag placement"
    P = 8
    # (2P - 1) / P in pairs; zigzag's tiles are a quarter of a block each (two per step), a little less
    # efficient on the kernel model's FlashAttention (more CTA prologues per pair): up to 10% under it
    ideal = (2 * P - 1) / P
    assert 0.9 * ideal < plain["compute_us"] / zig["compute_us"] <= ideal * 1.001
    assert plain["time_us"] / zig["time_us"] == pytest.approx(plain["compute_us"] / zig["compute_us"], rel=0.02)


def test_shipped_model_items_name_their_model(tmp_path_factory):
    # every decode, prefill and ring-attention item of a shipped scenario carries ffn_hidden and vocab
    for path in SCENARIOS:
        model, _ = load_scenario(path)
        for item in model.workloads:
            if item.kind in ("decode", "prefill", "ring_attention"):
                assert item.model.ffn_hidden > 0 and item.model.vocab > 0, (path.name, item.name)
                assert "config.json" in item.model.source, (path.name, item.name)


def _write(tmp_path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text.replace("TOPO", str(ROOT / "topologies" / "teaching.yaml")))
    return path


BASE = """name: t
topologies: [TOPO]
workloads:
  - kind: collective
    name: ar
    op: all_reduce
    sizes: 1M
"""


@pytest.mark.parametrize("text,line,field", [
    (BASE.replace("    sizes: 1M\n", "    sizes: 1M\n    colour: red\n"), 8, "workloads[0].colour"),
    (BASE.replace("kind: collective", "kind: telepathy"), 4, "workloads[0]"),
    (BASE.replace("op: all_reduce", "op: all_sum"), 6, "workloads[0].op"),
    (BASE.replace("[TOPO]", "[nowhere.yaml]"), 2, "topologies[0]"),
])
def test_bad_scenario_is_located(tmp_path, text, line, field):
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as err:
        load_scenario(path)
    assert err.value.line == line
    assert err.value.field == field
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_results_are_deterministic(tmp_path):
    path = _write(tmp_path, BASE.replace("sizes: 1M", "sizes: 64K,1M"))
    outs = []
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        assert runner.invoke(app, ["run", str(path), "--json", str(out)]).exit_code == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1]


def test_output_never_overwrites_the_scenario(tmp_path):
    path = _write(tmp_path, BASE)
    before = path.read_text()
    result = runner.invoke(app, ["run", str(path), "--json", str(path)])
    assert result.exit_code == 2
    assert path.read_text() == before
