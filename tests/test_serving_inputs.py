"""Bad serving input (issue 25): one line naming FILE:LINE and the field, what is wrong and what
would be right, exit 2; nothing dropped silently, no traceback."""

from __future__ import annotations

import textwrap

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app

_register()

BASE = """\
    name: bad input
    topologies: [hgx_h100]
    model: llama-3-8b
    load:
      rates: [1]
      requests: 3
      prompt_tokens: {fixed: 100}
      output_tokens: {fixed: 10}
    slo: {ttft: 2 s, tpot: 50 ms}
    deployments:
      - {name: a, tp: 1}
"""


def _serve(tmp_path, text: str, *args: str):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    result = CliRunner().invoke(app, ["serve", str(path), *args])
    return result, str(path)


@pytest.mark.parametrize("old, new, where, says", [
    ("ttft: 2 s", "ttft: 2", ":9: slo.ttft", "has no unit; write it with one, such as '2 s'"),
    ("ttft: 2 s", "ttft: 2 parsecs", ":9: slo.ttft", "unknown unit 'parsecs'"),
    ("requests: 3", "requests: 3\n      duration: 60", ":7: load.duration", "has no unit"),
    ("fixed: 100", "fixed: -100", ":7: load.prompt_tokens.fixed", "greater than or equal to 1"),
    ("{fixed: 10}", "{uniform: [20, 5]}", ":8: load.output_tokens", "low <= high"),
    ("{name: a, tp: 1}", "{name: a, tp: 4, instances: 3}", ":11: deployments[0]",
     "needs 12 GPUs; HGX H100 has 8: give fewer instances"),
    ("{name: a, tp: 1}", "{name: a, tp: 2, ep: 3}", ":11: deployments[0]", "ep 3 is not a multiple of tp 2"),
    ("{name: a, tp: 1}", "{name: a, prefill: {tp: 1}}", ":11: deployments[0]", "needs both a prefill: and a decode:"),
    ("fixed: 100", "fixed: 1000000", ":7: load.prompt_tokens", "needs 62501 KV blocks"),
    ("llama-3-8b", "llama-3-70b", ":11: deployments[0]", "leave no room for a KV cache"),
    ("model: llama-3-8b", "model: llama-9", ":3: model", "unknown model 'llama-9'"),
])
def test_a_bad_value_is_one_line_at_its_file_and_line(tmp_path, old, new, where, says):
    assert old in BASE
    result, path = _serve(tmp_path, BASE.replace(old, new, 1))
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert lines[0].startswith(f"fabricsim: {path}{where}: "), lines[0]
    assert says in lines[0], lines[0]


def test_a_malformed_trace_row_is_its_file_and_line(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,100,20\n"
                     "2023-11-16 18:15:47.0000000,-5,20\n")
    result, _ = _serve(tmp_path, """\
        name: trace
        topologies: [hgx_h100]
        model: llama-3-8b
        load: {trace: t.csv, format: azure}
        deployments:
          - {name: a, tp: 1}
    """)
    assert result.exit_code == 2
    assert result.output.strip() == f"fabricsim: {trace}:3: ContextTokens: -5 is negative; a token count is >= 0"


@pytest.mark.parametrize("args, says", [
    (["--rate", "-1"], "fabricsim: --rate: --rate -1.0 must be > 0 requests per second"),
    (["--deployment", "zz"], "fabricsim: --deployment: no deployment 'zz'"),
    (["--duration", "0"], "fabricsim: --duration: --duration 0.0 must be a time > 0 in seconds"),
])
def test_a_bad_flag_is_named(tmp_path, args, says):
    result, _ = _serve(tmp_path, BASE, *args)
    assert result.exit_code == 2 and result.output.startswith(says), result.output


def test_a_workloads_scenario_and_a_serving_one_point_at_each_other(tmp_path):
    result, path = _serve(tmp_path, """\
        name: x
        topologies: [hgx_h100]
        workloads:
          - {kind: collective, name: ar, op: all_reduce, gpus: 8, sizes: 1M}
    """)
    assert result.exit_code == 2 and "fabricsim run" in result.output
    served = tmp_path / "serving.yaml"
    served.write_text(textwrap.dedent(BASE))
    run = CliRunner().invoke(app, ["run", str(served)])
    assert run.exit_code == 2 and "fabricsim serve" in run.output and f"{served}:1:" in run.output
