"""An installed wheel ships the topologies, scenarios and validation data (issue 10, point 6).

Builds the wheel, unpacks it outside the checkout and runs ``describe gb200_nvl72`` and
``validate`` from another directory with only the wheel's copy of ``simulator`` importable.

Building needs a build backend: without network (``--no-build-isolation``) when the installed
setuptools can make wheels (setuptools >= 70.1, or ``wheel`` installed); else pip fetches it into
an isolated build environment, which this test does only when ``FABRICSIM_WHEEL_BUILD=isolated``
(set by ``.ci/run``, which reaches a package index anyway). Otherwise the test is skipped.
"""

import importlib.util
import os
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("topologies", "scenarios", "validation")


def _build_flags() -> list[str] | None:
    """pip flags that can build the wheel here, or None (skip)."""
    if os.environ.get("FABRICSIM_WHEEL_BUILD") == "isolated":
        return []
    try:
        major_minor = tuple(int(x) for x in version("setuptools").split(".")[:2])
    except Exception:  # noqa: BLE001 - no setuptools at all
        return None
    if major_minor >= (70, 1) or (major_minor >= (61, 0) and importlib.util.find_spec("wheel")):
        return ["--no-build-isolation", "--no-index"]
    return None


FLAGS = _build_flags()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The built wheel unpacked into a folder of its own."""
    if FLAGS is None:
        pytest.skip("no network-free wheel build here (needs setuptools>=70.1 or wheel); "
                    "FABRICSIM_WHEEL_BUILD=isolated lets pip fetch a build backend")
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out), *FLAGS],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("fabricsim-*.whl")
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    return site


def _run(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "80"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_wheel_holds_every_shipped_file(site):
    for kind in KINDS:
        in_git = {p.relative_to(ROOT / kind) for p in (ROOT / kind).rglob("*") if p.is_file()
                  and "__pycache__" not in p.parts}
        shipped = {p.relative_to(site / "simulator" / "data" / kind)
                   for p in (site / "simulator" / "data" / kind).rglob("*") if p.is_file()}
        assert shipped == in_git, kind


def test_installed_wheel_describes_and_validates_from_anywhere(site, tmp_path):
    where = _run(site, tmp_path, "-c", "import simulator; print(simulator.__file__)")
    assert where.stdout.strip() == str(site / "simulator" / "__init__.py"), where.stderr
    described = _run(site, tmp_path, "-m", "simulator", "describe", "gb200_nvl72")
    assert described.returncode == 0, described.stderr
    assert described.stdout.startswith("GB200 NVL72: 72 GPUs")
    validated = _run(site, tmp_path, "-m", "simulator", "validate", "--threshold", "1000")
    assert validated.returncode == 0, validated.stderr
    assert "within 1000%" in validated.stdout and "Traceback" not in validated.stderr
    listed = _run(site, tmp_path, "-m", "simulator", "list")
    assert listed.returncode == 0 and "nvl72_vs_hopper" in listed.stdout, listed.stderr
