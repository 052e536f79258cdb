"""Errors that point: unknown names get the choices and the closest match, flags are named as flags,
and an algorithm that cannot run says why."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import did_you_mean
from simulator.workloads.collectives import check_protocol

ROOT = Path(__file__).resolve().parent.parent
PCIE = str(ROOT / "topologies" / "pcie_server.yaml")
_register()
runner = CliRunner()


def _bench(*args: str):
    return runner.invoke(app, ["bench", PCIE, "--sizes", "1M", "--engine", "flow", "--text", *args])


@pytest.mark.parametrize(("args", "expected"), [
    (("--algo", "rign"), "--algo: unknown algo 'rign'; choose auto, ring, tree"),
    (("--algo", "rign"), "did you mean 'ring'?"),
    (("--protocol", "LL129"), "did you mean 'LL128'?"),
    (("--op", "all_to_all"), "--op: unknown op 'all_to_all'"),
    (("--op", "all_to_all"), "did you mean 'alltoall'?"),
    (("--algo", "nvls"), "--algo: nvls cannot run all_reduce here: NVLS needs an NVSwitch with in-switch reduction"),
    (("--gpus", "0"), "'--gpus'"),
    (("--credit-plot", "x.png", "--link", "999"), "--link: "),
])
def test_bad_flag_exits_2_naming_the_flag(args, expected):
    result = _bench(*args)
    assert result.exit_code == 2, result.output
    assert expected in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_protocol_names_are_case_insensitive_like_nccl_proto():
    assert check_protocol("ll") == "LL" and check_protocol("simple") == "Simple" and check_protocol("AUTO") == "auto"
    result = _bench("--protocol", "ll")
    assert result.exit_code == 0, result.output
    assert "ring/LL/" in result.output


def test_did_you_mean_only_suggests_close_names():
    assert did_you_mean("treee", ["ring", "tree"]) == "; did you mean 'tree'?"
    assert did_you_mean("xyz", ["ring", "tree"]) == ""
