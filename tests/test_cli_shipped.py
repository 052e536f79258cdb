"""Runs from anywhere: --version, fabricsim list, shipped topologies and scenarios by name."""

import os
from pathlib import Path

from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.shipped import find, listing

ROOT = Path(__file__).resolve().parent.parent
_register()
runner = CliRunner()


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("fabricsim ")


def test_list_shows_every_shipped_topology_and_scenario():
    result = runner.invoke(app, ["list"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    for path in [*(ROOT / "topologies").glob("*.yaml"), *(ROOT / "scenarios").glob("*.yaml")]:
        assert path.stem in result.output
    assert "GB200 NVL72" in result.output and "published" in result.output
    assert {p.name for p in listing("topologies")} == {p.name for p in (ROOT / "topologies").glob("*.yaml")}


def test_shipped_names_work_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert find("gb200_nvl72", "topologies") == ROOT / "topologies" / "gb200_nvl72.yaml"
    assert find("topologies/hgx_h100.yaml", "topologies") == ROOT / "topologies" / "hgx_h100.yaml"
    result = runner.invoke(app, ["describe", "gb200_nvl72", "--json"])
    assert result.exit_code == 0, result.output
    assert '"gpus": 72' in result.output
    result = runner.invoke(app, ["bench", "hgx_h100", "--sizes", "1M", "--engine", "flow", "--text"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["describe", "no_such_system"])
    assert result.exit_code == 2 and "see fabricsim list" in result.output
    assert os.listdir(tmp_path) == []  # nothing written where it ran


def test_a_local_file_wins_over_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hgx_h100.yaml").write_text((ROOT / "topologies" / "teaching.yaml").read_text())
    assert find("hgx_h100.yaml", "topologies") == Path("hgx_h100.yaml")


def test_shipped_names_work_in_scenario_and_sweep_files(tmp_path, monkeypatch):
    # issue 26, item 5: `topologies: [hgx_h200]` failed though the README says shipped names work
    # anywhere a file is asked for; a file beside the scenario still wins over a shipped name
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(
        "name: shipped names\ntopologies: [hgx_h200, hgx_h100.yaml]\nengine: flow\n"
        "workloads:\n  - {kind: collective, name: ar, op: all_reduce, sizes: 64M}\n")
    result = runner.invoke(app, ["run", "s.yaml", "--json", "-"])
    assert result.exit_code == 0, result.output
    import json

    systems = json.loads(result.stdout)["systems"]
    assert [Path(s["topology"]) for s in systems] == [find("hgx_h200", "topologies"), find("hgx_h100", "topologies")]
    (tmp_path / "w.yaml").write_text(
        "name: shipped in a sweep\nbase:\n  bench: {topology: hgx_h100, op: all_reduce, bytes: 1M, engine: flow}\n"
        "axes:\n  topology: [hgx_h100, dgx_a100]\n")
    dry = runner.invoke(app, ["sweep", "w.yaml", "--dry-run"])
    assert dry.exit_code == 0 and "topology=dgx_a100" in dry.output, dry.output
    (tmp_path / "v.yaml").write_text("name: a shipped scenario as base\nbase:\n  scenario: tp_decode\n"
                                     "axes:\n  engine: [flow]\n")
    assert runner.invoke(app, ["sweep", "v.yaml", "--dry-run"]).exit_code == 0
    (tmp_path / "t.yaml").write_text("name: typo\ntopologies: [hgx_h10]\nworkloads:\n"
                                     "  - {kind: collective, name: ar, op: all_reduce, sizes: 1M}\n")
    bad = runner.invoke(app, ["run", "t.yaml"])
    assert bad.exit_code == 2 and "t.yaml:2: topologies[0]: no such topology file" in bad.output, bad.output


def test_a_sweep_file_given_to_run_points_to_sweep_and_back():
    result = runner.invoke(app, ["run", "sweep_rack_scale"])
    assert result.exit_code == 2 and "is a sweep file" in result.output and "fabricsim sweep" in result.output
    result = runner.invoke(app, ["sweep", "tp_decode"])
    assert result.exit_code == 2 and "is a scenario file" in result.output and "fabricsim run" in result.output
