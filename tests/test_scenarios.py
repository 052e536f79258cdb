"""Scenario files: every shipped scenario runs; bad scenarios fail with FILE:LINE and exit 2."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import InputError
from simulator.workloads.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted(p for p in (ROOT / "scenarios").glob("*.yaml") if not p.name.startswith("sweep_"))
"""Scenario files (``sweep_*.yaml`` beside them are sweep files, tested in test_sweep_file.py)."""
_register()
runner = CliRunner()


def test_scenarios_exist():
    assert len(SCENARIOS) >= 5


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_scenario_runs(path, tmp_path):
    out = tmp_path / "out.json"
    result = runner.invoke(app, ["run", str(path), "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    model, topologies = load_scenario(path)
    assert [s["topology"] for s in data["systems"]] == [str(t) for t in topologies]
    for system in data["systems"]:
        assert system["rows"], system["name"]
        for row in system["rows"]:
            assert row["time_us"] > 0
            assert row["energy_J"] > 0
        assert system["power_W"]["total"] == pytest.approx(
            sum(v for k, v in system["power_W"].items() if k != "total"))


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
