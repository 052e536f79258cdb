"""The public Python API: the README example runs, and results agree with the CLI's JSON."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli.app import _register, app
from simulator.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
_register()


def test_readme_python_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.DOTALL)
    assert blocks, "README has a Python API example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})  # noqa: S102
    out = capsys.readouterr().out
    assert "72 GPUs" in out and "HGX H100 is faster than DGX A100 by" in out


def test_bench_matches_the_cli_json():
    result = simulator.bench("hgx_h100", sizes="1M,64M", engine="flow")
    cli = CliRunner().invoke(app, ["bench", "hgx_h100", "--sizes", "1M,64M", "--engine", "flow", "--json", "-"])
    assert cli.exit_code == 0, cli.output
    rows = json.loads(cli.stdout)["rows"]
    assert [r["busbw_GBps"] for r in rows] == [r["busbw_GBps"] for r in result.rows]
    data = result.to_dict()
    assert data["gpus"] == 8 and data["rows"][1]["bytes"] == 64 << 20
    # busbw = algbw x 2(n-1)/n for all_reduce on 8 GPUs
    for r in result.rows:
        assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * 2 * 7 / 8)


def test_api_errors_are_input_errors():
    with pytest.raises(InputError, match="did you mean 'ring'"):
        simulator.bench("hgx_h100", sizes="1M", algo="rign", engine="flow")
    with pytest.raises(InputError, match="no such topology"):
        simulator.load_topology("no_such_system")
    with pytest.raises(AttributeError):
        simulator.no_such_function  # noqa: B018
