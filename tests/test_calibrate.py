"""fabricsim calibrate: the fit of a recorded H200 run (tests/data/calibrate/h200_microbench.json,
the raw output of `python3 -m simulator.calibrate.microbench` on one H200), the override file it
writes, the loader's errors on a bad one, and the command's paths without a GPU."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.calibrate.fit import fit, gpu_part, levenberg_marquardt
from simulator.calibrate.write import calibrate, render, write
from simulator.cli.app import _register, app
from simulator.calibrate.microbench import NO_TORCH
from simulator.errors import InputError
from simulator.hardware.catalog import load_catalog
from simulator.hardware.kernels import kernel_model, load_kernel_table

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "tests" / "data" / "calibrate" / "h200_microbench.json"
_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def doc():
    return json.loads(RUN.read_text())


@pytest.fixture(scope="module")
def fitted(doc):
    return calibrate(doc, source=str(RUN), version="test")


@pytest.fixture(scope="module")
def written(fitted, tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / "h200.yaml"
    write(path, fitted[1])
    return path


def _errors(cal, bench):
    return [r.error for r in cal.rows if r.bench == bench and r.error is not None]


def test_fit_reproduces_the_stream_curve_within_5_percent_and_the_fixed_cost(doc, fitted):
    cal, _ = fitted
    stream = _errors(cal, "stream")
    assert len(stream) == 12
    assert max(map(abs, stream)) < 0.05
    fixed = {r["mode"]: r["time_s"] for r in doc["records"] if r["bench"] == "fixed"}
    assert cal.values["graph_kernel_s"] == pytest.approx(fixed["graph"])
    assert cal.values["eager_kernel_s"] == pytest.approx(fixed["eager"])
    assert max(map(abs, _errors(cal, "fixed"))) < 1e-3  # as written, 4 digits
    assert 0 < cal.values["hbm_efficiency"] <= 1 and cal.values["mlp_sharpness"] > 0
    # every fitted number says where it was measured
    for key in cal.values:
        assert cal.sources[key].startswith("measured, NVIDIA H200, 2026-12-03, fabricsim calibrate (")


def test_fitted_points_the_constants_come_from_are_reproduced(fitted):
    cal, _ = fitted
    rows = {(r.bench, r.point): r for r in cal.rows}
    for point in ("copy 256 MiB", "add 256 MiB", "gelu 256 MiB", "row_sum 256 MiB", "rms_norm 256 MiB",
                  "softmax 256 MiB", "gelu 1 MiB", "row_sum 1 MiB"):
        assert abs(rows["elementwise", point].error) < 0.005, point
    # the latency fits: one-row kernels (intercept + slope on row length) and small elementwise kernels
    for point in ("rms_norm 1x4096", "rms_norm 1x8192", "softmax 1x4096", "softmax 1x8192"):
        assert abs(rows["rows", point].error) < 0.03, point
    assert max(abs(r.error) for r in cal.rows if r.bench == "small") < 0.12
    assert abs(rows["gemm", "1x28672x4096"].error) < 0.005
    assert abs(rows["gemm", "4096x4096x4096"].error) < 0.05
    assert max(abs(r.error) for r in cal.rows if r.bench == "prefill") < 0.12  # least squares over all 9
    for state in ("idle", "copy", "memory", "tensor"):
        assert abs(rows["power", state].error) < 0.005
    # the long split-KV decode kernels, which a decode step's attention time is made of
    for point in ("B=16 H=8 T=32768", "B=4 H=32 T=32768", "B=64 H=1 T=32768", "B=64 H=8/1 T=16384"):
        assert abs(rows["decode", point].error) < 0.05, point
    # and the short ones, bound by the call's latency and the combine loop over 8-128 splits
    for point in ("B=1 H=1 T=1024", "B=1 H=1 T=4096", "B=1 H=1 T=16384", "B=1 H=8 T=1024"):
        assert abs(rows["decode", point].error) < 0.1, point
    # and the profiler's kernels per call agree with the model's (split-KV + combine, or one plain kernel)
    assert not [r for r in cal.rows if "kernels: model" in r.note]


def test_written_file_round_trips_and_changes_the_model(fitted, written):
    cal, text = fitted
    assert text.startswith("# Written by fabricsim calibrate on 2026-12-03: NVIDIA H200.")
    assert (written.stat().st_mode & 0o777) == 0o644
    arch = load_kernel_table((str(written),)).architecture("hopper")
    for key, value in cal.values.items():
        got = getattr(arch, key)
        if isinstance(value, dict):
            for sub, v in value.items():
                assert got[sub] == pytest.approx(v, rel=1e-3), (key, sub)
        else:
            assert got == pytest.approx(value, rel=1e-3), key
        assert arch.sources[key].startswith("measured, NVIDIA H200")
    builtin = load_kernel_table().architecture("hopper")
    assert arch.resident_ctas_per_sm == builtin.resident_ctas_per_sm  # not measured: kept
    spec = load_catalog().device("h200").gpu
    before = kernel_model("h200", spec, "eager")
    after = kernel_model("h200", spec, "eager", overrides=[written])
    assert after.kernel_s == pytest.approx(cal.values["eager_kernel_s"], rel=1e-3)
    assert after is not before  # the built-in hopper constants are this run's, rounded: the source tells them apart
    assert after.arch.sources["eager_kernel_s"] != before.arch.sources["eager_kernel_s"]
    assert after.decode_attention(16, 8, 8, 32768, 128).time_s != before.decode_attention(16, 8, 8, 32768, 128).time_s


@pytest.mark.parametrize(("edit", "field", "message"), [
    (("    hbm_efficiency: ", "    hbm_efficiency: 1.7 #"), "hbm_efficiency", "less than or equal to 1"),
    (("    mlp_sharpness: ", "    mlp_sharpnes: 1.7\n    mlp_sharpness: "), "mlp_sharpnes", "unknown field"),
    (("{copy: ", "{copyy: "), "class_efficiency", "unknown kernel class 'copyy'"),
])
def test_a_bad_calibration_file_fails_at_its_line(fitted, tmp_path, edit, field, message):
    text = fitted[1].replace(*edit, 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.strip().startswith(field + ":"))
    with pytest.raises(InputError) as err:
        load_kernel_table((str(bad),))
    assert err.value.file == str(bad) and err.value.line == line
    assert field in (err.value.field or "") and message in err.value.message


def test_gpu_names_map_to_catalog_parts():
    assert [gpu_part(n) for n in ("NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA B200",
                                  "NVIDIA GB200")] == ["h200", "h100", "a100", "b200", "gb200"]
    with pytest.raises(InputError, match="unknown GPU 'Tesla V100-SXM2-32GB'.*A100.*H200"):
        gpu_part("Tesla V100-SXM2-32GB")


def test_levenberg_marquardt_fits_the_soft_minimum_it_was_given():
    import numpy as np

    n = np.array([1, 2, 4, 8, 16, 33, 66, 132, 264, 528], dtype=float)
    truth = (50e9, 3.9e12, 1.8)
    rate = ((n * truth[0]) ** -truth[2] + truth[1] ** -truth[2]) ** (-1 / truth[2])

    def res(x):
        cta, sat, k = np.exp(x)
        return np.log(((n * cta) ** -k + sat ** -k) ** (-1 / k)) - np.log(rate)

    x, cost = levenberg_marquardt(res, np.log([30e9, 3e12, 1.0]))
    assert np.exp(x) == pytest.approx(truth, rel=1e-4) and cost < 1e-12


def test_no_torch_exits_2_with_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["calibrate"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [NO_TORCH]
    assert not list(tmp_path.iterdir())


def test_torch_without_a_cuda_gpu_exits_2_with_one_line(monkeypatch, tmp_path):
    fake = types.ModuleType("torch")
    fake.__version__ = "2.11.0+cpu"
    fake.cuda = types.SimpleNamespace(is_available=lambda: False)
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["calibrate"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs a CUDA GPU" in lines[0] and "2.11.0+cpu" in lines[0]


def test_from_json_through_the_cli(tmp_path):
    out = tmp_path / "cal.yaml"
    result = runner.invoke(app, ["calibrate", "--from-json", str(RUN), "-o", str(out), "--json", "-"],
                           env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["part"] == "h200" and data["file"] == str(out)
    assert max(abs(r["error"]) for r in data["rows"] if r["bench"] == "stream") < 0.05
    assert load_kernel_table((str(out),)).architecture("hopper").cta_Bps == pytest.approx(data["values"]["cta_Bps"],
                                                                                         rel=1e-3)
    table = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert max(len(ln) for ln in table) <= 80
    assert any("Worst error per bench" in ln for ln in table)
    # an existing file is kept unless --force
    again = runner.invoke(app, ["calibrate", "--from-json", str(RUN), "-o", str(out)])
    assert again.exit_code == 2 and "--force" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    forced = runner.invoke(app, ["calibrate", "--from-json", str(RUN), "-o", str(out), "--force"],
                           env={"COLUMNS": "80"})
    assert forced.exit_code == 0, forced.output
    # never over the input, even with --force
    raw = tmp_path / "raw.json"
    raw.write_text(RUN.read_text())
    clobber = runner.invoke(app, ["calibrate", "--from-json", str(raw), "-o", str(raw), "--force"])
    assert clobber.exit_code == 2 and json.loads(raw.read_text())["header"]["gpu"] == "NVIDIA H200"


def test_unknown_gpu_and_a_broken_run_exit_2(doc, tmp_path):
    other = dict(doc, header={**doc["header"], "gpu": "Tesla V100-SXM2-32GB"})
    path = tmp_path / "v100.json"
    path.write_text(json.dumps(other))
    result = runner.invoke(app, ["calibrate", "--from-json", str(path), "-o", str(tmp_path / "x.yaml")])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "fabricsim: unknown GPU 'Tesla V100-SXM2-32GB': fabricsim calibrate knows A100, B200, GB200, H100, H200"]
    broken = tmp_path / "broken.json"
    broken.write_text('{"header": {"gpu": "NVIDIA H200"},\n "records": [}')
    result = runner.invoke(app, ["calibrate", "--from-json", str(broken), "-o", str(tmp_path / "y.yaml")])
    assert result.exit_code == 2 and f"{broken}:2: broken JSON" in result.stderr


def test_render_and_fit_without_the_decode_bench(doc):
    part = dict(doc, records=[r for r in doc["records"] if r["bench"] in ("fixed", "stream")])
    cal = fit(part)
    assert set(cal.values) == {"graph_kernel_s", "eager_kernel_s", "cta_Bps", "hbm_efficiency", "mlp_sharpness"}
    text = render(cal)
    assert "attention_cta_Bps" not in text and "power_fraction" not in text


def test_microbench_needs_only_the_standard_library_to_plan():
    code = ("import sys; import simulator.calibrate.microbench as m; "
            "assert not [k for k in sys.modules if k.split('.')[0] in ('pydantic', 'numpy', 'yaml', 'torch', 'triton')]; "
            "print(m.dry_run())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip().endswith("233 cases to run, 1 skipped")
    assert "decode_attention   batch=64, heads=32, kv_heads=32, context=32768" in out


def test_a_live_run_measures_fits_and_keeps_the_raw_run(monkeypatch, tmp_path, doc):
    """The GPU path with the microbenchmarks stubbed: the GPU is named before anything runs, the raw
    run is kept with --raw-out, and the override file is written beside it."""
    from simulator.calibrate import microbench

    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(is_available=lambda: True, get_device_name=lambda i=0: "NVIDIA H200")
    monkeypatch.setitem(sys.modules, "torch", fake)
    calls = []
    monkeypatch.setattr(microbench, "run_all", lambda out=None, **kw: calls.append(kw) or doc)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["calibrate", "--raw-out", "raw.json"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert len(calls) == 1
    assert json.loads((tmp_path / "raw.json").read_text()) == doc
    text = (tmp_path / "calibration-h200.yaml").read_text()
    assert 'raw: "raw.json"' in text and "kernels:\n  hopper:\n" in text
    fake.cuda.get_device_name = lambda i=0: "Tesla V100-SXM2-32GB"
    result = runner.invoke(app, ["calibrate", "-o", "v100.yaml"])
    assert result.exit_code == 2 and "unknown GPU" in result.stderr and len(calls) == 1
