"""Generated reference pages are current, complete and consistent with the catalog's physics.

The pages under docs/reference/ and docs/assumptions.md are written by docs/gen/*.py; committing a
schema or parts change without rerunning the generator makes these tests fail with the command
that fixes it.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GENERATORS = ("schema_docs", "parts_docs")


def _generator(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_gen_{name}", ROOT / "docs" / "gen" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=GENERATORS)
def generated(request, tmp_path_factory):
    """(generator name, module, folder it regenerated its pages into)."""
    module = _generator(request.param)
    out = tmp_path_factory.mktemp(request.param)
    module.main(["--out", str(out)])
    return request.param, module, out


def test_committed_pages_are_current(generated):
    name, module, out = generated
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.md"))
    assert pages, f"{name} wrote nothing"
    for page in pages:
        committed = ROOT / page
        assert committed.is_file(), f"{page} is not committed; run python docs/gen/{name}.py"
        assert committed.read_text(encoding="utf-8") == (out / page).read_text(encoding="utf-8"), (
            f"{page} is stale; run python docs/gen/{name}.py and commit it")


def test_every_schema_field_has_a_meaning():
    schema_docs = _generator("schema_docs")
    from simulator.topology.schema import TopologyModel
    from simulator.workloads.scenario import ScenarioModel

    for root in (TopologyModel, ScenarioModel):
        for model in schema_docs.model_tree(root):
            for key, _type, _default, _constraints, meaning in schema_docs.field_rows(model):
                assert meaning.strip(), f"{model.__name__}.{key} has no docstring in the schema"


def _link_rows(text: str) -> dict[str, list[str]]:
    section = text.split("## Link rates at a glance", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `"):
            rows[cells[0].strip("`")] = cells
    return rows


def test_link_table_states_per_direction_and_bidirectional_rates_consistently():
    from simulator.hardware.catalog import load_catalog

    rows = _link_rows((ROOT / "docs" / "reference" / "parts.md").read_text(encoding="utf-8"))
    catalog = load_catalog()
    assert set(rows) == set(catalog.links)
    for name, cells in rows.items():
        pairs = int(cells[2].lstrip("x"))
        raw, coding, line, bidir = float(cells[3]), float(cells[4]), float(cells[6]), float(cells[7])
        eff, payload, payload_bidir = float(cells[8]), float(cells[9]), float(cells[10])
        assert line == pytest.approx(pairs * raw * coding / 8, rel=2e-3), name
        assert bidir == pytest.approx(2 * line, rel=2e-3), name
        assert payload == pytest.approx(line * eff, rel=2e-3), name
        assert payload_bidir == pytest.approx(2 * payload, rel=2e-3), name
    # the figures every NVLink text quotes: 25 / 25 / 50 GB/s per direction per link
    assert [float(rows[n][6]) for n in ("nvlink3", "nvlink4", "nvlink5")] == [25, 25, 50]


def test_assumptions_page_lists_every_assumption_label_once():
    parts_docs = _generator("parts_docs")
    page = (ROOT / "docs" / "assumptions.md").read_text(encoding="utf-8")
    labelled = [where for where, _value, source in parts_docs.all_sourced()
                if source.strip().lower().startswith("assumption")]
    assert len(labelled) > 50
    for where in labelled:
        assert page.count(f"| `{where}` |") == 1, where
    cited = [where for where, _value, source in parts_docs.all_sourced()
             if not source.strip().lower().startswith("assumption")]
    assert not [w for w in cited if f"| `{w}` |" in page], "a cited figure is listed as an assumption"


def test_topology_example_counts_come_from_the_built_fabric():
    page = (ROOT / "docs" / "reference" / "topology.md").read_text(encoding="utf-8")
    assert "| physical links | nvlink5 (copper_passive): 1,296 |" in page  # 72 GPUs x 18 chips
    assert "| channels (one per link direction) | 2,592 |" in page
    optical = re.search(r"optics ([\d,]+) W", page)
    assert optical and 15_000 < int(optical.group(1).replace(",", "")) < 25_000  # "about 20 kW"
