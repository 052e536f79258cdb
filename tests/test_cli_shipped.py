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
