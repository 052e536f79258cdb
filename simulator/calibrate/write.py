"""Write a calibration (``fit.Calibration``) as a parts override file that ``hardware.kernels``
reads (``load_kernel_table((FILE,))``, ``--parts FILE``, a topology's ``parts:``), and check the
fitted model against every microbenchmark point through that same file.

The file holds only what was measured, each number with a ``sources`` entry that says so::

    # Written by fabricsim calibrate on 2026-12-02: NVIDIA H200. Pass it with --parts FILE ...
    calibration: {gpu: "NVIDIA H200", architecture: "hopper", date: "...", tool: "fabricsim calibrate 0.1.0", ...}
    kernels:
      hopper:
        cta_Bps: 61.2 GB/s
        ...
        sources: {cta_Bps: "measured, NVIDIA H200, 2026-12-02, fabricsim calibrate (stream, ...)", ...}

Written atomically (temp file + rename, mode 0644); an existing file is replaced only with
``force``, and never an input of the same run.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

from simulator.calibrate.fit import Calibration, check, fit
from simulator.errors import InputError

FIELD_ORDER = ("graph_kernel_s", "eager_kernel_s", "cta_Bps", "hbm_efficiency", "mlp_sharpness", "class_efficiency",
               "class_latency_s", "row_latency_s", "l2_cold_latency_factor", "attention_cta_Bps", "attention_cta_latency_s", "split_kv_latency_s",
               "combine_split_s", "tensor_efficiency", "tensor_sustained_efficiency", "flash_attention_efficiency",
               "power_fraction")
"""Fields in the order parts/kernels.yaml lists them; a name ending in ``_s`` is written in us, one
ending in ``_Bps`` in GB/s (the units its parts loader reads)."""
DIGITS = 4
"""Significant digits written (assumption: CUDA-event timings of graph replays repeat to about 1%,
so rounding to 4 digits stays far below the measurement's own spread)."""


def _num(value: float) -> str:
    return f"{float(f'{value:.{DIGITS}g}'):g}" if abs(value) >= 1e-4 else f"{value:.{DIGITS}g}"


def _value(key: str, value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(key, v)}" for k, v in value.items()) + "}"
    if key.endswith("_s"):
        return f"{_num(value * 1e9)} ns" if 0 < value < 1e-7 else f"{_num(value * 1e6)} us"
    if key.endswith("_Bps"):
        return f"{_num(value / 1e9)} GB/s"
    return _num(value)


def _q(text: Any) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is YAML's)."""
    return json.dumps(str(text))


def render(cal: Calibration, version: str = "", raw: str | None = None, worst: Mapping[str, float] | None = None) -> str:
    """The override file's text."""
    date = cal.date[:10] or "unknown date"
    record = {"gpu": cal.gpu, "part": cal.part, "architecture": cal.architecture, "date": cal.date,
              "tool": f"fabricsim calibrate {version}".strip(), "host": cal.header.get("host", ""),
              "torch": cal.header.get("torch", ""), "cuda": cal.header.get("cuda", "")}
    if cal.header.get("driver"):
        record["driver"] = cal.header["driver"]
    if raw:
        record["raw"] = raw
    lines = [f"# Written by fabricsim calibrate on {date}: {cal.gpu}. Pass it with --parts FILE or list it under a "
             "topology's parts:.",
             "# Only what was measured is here; every other constant of the architecture stays as built in "
             "(parts/kernels.yaml)."]
    if worst:
        lines.append("# Worst error of the fitted model per microbenchmark: "
                     + ", ".join(f"{b} {e * 100:+.1f}%" for b, e in worst.items()) + ".")
    lines.append("calibration: {" + ", ".join(f"{k}: {_q(v)}" for k, v in record.items()) + "}")
    lines += ["kernels:", f"  {cal.architecture}:"]
    keys = [k for k in FIELD_ORDER if k in cal.values] + [k for k in cal.values if k not in FIELD_ORDER]
    for key in keys:
        lines.append(f"    {key}: {_value(key, cal.values[key])}")
    lines.append("    sources:")
    for key in keys:
        lines.append(f"      {key}: {_q(cal.sources[key])}")
    return "\n".join(lines) + "\n"


def write(path: str | Path, text: str, force: bool = False, inputs: Iterable[str | Path] = ()) -> Path:
    """Write ``text`` to ``path`` atomically (mode 0644). Refuses an existing file unless ``force``,
    an input file always, and a folder that does not exist."""
    path = Path(path)
    resolved = path.resolve()
    for item in inputs:
        if Path(item).resolve() == resolved:
            raise InputError("refusing to overwrite an input file", file=str(path))
    if path.exists() and not force:
        raise InputError("file exists; pass --force to replace it", file=str(path))
    if path.exists() and not path.is_file():
        raise InputError("not a regular file", file=str(path))
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"output folder {folder} does not exist", file=str(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def models_from_text(cal: Calibration, text: str) -> tuple[Any, Any]:
    """The part's GpuKernels (graph, eager) with the override ``text`` applied exactly as a file
    passed with ``--parts`` is (``hardware.kernels.apply_overrides``)."""
    from simulator.hardware.catalog import load_catalog
    from simulator.hardware.kernels import GpuKernels, apply_overrides, load_kernel_table
    from simulator.hardware.yamlfile import YamlFile

    fd, tmp = tempfile.mkstemp(prefix="fabricsim-calibration-", suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        table = apply_overrides(load_kernel_table(), YamlFile(Path(tmp)))
    finally:
        Path(tmp).unlink(missing_ok=True)
    spec = load_catalog().device(cal.part).gpu
    arch = table.architecture(cal.architecture)
    return GpuKernels(cal.part, spec, arch, "graph"), GpuKernels(cal.part, spec, arch, "eager")


def calibrate(doc: Mapping[str, Any], source: str = "<run>", version: str = "", raw: str | None = None) -> tuple[Calibration, str]:
    """Fit ``doc``, render the override file, and check every point against the model that file
    gives (rounded as written). Returns the calibration (rows filled in) and the file's text."""
    cal = fit(doc, source=source)
    text = render(cal, version, raw)
    graph, eager = models_from_text(cal, text)
    cal.rows = check(cal, doc, graph, eager)
    worst = {b: r.error for b, r in cal.worst().items() if r.error is not None}
    stream = [r.error for r in cal.rows if r.bench == "stream" and r.error is not None]
    if stream and max(map(abs, stream)) > 0.05:
        cal.notes.append(f"the written stream curve misses a point by {max(map(abs, stream)) * 100:.1f}% (> 5%)")
    return cal, render(cal, version, raw, worst)


__all__ = ["calibrate", "models_from_text", "render", "write"]
