"""``calibrate`` as one request -> outcome path: measure this machine's GPU (PyTorch with CUDA) or
read a recorded run, fit the kernel model's constants (``calibrate.fit``) and write them as a parts
override file. ``fabricsim calibrate`` and ``simulator.api.calibrate`` build the same
:class:`CalibrateRequest` and get the same :class:`CalibrateOutcome` (its ``to_dict()`` is the
command's ``--json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.calibrate.fit import Calibration, check_document, gpu_part
from simulator.calibrate.write import calibrate as fit_and_check
from simulator.calibrate.write import write
from simulator.errors import InputError
from simulator.version import __version__


class NoGpu(InputError):
    """This machine cannot measure (no PyTorch with CUDA): the reason, exit 2."""


@dataclass(frozen=True, slots=True)
class CalibrateRequest:
    """What ``calibrate`` is asked; every field has the meaning of the flag of that name."""

    output: str | None = None
    """The override file to write; None: ``calibration-<gpu part>.yaml`` here."""
    from_json: str | None = None
    """Fit a recorded run (microbench JSON) instead of measuring; needs no GPU."""
    raw_out: str | None = None
    """Also keep the raw microbenchmark results (JSON) here."""
    force: bool = False
    """Replace existing output files."""
    quiet_stdout: bool = False
    """The measuring progress goes to standard error (``--json -`` holds standard output)."""


@dataclass(frozen=True)
class CalibrateOutcome:
    """The fit (``calibration``: values, every point against the model, notes) and the file written."""

    calibration: Calibration
    file: str
    inputs: tuple[str, ...] = ()
    """The files the fit read or wrote (outputs of the command may not overwrite them)."""

    def to_dict(self) -> dict:
        """The ``--json`` document of ``fabricsim calibrate``."""
        return {**self.calibration.as_dict(), "file": str(self.file)}


def read_run(path: str) -> dict[str, Any]:
    """A recorded microbench run (JSON); errors name the file (and line, for bad JSON)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot read the run: {err.strerror or err}", file=path) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"broken JSON: {err.msg}", file=path, line=err.lineno) from None
    check_document(doc, path)
    return doc


def run_calibrate(request: CalibrateRequest) -> CalibrateOutcome:
    """Check the outputs, measure (or read the recorded run), fit, write the override file."""
    for path in (request.output, request.raw_out):
        if path and Path(path).exists() and not request.force:
            raise InputError("file exists; pass --force to replace it", file=path)
    if request.from_json:
        doc, source = read_run(request.from_json), request.from_json
    else:
        from simulator.calibrate import microbench  # torch, imported only to measure

        why = microbench.available()
        if why:
            raise NoGpu(why)
        import torch

        gpu_part(torch.cuda.get_device_name(0))  # an unknown GPU fails before a minute of measuring
        if request.raw_out:
            folder = Path(request.raw_out).parent
            if str(folder) and not folder.is_dir():
                raise InputError(f"output folder {folder} does not exist", file=request.raw_out)
        doc, source = microbench.run_all(None, stderr=request.quiet_stdout), "<this run>"
        if request.raw_out:
            write(request.raw_out, json.dumps(doc, indent=1) + "\n", force=request.force)
    shown = request.raw_out or request.from_json
    cal, text = fit_and_check(doc, source=source, version=__version__, raw=Path(shown).name if shown else None)
    target = request.output or f"calibration-{cal.part}.yaml"
    read = tuple(p for p in (request.from_json, request.raw_out) if p)
    write(target, text, force=request.force, inputs=list(read))
    return CalibrateOutcome(calibration=cal, file=target, inputs=(*read, target))
