"""An output never replaces an input, and every output is checked before the run (issue 28,
items 1-2): the guard knows every file a run reads (what a topology extends, its parts files,
fault files, a scenario's topologies and Chakra traces, a sweep's topologies and scenario); two
outputs on one path are an error; a folder, a path under a file, a missing or read-only folder or
a .jpg figure is one line naming the flag, exit 2, before anything is simulated."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import InputError
from simulator.reports import export
from simulator.reports.export import OutputPlan, check_output

ROOT = Path(__file__).resolve().parents[1]
_register()
runner = CliRunner()
FAST = ["--sizes", "1M", "--engine", "flow"]


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """A copy of topologies/ and scenarios/ (the shipped files are never at risk)."""
    shutil.copytree(ROOT / "topologies", tmp_path / "topologies")
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios")
    return tmp_path


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _refused(args: list[str], root: Path | None = None) -> str:
    """Run a command that must be refused: exit 2, one line, no traceback, no file changed or
    added under ``root``, and nothing simulated (no table printed). Returns the line."""
    before = _snapshot(root) if root else None
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout.strip() == "", result.stdout  # refused before any table
    if root is not None:
        assert _snapshot(root) == before
    return lines[0]


REFUSED = "refusing to overwrite an input file with results (this run reads it)"


# --- outputs over inputs --------------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--json", "--trace"])
def test_bench_never_writes_over_the_file_a_topology_extends(tree, flag):
    h200, h100 = tree / "topologies" / "hgx_h200.yaml", tree / "topologies" / "hgx_h100.yaml"
    line = _refused(["bench", str(h200), *FAST, flag, str(h100)], tree)
    assert line == f"fabricsim: {flag}: {h100}: {REFUSED}"


def test_bench_never_writes_over_a_fault_file_or_the_file_it_extends(tree):
    tray = tree / "topologies" / "faults" / "nvl72_tray_down.yaml"
    faults = tree / "f.yaml"
    faults.write_text("faults:\n  - {kind: link_down, from: hgx.gpu0, to: hgx.nvsw0}\n")
    hgx = tree / "topologies" / "hgx_h100.yaml"
    line = _refused(["bench", str(hgx), *FAST, "--fault", str(faults), "--json", str(faults)], tree)
    assert line == f"fabricsim: --json: {faults}: {REFUSED}"
    nvl72 = tree / "topologies" / "gb200_nvl72.yaml"  # the shipped fault topology extends it
    line = _refused(["bench", str(tray), *FAST, "--json", str(nvl72)], tree)
    assert line == f"fabricsim: --json: {nvl72}: {REFUSED}"


def test_bench_never_writes_over_a_topologys_parts_file(tree):
    parts = tree / "extra.yaml"
    parts.write_text((ROOT / "simulator" / "hardware" / "parts" / "retry.yaml").read_text().split("retry:")[0]
                     + "devices: {}\n")
    topo = tree / "t.yaml"
    topo.write_text("parts: [extra.yaml]\n" + (ROOT / "topologies" / "teaching.yaml").read_text())
    line = _refused(["bench", str(topo), *FAST, "--json", str(parts)], tree)
    assert line == f"fabricsim: --json: {parts}: {REFUSED}"


@pytest.mark.parametrize("flag", ["--json", "--csv", "--trace"])
def test_run_never_writes_over_a_scenarios_topology_or_what_it_extends(tree, flag):
    scenario = tree / "scenarios" / "s.yaml"
    scenario.write_text("name: s\ntopologies: [../topologies/hgx_h200.yaml]\nengine: flow\n"
                        "workloads:\n  - {kind: collective, name: ar, op: all_reduce, sizes: 1M}\n")
    for target in ("hgx_h200.yaml", "hgx_h100.yaml"):
        path = tree / "topologies" / target
        assert _refused(["run", str(scenario), flag, str(path)], tree) == f"fabricsim: {flag}: {path}: {REFUSED}"


def test_run_never_writes_over_a_chakra_trace(tree):
    scenario = tree / "scenarios" / "chakra_tp_layer.yaml"
    trace = tree / "scenarios" / "chakra" / "tp_layer.3.et"
    line = _refused(["run", str(scenario), "--csv", str(trace)], tree)
    assert line == f"fabricsim: --csv: {trace}: {REFUSED}"


def test_run_never_writes_over_the_scenario_itself(tree):
    scenario = tree / "scenarios" / "chakra_tp_layer.yaml"
    assert _refused(["run", str(scenario), "--json", str(scenario)], tree) == \
        f"fabricsim: --json: {scenario}: {REFUSED}"


def test_compare_never_writes_over_a_topology_a_scenario_or_what_they_extend(tree):
    h200, h100 = tree / "topologies" / "hgx_h200.yaml", tree / "topologies" / "dgx_a100.yaml"
    base = tree / "topologies" / "hgx_h100.yaml"
    for target in (h200, base):
        assert _refused(["compare", str(h200), str(h100), "--op", "all_reduce", "--sizes", "1M", "--engine", "flow",
                         "--json", str(target)], tree) == f"fabricsim: --json: {target}: {REFUSED}"
    scenario = tree / "scenarios" / "nvl72_allreduce.yaml"
    assert _refused(["compare", str(h200), str(h100), "--scenario", str(scenario), "--json", str(scenario)],
                    tree) == f"fabricsim: --json: {scenario}: {REFUSED}"


def _bench_sweep(tree: Path) -> Path:
    sweep = tree / "scenarios" / "sw.yaml"
    sweep.write_text("name: sw\nbase:\n  bench: {topology: ../topologies/hgx_h200.yaml, bytes: 1M, engine: flow}\n"
                     "axes:\n  gpus: [2, 4]\n")
    return sweep


@pytest.mark.parametrize("target", ["scenarios/sw.yaml", "topologies/hgx_h200.yaml", "topologies/hgx_h100.yaml"])
def test_sweep_never_writes_over_its_file_its_topology_or_what_that_extends(tree, target):
    sweep = _bench_sweep(tree)
    path = tree / target
    assert _refused(["sweep", str(sweep), "--no-cache", "--workers", "1", "--csv", str(path)], tree) == \
        f"fabricsim: --csv: {path}: {REFUSED}"


def test_a_scenario_sweep_never_writes_over_the_scenarios_topology(tree):
    sweep = tree / "scenarios" / "ss.yaml"
    sweep.write_text("name: ss\nbase:\n  scenario: chakra_tp_layer.yaml\naxes:\n  seed: [0, 1]\n")
    for target in ("chakra/tp_layer.0.et", "../topologies/hgx_h100.yaml", "chakra_tp_layer.yaml"):
        path = tree / "scenarios" / target
        assert _refused(["sweep", str(sweep), "--no-cache", "--json", str(path)], tree) == \
            f"fabricsim: --json: {path}: {REFUSED}"


def test_fabricsims_own_data_files_are_inputs_too(tree):
    retry = ROOT / "simulator" / "hardware" / "parts" / "retry.yaml"
    before = retry.read_bytes()
    assert _refused(["bench", "teaching", *FAST, "--json", str(retry)]) == f"fabricsim: --json: {retry}: {REFUSED}"
    assert retry.read_bytes() == before


def test_a_hard_link_to_an_input_is_that_input(tree):
    h100 = tree / "topologies" / "hgx_h100.yaml"
    alias = tree / "alias.yaml"
    os.link(h100, alias)
    assert _refused(["bench", str(h100), *FAST, "--json", str(alias)], tree) == f"fabricsim: --json: {alias}: {REFUSED}"


# --- two outputs on one path ---------------------------------------------------------------------

def test_two_outputs_on_one_path_are_an_error_and_nothing_is_written(tree):
    out = tree / "out.json"
    scenario = tree / "scenarios" / "chakra_tp_layer.yaml"
    line = _refused(["run", str(scenario), "--json", str(out), "--csv", str(out)], tree)
    assert line == f"fabricsim: --csv: {out} is also the --json output; give each output its own file"
    assert not out.exists()
    line = _refused(["bench", "teaching", *FAST, "--json", "-", "--trace", "-"])
    assert line == "fabricsim: --trace: cannot write to standard output ('-'); give a file name"
    line = _refused(["run", str(scenario), "--json", "-", "--csv", "-"])
    assert line == "fabricsim: --csv: standard output is also the --json output; give each output its own file"
    line = _refused(["bench", "teaching", *FAST, "--json", str(out), "--trace", str(tree / "." / "out.json")])
    assert line == f"fabricsim: --trace: {tree / '.' / 'out.json'} is also the --json output; give each output its own file"


def test_dev_null_takes_every_output_and_stays_a_device(tmp_path):
    """Through a link to it, so that code which renames over its target replaces the link, not the
    machine's /dev/null."""
    sink = tmp_path / "sink"
    sink.symlink_to(os.devnull)
    result = runner.invoke(app, ["bench", "teaching", *FAST, "--json", str(sink), "--trace", str(sink),
                                 "--plot", str(sink)])
    assert result.exit_code == 0, result.output
    assert sink.is_symlink() and stat.S_ISCHR(os.stat(sink).st_mode)


# --- unwritable outputs, before the run --------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--json", "--trace", "--plot", "--heatmap", "--credit-plot"])
def test_bench_checks_every_output_before_it_runs(tree, flag):
    topo = tree / "topologies"
    regular = topo / "hgx_h100.yaml"
    suffix = ".png" if flag not in ("--json", "--trace") else ".json"
    cases = {str(topo): f"{topo}: is a folder; give a file name (e.g. {topo / 'out'})",
             str(regular / f"x{suffix}"): f"{regular / f'x{suffix}'}: cannot write here: {regular} is a file, not a folder",
             str(tree / "nope" / "deeper" / f"x{suffix}"):
                 f"{tree / 'nope' / 'deeper' / f'x{suffix}'}: output folder {tree / 'nope' / 'deeper'} does not exist"}
    for path, message in cases.items():
        assert _refused(["bench", "teaching", *FAST, flag, path], tree) == f"fabricsim: {flag}: {message}"


@pytest.mark.parametrize("args", [["bench", "teaching", *FAST], ["describe", "teaching"],
                                  ["run", "scenarios/chakra_tp_layer.yaml"],
                                  ["compare", "hgx_h100", "dgx_a100", "--op", "all_reduce", "--sizes", "1M"],
                                  ["lab", "retry"], ["lab", "credits"],
                                  ["sweep", "scenarios/sweep_credit_buffer.yaml", "--no-cache"]],
                         ids=["bench", "describe", "run", "compare", "lab-retry", "lab-credits", "sweep"])
def test_a_figure_format_matplotlib_cannot_write_is_refused_before_the_run(tree, args):
    args = [str(ROOT / a) if a.startswith("scenarios/") else a for a in args]
    out = tree / "f.jpg"
    assert _refused([*args, "--plot", str(out)], tree) == \
        f"fabricsim: --plot: {out}: cannot write a .jpg figure; name the file .png, .svg or .pdf"


def test_compare_power_plot_is_checked_too(tree):
    out = tree / "p.gif"
    assert _refused(["compare", "hgx_h100", "dgx_a100", "--op", "all_reduce", "--sizes", "1M",
                     "--power-plot", str(out)], tree) == \
        f"fabricsim: --power-plot: {out}: cannot write a .gif figure; name the file .png, .svg or .pdf"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused_before_the_run(tree):
    folder = tree / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert _refused(["bench", "teaching", *FAST, "--json", str(folder / "x.json")], tree) == \
            f"fabricsim: --json: {folder / 'x.json'}: cannot write in folder {folder}: permission denied"
    finally:
        folder.chmod(0o755)


def test_a_folder_that_refuses_new_files_is_refused_before_the_run(tree, monkeypatch):
    """As the read-only case, for any user (root writes into a chmod 555 folder)."""
    def denied(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(export.tempfile, "mkstemp", denied)
    out = tree / "x.csv"
    assert _refused(["run", str(ROOT / "scenarios" / "chakra_tp_layer.yaml"), "--csv", str(out)], tree) == \
        f"fabricsim: --csv: {out}: cannot write in folder {tree}: permission denied"


def test_chakra_example_checks_its_prefix(tree):
    regular = tree / "topologies" / "hgx_h100.yaml"
    assert _refused(["chakra-example", str(regular / "x")], tree) == \
        f"fabricsim: PREFIX: {regular / 'x.0.et'}: cannot write here: {regular} is a file, not a folder"
    assert _refused(["chakra-example", str(tree)], tree) == \
        f"fabricsim: PREFIX: {tree}: is a folder; give a prefix such as {tree / 'layer'} (writes {tree / 'layer'}.0.et ..)"


def test_a_good_run_still_writes_every_output(tree):
    out = tree / "out"
    out.mkdir()
    scenario = tree / "scenarios" / "chakra_tp_layer.yaml"
    result = runner.invoke(app, ["run", str(scenario), "--json", str(out / "r.json"), "--csv", str(out / "r.csv"),
                                 "--plot", str(out / "r.svg")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["r.csv", "r.json", "r.svg"]


# --- the plan itself --------------------------------------------------------------------------------

def test_the_plan_names_the_path_when_no_flag_is_given(tmp_path):
    with pytest.raises(InputError) as err:
        check_output(tmp_path)
    assert str(err.value) == f"{tmp_path}: is a folder; give a file name (e.g. {tmp_path / 'out'})"
    plan = OutputPlan([tmp_path / "in.yaml"]).add_data("--json", None).add_figure("--plot", None)
    assert plan.inputs == (tmp_path / "in.yaml",)
    with pytest.raises(InputError, match="is a folder"):  # a trailing slash names a folder
        check_output(f"{tmp_path}/new/")


def test_a_write_that_fails_anyway_is_one_line_and_leaves_no_temp_file(tmp_path, monkeypatch):
    real = os.fdopen

    class Full:
        def __init__(self, handle):  # noqa: ANN001
            self.handle = handle

        def __enter__(self):  # noqa: ANN204
            return self

        def __exit__(self, *exc):  # noqa: ANN002, ANN204
            self.handle.close()

        def write(self, data):  # noqa: ANN001, ANN201
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(export.os, "fdopen", lambda fd, mode: Full(real(fd, mode)))
    out = tmp_path / "r.json"
    with pytest.raises(InputError) as err:
        export.write_json(out, {"a": 1})
    assert str(err.value) == f"{out}: cannot write: no space left on device"
    assert list(tmp_path.iterdir()) == []
