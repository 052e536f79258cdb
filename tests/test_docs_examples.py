"""Hand-written docs stay true: examples load and build, links and cited files exist, quoted
figures match the catalog, README images exist and stay small."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
MAX_PNG_BYTES = 400_000


def _yaml_blocks(page: Path) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_and_anchors_resolve(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name}: link to missing {target}"
        if anchor and file.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.MULTILINE)
            assert anchor in {_slug(h) for h in headings}, f"{page.name}: no heading for #{anchor} in {file.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_cited_repository_files_exist(page):
    text = page.read_text(encoding="utf-8")
    cited = set(re.findall(r"`((?:simulator|tests|scripts|topologies|scenarios|validation|docs)/[\w./-]+)`", text))
    missing = [c for c in cited if not (ROOT / c.rstrip("/")).exists() and "*" not in c]
    assert not missing, f"{page.name} cites files that do not exist: {missing}"


def _write_examples(tmp_path: Path) -> dict[str, Path]:
    """The YAML examples of docs/index.md written as files, shipped paths made absolute."""
    files = {}
    for i, block in enumerate(_yaml_blocks(DOCS / "index.md")):
        data = yaml.safe_load(block)
        text = block.replace("extends: gb200_nvl72.yaml", f"extends: {ROOT / 'topologies' / 'gb200_nvl72.yaml'}")
        text = text.replace("../topologies/", f"{ROOT / 'topologies'}/")
        name = "my_parts.yaml" if "devices" in data and "name" not in data else f"example{i}.yaml"
        (tmp_path / name).write_text(text, encoding="utf-8")
        files[name if name == "my_parts.yaml" else data["name"]] = tmp_path / name
    return files


def test_index_examples_load_and_build(tmp_path):
    from simulator.topology.builder import build_fabric
    from simulator.workloads.scenario import load_scenario

    files = _write_examples(tmp_path)
    assert "my_parts.yaml" in files
    built = {}
    for name, path in files.items():
        if name == "my_parts.yaml":
            continue
        if "workloads" in yaml.safe_load(path.read_text(encoding="utf-8")):
            load_scenario(path)
        else:
            built[name] = build_fabric(path)
    board = built["Four H100 on two NVSwitch chips"]
    assert len(board.gpus) == 4 and board.n_links == 4 * 2 * 9
    per_gpu = sum(ch.line_rate_Bps for ch in board.out_channels(board.gpus[0]))
    assert per_gpu == pytest.approx(450e9)  # "450 GB/s per GPU per direction"
    low_power = built["GB200 NVL72 (low-power switch what-if)"]
    assert low_power.static_power_W["switch_chip"] == pytest.approx(3600)  # 18 x 200 W
    buffers = {ch.credit.buffer_bytes for ch in built["GB200 NVL72, 4 KiB spine buffers"].channels}
    assert buffers == {4096}


def test_model_page_quotes_the_catalog_rates():
    from simulator.hardware.catalog import load_catalog

    links = load_catalog().links
    quoted = [float(x) for x in re.findall(r"\*\*([\d.]+) GB/s\*\*", (DOCS / "model.md").read_text(encoding="utf-8"))]
    expected = [links[n].line_rate_Bps / 1e9 for n in ("nvlink3", "nvlink4", "nvlink5", "pcie5", "ib_ndr")]
    assert quoted == pytest.approx(expected, abs=0.05)


def test_model_page_optical_spine_arithmetic_matches_the_built_rack():
    from simulator.topology.builder import build_fabric

    optical = build_fabric(ROOT / "topologies" / "gb200_nvl72_optical.yaml")
    text = (DOCS / "model.md").read_text(encoding="utf-8")
    assert f"= {optical.static_power_W['optics']:,.0f} W of transceivers" in text
    assert f"{optical.n_links:,} spine links" in text


def test_readme_figures_exist_and_stay_small():
    images = re.findall(r"!\[[^\]]*\]\((docs/img/[\w.]+)\)", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(images) >= 6
    for image in images:
        data = (ROOT / image).read_bytes()
        assert data.startswith(b"\x89PNG") and 10_000 < len(data) < MAX_PNG_BYTES, image
