"""Build hook: the wheel ships the top-level ``topologies/``, ``scenarios/`` and ``validation/``
folders as ``simulator/data/<kind>/``, where ``simulator/shipped.py`` looks first, so shipped names
work from an installed wheel as from a checkout, with one copy of each file in git.

Used by setuptools as ``[tool.setuptools.cmdclass] build_py`` (pyproject.toml); the folders reach
an sdist through MANIFEST.in. An editable install reads the checkout itself and copies nothing.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def shipped_kinds() -> tuple[str, ...]:
    """``simulator.shipped.KINDS``, read from its file (the build must not import the package,
    whose dependencies the build environment lacks)."""
    spec = importlib.util.spec_from_file_location("_fabricsim_shipped", ROOT / "simulator" / "shipped.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.KINDS)


class BuildPy(build_py):
    """``build_py`` that also copies the shipped data folders into ``simulator/data/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for kind in shipped_kinds():
            source = ROOT / kind
            if source.is_dir():
                target = Path(self.build_lib) / "simulator" / "data" / kind
                shutil.copytree(source, target, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.py[cod]", ".*"))
