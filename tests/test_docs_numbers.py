"""Figures the docs quote from a command are what the command gives (issue 27, item 9)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("buffer,quoted", [("32 KiB", 280), ("4 KiB", 167), ("2 KiB", 100)])
def test_the_credit_buffer_how_to_quotes_what_the_run_gives(tmp_path, buffer, quoted):
    text = (ROOT / "docs" / "index.md").read_text()
    assert f"~{quoted}" in text  # docs/index.md, "Sweep buffer depth"
    topo = tmp_path / "nvl72.yaml"
    topo.write_text(f"extends: {ROOT / 'topologies' / 'gb200_nvl72.yaml'}\nname: t\nlinks:\n  - name: spine\n"
                    f"    credit_buffer: {buffer}\n")
    out = subprocess.run([sys.executable, "-m", "simulator", "bench", str(topo), "--gpus", "8", "--algo", "ring",
                          "--sizes", "16M", "--engine", "packet", "--packet-bytes", "1024", "--json", "-"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    busbw = float(re.search(r'"busbw_GBps":\s*([0-9.]+)', out.stdout).group(1))
    assert busbw == pytest.approx(quoted, rel=0.02)
