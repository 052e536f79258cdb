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


def _scenario(tmp_path: Path, body: str, topologies: str = "pcie_server.yaml") -> str:
    path = tmp_path / "s.yaml"
    tops = ", ".join(str(ROOT / "topologies" / t) for t in topologies.split(","))
    path.write_text(f"name: s\ntopologies: [{tops}]\nworkloads:\n{body}")
    return str(path)


def _lines(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("fabricsim:")]


def test_scenario_value_mistakes_are_all_reported_with_file_and_line(tmp_path):
    path = _scenario(tmp_path, """\
  - {kind: collective, name: ok, op: all_reduce, sizes: "256m"}
  - {kind: collective, name: bad size, op: all_reduce, sizes: "256x"}
  - kind: decode
    name: gqa
    model: {layers: 2, hidden: 4096, heads: 32, kv_heads: 7, head_dim: 128, ffn_hidden: 14336, vocab: 128256}
    context: 1024
    tp: 8
  - kind: prefill
    name: tp3
    model: {layers: 2, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128, ffn_hidden: 14336, vocab: 128256}
    context: 1024
    tp: 3
""")
    result = runner.invoke(app, ["run", path])
    assert result.exit_code == 2, result.output
    lines = _lines(result)
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"fabricsim: {path}:5: workloads[1].sizes: cannot read '256x'")
    assert lines[1].startswith(f"fabricsim: {path}:8: workloads[2].model.kv_heads: kv_heads: 7 must divide heads: 32")
    assert lines[2].startswith(f"fabricsim: {path}:15: workloads[3].tp: tp: 3 must divide heads: 32")


def test_scenario_checked_against_every_topology_before_running(tmp_path):
    path = _scenario(tmp_path, """\
  - {kind: copy, name: upload, op: h2d, sizes: 1M}
  - kind: decode
    name: too wide
    model: {layers: 2, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128, ffn_hidden: 14336, vocab: 128256}
    context: 1024
    tp: 16
  - {kind: collective, name: sharp, op: all_reduce, sizes: 1M, algo: nvls}
""", topologies="pcie_server.yaml,gb200_nvl72.yaml")
    result = runner.invoke(app, ["run", path])
    assert result.exit_code == 2, result.output
    text = "\n".join(_lines(result))
    assert f"{path}:9: workloads[1].tp: tensor parallelism over 16 GPUs, but pcie_server.yaml" in text
    assert f"{path}:10: workloads[2].algo: nvls cannot run on pcie_server.yaml" in text
    assert "in-switch reduction" in text
    assert f"{path}:4: workloads[0].op: h2d copies to or from a host, but gb200_nvl72.yaml" in text
    assert len(_lines(result)) == 3


def test_scenario_unknown_algo_names_the_line_and_choices(tmp_path):
    path = _scenario(tmp_path, "  - {kind: collective, name: x, op: all_reduce, sizes: 1M, algo: rign}\n")
    result = runner.invoke(app, ["run", path])
    assert result.exit_code == 2
    assert f"{path}:4: workloads[0].algo" in result.output and "ring" in result.output


def test_compare_unknown_op_suggests_and_gpu_count_names_the_flag():
    tops = [str(ROOT / "topologies" / t) for t in ("pcie_server.yaml", "hgx_h100.yaml")]
    result = runner.invoke(app, ["compare", *tops, "--op", "all_to_all"])
    assert result.exit_code == 2 and "did you mean 'alltoall'?" in result.output
    result = runner.invoke(app, ["compare", *tops, "--op", "all_reduce", "--sizes", "1M", "--gpus", "16"])
    assert result.exit_code == 2
    assert "fabricsim: --gpus: asks for 16 GPUs, but pcie_server.yaml" in result.output


def test_lab_errors_name_the_flag_not_the_python_field():
    result = runner.invoke(app, ["lab", "hol", "--hot-load", "1.5"])
    assert result.exit_code == 2
    assert "fabricsim: --hot-load: hot load is a fraction" in result.output and "hot_load" not in result.output


def test_every_problem_of_a_scenario_file_at_once_each_with_its_closest_choice(tmp_path):
    # issue 27: a scenario with five mistakes used to stop at the first; now one line each, in file order
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ntopologies: [hgx_h100]\nengine: packt\nworkloads:\n"
                    "  - {kind: collective, name: a, op: all_reduc, sizes: 1M, algo: rign}\n"
                    "  - {kind: collective, name: b, op: all_reduce, sizes: 1M, protocol: simpel}\n"
                    "  - {kind: decode, name: c, model: llama-3-70b, batch: 1, context: 8192, tp: 8, bacth: 2}\n")
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    import re

    found = [re.fullmatch(r"fabricsim: .*bad\.yaml:(\d+): ([^:]+): (.*)", line).groups()
             for line in result.output.strip().splitlines()]
    assert [(line, field) for line, field, _ in found] == [
        ("3", "engine"), ("5", "workloads[0].op"), ("5", "workloads[0].algo"), ("6", "workloads[1].protocol"),
        ("7", "workloads[2].bacth")]  # each at its own line, in file order
    for (_, _, message), closest in zip(found, ("packet", "all_reduce", "ring", "Simple", "batch")):
        assert message.endswith(f"did you mean {closest!r}?"), message
    lines = [message for _, _, message in found]
    assert "(allowed: name, model, batch," in lines[4]


@pytest.mark.parametrize(("args", "expected"), [
    # issue 27, item 7: no suggestion for --engine; a 1-GPU collective blamed on --algo
    (["bench", "hgx_h100", "--sizes", "1M", "--engine", "packt"],
     "fabricsim: --engine: unknown engine 'packt'; choose packet, flow, auto; did you mean 'packet'?"),
    (["bench", "hgx_h100", "--sizes", "1M", "--gpus", "1"],
     "fabricsim: --gpus: all_reduce is a collective: it needs at least 2 GPUs, got 1"),
    (["run", "tp_decode", "--launch", "egaer"],
     "fabricsim: --launch: unknown launch mode 'egaer'; choose graph, eager; did you mean 'eager'?"),
])
def test_a_flag_outside_its_closed_set_gets_its_closest_choice(args, expected):
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and result.output.strip() == expected, result.output


def test_compare_defaults_to_all_reduce_as_bench_does():
    # issue 27, item 7: compare refused to run without --op
    result = runner.invoke(app, ["compare", "hgx_h100", "dgx_a100", "--sizes", "1M", "--engine", "flow", "--json", "-"])
    assert result.exit_code == 0, result.output
    import json

    (item,) = {r["workload"] for s in json.loads(result.stdout)["systems"] for r in s["rows"]}
    assert item.startswith("all_reduce")
