"""Every quantity ``fabricsim bench`` prints or writes has an entry in docs/reference/glossary.md
(issue 27, item 4): each column header of its table and each JSON key of ``--json`` (top level,
row, and the component kinds under ``dynamic_J``) appears there in backticks, spelled as printed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "docs" / "reference" / "glossary.md"
BENCH = ["bench", "hgx_h100", "--sizes", "1M", "--engine", "flow"]

_register()


def _defined() -> set[str]:
    """Every backticked term of the glossary, whitespace collapsed."""
    return {" ".join(t.split()) for t in re.findall(r"`([^`\n]+)`", GLOSSARY.read_text(encoding="utf-8"))}


def _headers(text: str) -> list[str]:
    """Column headers of the first boxed table of ``text``, the lines of a wrapped header joined."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if "┏" in line)
    rule = next(i for i in range(top, len(lines)) if "┡" in lines[i])
    bars = [m.start() for m in re.finditer("┃", lines[top + 1])]
    headers = []
    for left, right in zip(bars, bars[1:]):
        parts = [line[left + 1:right].strip() for line in lines[top + 1:rule]]
        headers.append(" ".join(p for p in parts if p))
    return headers


def _keys(value: object, prefix: str = "") -> set[str]:
    """JSON keys: top level and row keys as they are, keys of a nested mapping as ``parent.key``."""
    keys: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            keys.add(f"{prefix}{key}")
            if isinstance(item, dict) and prefix == "" and key != "nodes":
                keys |= {f"{key}.{k}" for k in item}
            if isinstance(item, list):
                for entry in item:
                    keys |= _keys(entry)
    return keys


@pytest.fixture(scope="module")
def bench_json() -> dict:
    result = CliRunner().invoke(app, [*BENCH, "--json", "-"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_every_json_key_of_bench_has_an_entry(bench_json):
    keys = _keys(bench_json)
    assert {"rows", "busbw_GBps", "dynamic_J.gpu_serdes", "transport_pJ_per_byte"} <= keys  # the walk works
    missing = sorted(keys - _defined())
    assert not missing, f"docs/reference/glossary.md has no entry for the bench --json keys {missing}"


def test_every_column_of_the_bench_table_has_an_entry():
    result = CliRunner().invoke(app, BENCH, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    headers = _headers(result.output)
    assert "busbw (GB/s)" in headers and "algo/proto/ch/engine" in headers, headers
    missing = [h for h in headers if h not in _defined()]
    assert not missing, f"docs/reference/glossary.md has no entry for the bench columns {missing}"


def test_the_link_rate_levels_are_the_catalogs():
    """The NVLink 5 worked example of the glossary is what the parts give."""
    from simulator.hardware.catalog import load_catalog

    gen = load_catalog().links["nvlink5"]
    text = GLOSSARY.read_text(encoding="utf-8")
    line = gen.pairs_per_direction * gen.lane.rate_bps / 8e9
    assert f"= {line:g} GB/s" in text  # line rate: raw signaling x lanes
    assert f"**{gen.line_rate_Bps / 1e9:g} GB/s**" in text  # data rate: after encoding/FEC
    assert f"**{gen.payload_rate_Bps / 1e9:g} GB/s**" in text  # payload rate: after protocol


def test_every_label_of_a_scenario_table_has_an_entry():
    """The metric rows of run/compare (each item kind's variant of a label included), the sweep
    table's columns and the healthy-vs-degraded table's columns."""
    from simulator.reports import fault_compare, scenario_text

    labels = {label for _key, label in scenario_text._METRICS}
    labels |= {scenario_text._label(key, label, kind) for key, label in scenario_text._METRICS
               for kind in ("collective", "decode", "prefill", "kv_transfer", "ring_attention", "chakra", "job")}
    labels |= {"size", "system", "GPUs", "time (us)", "x ref", "x ref (time)", "metric", "figure",
               "total static power (W)", "scenario energy (J)", *scenario_text.DROP_WHEN_NARROW}
    labels |= {"size (B)", "busbw healthy (GB/s)", "busbw degraded (GB/s)", "degraded/healthy",
               "time healthy (us)", "time degraded (us)", "how healthy", "how degraded",
               *fault_compare.TIMED_COLUMNS}
    missing = sorted(labels - _defined())
    assert not missing, f"docs/reference/glossary.md has no entry for the scenario table labels {missing}"
