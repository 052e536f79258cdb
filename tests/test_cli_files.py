"""Result files: --json - to stdout, vector figures by suffix, 0644 permissions, scalar CSV cells,
atomic writes that never replace an input."""

import csv
import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import InputError
from simulator.reports.export import flatten, write_csv, write_json
from simulator.reports.plots import busbw_vs_size

ROOT = Path(__file__).resolve().parent.parent
HGX = str(ROOT / "topologies" / "hgx_h100.yaml")
_register()
runner = CliRunner()


def test_json_dash_writes_only_json_to_stdout():
    result = runner.invoke(app, ["bench", HGX, "--sizes", "1M", "--engine", "flow", "--json", "-"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # nothing but the JSON object on stdout
    assert data["rows"][0]["bytes"] == 1 << 20 and data["dtype"] == "float"


@pytest.mark.parametrize(("suffix", "magic"), [(".svg", b"<?xml"), (".pdf", b"%PDF"), (".png", b"\x89PNG")])
def test_plot_format_follows_the_suffix(tmp_path, suffix, magic):
    path = busbw_vs_size({"a": [(1 << 20, 10.0), (1 << 30, 300.0)]}, path=tmp_path / f"p{suffix}")
    data = Path(path).read_bytes()
    assert data.startswith(magic)
    if suffix == ".svg":
        assert b"<path" in data and b"<image" not in data  # vector, not an embedded raster
    assert stat.S_IMODE(Path(path).stat().st_mode) == 0o644
    again = busbw_vs_size({"a": [(1 << 20, 10.0), (1 << 30, 300.0)]}, path=tmp_path / f"q{suffix}")
    assert Path(again).read_bytes() == data  # same data, same bytes


def test_unknown_figure_suffix_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"\.png, \.svg or \.pdf"):
        busbw_vs_size({"a": [(1 << 20, 10.0)]}, path=tmp_path / "p.jpg")


def test_json_and_csv_are_0644_with_scalar_cells(tmp_path):
    rows = [{"bytes": 1, "dynamic_J": {"nvlink": 0.5, "pcie": 0.25}, "kinds": ["a", "b"]}]
    j = write_json(tmp_path / "r.json", {"rows": rows})
    c = write_csv(tmp_path / "r.csv", rows)
    for path in (j, c):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
    (read,) = list(csv.DictReader(c.open()))
    assert read == {"bytes": "1", "dynamic_J.nvlink": "0.5", "dynamic_J.pcie": "0.25", "kinds": "a;b"}
    assert flatten({"a": {"b": {"c": 1}}}) == {"a.b.c": 1}


def test_results_never_replace_an_input(tmp_path):
    top = tmp_path / "topo.yaml"
    top.write_text(Path(HGX).read_text())
    before = top.read_text()
    result = runner.invoke(app, ["bench", str(top), "--sizes", "1M", "--engine", "flow", "--json", str(top)])
    assert result.exit_code == 2 and "refusing to overwrite an input file" in result.output
    assert top.read_text() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_validate_checks_its_plot_before_simulating(tmp_path, monkeypatch):
    # issue 27, item 6: validate --plot out.jpg failed after ~10 s of simulating every entry
    import simulator.runner.validate as validate

    def never(*args, **kwargs):
        raise AssertionError("simulated before checking --plot")

    monkeypatch.setattr(validate, "predict", never)
    result = CliRunner().invoke(app, ["validate", "--plot", str(tmp_path / "out.jpg")])
    assert result.exit_code == 2 and "cannot write a .jpg figure" in result.output, result.output
