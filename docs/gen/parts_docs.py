"""Generate docs/reference/parts.md and docs/assumptions.md from the parts catalog.

``parts.md``: every part of ``simulator/hardware/parts/*.yaml`` (and the protocol constants of
``protocols.yaml``), every number with its source, plus the rates each link generation derives
from its lanes. ``assumptions.md``: everything labelled "assumption" — parts fields, protocol
constants, comments in the shipped topology files, and constants in the code whose docstring
says so — in one list, so a reviewer can audit what is guessed.

    python docs/gen/parts_docs.py [--out DIR]
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterator, Mapping

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, attribute_docs, header, rel, run, table  # noqa: E402

SCRIPT = "parts_docs.py"
SECTION_TITLES = {"serdes": "SerDes lanes", "links": "Link generations", "pcie": "PCIe generations",
                  "devices": "Devices", "cables": "Cables and optics", "retimers": "Retimers"}
GB = 1e9


# --- values ----------------------------------------------------------------------------------------

def _num(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() and abs(x) >= 1000 else f"{x:.4g}"


def fmt(field: str, value: Any) -> str:
    """A part's field value with the unit its name implies (names carry units: ``_s``, ``_Bps`` ...)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return str(value)
    if isinstance(value, (tuple, list)):
        return ", ".join(fmt(field, v) for v in value) or "none"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {fmt(field, v) if not isinstance(v, (int, float)) else v}" for k, v in value.items())
    if field.endswith("rate_bps"):
        return f"{value / 1e9:g} Gb/s"
    if field.endswith("_Bps"):
        return f"{value / 1e12:g} TB/s" if value >= 1e12 else f"{value / GB:g} GB/s"
    if field.endswith("_s"):
        return f"{value * 1e9:g} ns" if value < 1e-6 else f"{value * 1e6:g} µs"
    if field.endswith("_W"):
        return f"{_num(value)} W"
    if field.endswith("_dB"):
        return f"{value:g} dB"
    if field == "ns_per_m":
        return f"{value:g} ns/m"
    if field.endswith("_m"):
        return f"{value:g} m"
    if field.endswith("pJ_per_bit"):
        return f"{value:g} pJ/bit"
    if field == "hbm_bytes":
        return f"{value / GB:g} GB"
    if field.endswith("_flops"):
        return f"{value / 1e12:,g} TFLOP/s"
    if field.endswith("_B"):
        return f"{_num(value)} B"
    return _num(value)


def label(source: str) -> str:
    """``assumption``, ``derived`` or ``cited`` by how a source text starts."""
    head = source.strip().lower()
    return "assumption" if head.startswith("assumption") else "derived" if head.startswith("derived") else "cited"


# --- catalog walk ----------------------------------------------------------------------------------

def _shown_fields(part: Any) -> Iterator[tuple[str, Any]]:
    """Fields worth a row: set in the file or sourced, not nested parts, not empty."""
    from simulator.hardware.part import Part

    for name in type(part).model_fields:
        value = getattr(part, name)
        if name in ("sources", "name") or value is None or isinstance(value, Part):
            continue
        if isinstance(value, tuple) and value and isinstance(value[0], Part):
            continue
        if name in part.model_fields_set or name in part.sources:
            yield name, value


def part_rows(part: Any) -> list[list[str]]:
    rows = []
    for name, value in _shown_fields(part):
        source = part.sources.get(name, "")
        rows.append([f"`{name}`", fmt(name, value), source])
    lane = getattr(part, "lane", None)
    if lane is not None:
        rows.insert(0, ["`lane`", lane.name, "SerDes lane class (section above)"])
    return rows


def _nested(part: Any) -> Iterator[tuple[str, Any]]:
    """Nested parts written inside a part (a GPU's ``gpu`` section, a cable's lane classes,
    PCIe credits); the lane of a link is shown in its own section instead."""
    for path, sub in part.walk():
        if path and not path.startswith("lane") and not path.endswith(".lane"):
            yield path, sub


def catalog_sections() -> str:
    from simulator.hardware.catalog import load_catalog

    catalog = load_catalog()
    out, current = [], None
    for section, name, part in catalog.parts():
        if section != current:
            current = section
            out.append(f"## {SECTION_TITLES[section]} (`{rel(catalog.origin[(section, name)])}`)\n\n")
        out.append(f"### `{name}`\n\n")
        out.append(table(["field", "value", "source"], part_rows(part)) + "\n")
        for path, sub in _nested(part):
            title = path
            rate = getattr(sub, "lane_rate_bps", None)
            if rate is not None:
                title = f"{path} ({rate / 1e9:g}G lane class)"
            out.append(f"`{name}.{title}`:\n\n" + table(["field", "value", "source"], part_rows(sub)) + "\n")
    return "".join(out)


def link_rates_table() -> str:
    """Every link generation from lane to payload, per direction and both directions."""
    from simulator.hardware.catalog import load_catalog

    catalog = load_catalog()
    rows = []
    for name, link in catalog.links.items():
        lane = link.lane
        width = f"x{link.pairs_per_direction}" if link.fabric == "pcie" else str(link.pairs_per_direction)
        rows.append([f"`{name}`", f"{lane.name} ({lane.modulation})", width,
                     f"{lane.rate_bps / 1e9:g}", f"{lane.encoding_efficiency:.4f}", f"{lane.data_rate_bps / 1e9:.4g}",
                     f"{link.line_rate_Bps / GB:.4g}", f"{link.bidir_line_rate_Bps / GB:.4g}",
                     f"{link.protocol_efficiency:.4f}", f"{link.payload_rate_Bps / GB:.4g}",
                     f"{link.bidir_payload_rate_Bps / GB:.4g}"])
    return table(["link", "lane", "pairs per direction", "lane line (raw) Gb/s", "coding/FEC eff.",
                  "lane data Gb/s", "data GB/s per direction", "data GB/s both directions",
                  "protocol eff.", "payload GB/s per direction", "payload GB/s both directions"], rows)


def _protocol_rows(raw: dict) -> Iterator[tuple[str, str, str]]:
    """(constant, value, source) of every number in protocols.yaml."""
    for name, spec in raw["protocols"].items():
        yield f"protocols.{name}.efficiency", f"{spec['efficiency']:g}", spec["source"]
    for algo, spec in raw["base_latency_us"].items():
        yield f"base_latency_us.{algo}", _triple(spec["values"]), spec["source"]
    for kind, algos in raw["hop_latency_us"].items():
        for algo, spec in algos.items():
            yield f"hop_latency_us.{kind}.{algo}", _triple(spec["values"]), spec["source"]
    for arch, spec in raw["nvls_efficiency"].items():
        yield f"nvls_efficiency.{arch}", f"{spec['value']:g}", spec["source"]


def _triple(values: list[float]) -> str:
    return " / ".join(f"{v:g}" for v in values) + " µs"


def _protocols_raw() -> tuple[Path, dict]:
    from simulator.hardware import protocols

    path = Path(protocols._PARTS)
    return path, yaml.safe_load(path.read_text(encoding="utf-8"))


def protocols_section() -> str:
    path, raw = _protocols_raw()
    text = (f"## NCCL-like protocol constants (`{rel(path)}`)\n\n"
            "Latencies are listed as LL / LL128 / Simple; they depend on the algorithm, the protocol and "
            "the kind of link a step crosses, never on a particular topology "
            "(`simulator/hardware/protocols.py`).\n\n")
    text += table(["constant", "value", "source"], _protocol_rows(raw)) + "\n"
    text += "Protocols each algorithm may run: " + "; ".join(
        f"{a}: {', '.join(p)}" for a, p in raw["supported"].items()) + ".\n\n"
    text += "GPU architecture of each NVLink generation (selects the NVLS efficiency): " + ", ".join(
        f"{k} -> {v}" for k, v in raw["architecture_of_link"].items()) + ".\n"
    return text


def _gpu_side_rows() -> Iterator[tuple[str, str, str]]:
    """(constant, value, source) of every number in gpu_side.yaml."""
    from simulator.hardware.nccl_gpu import load_gpu_side

    table = load_gpu_side()
    yield from _sourced_rows((("library", table.library),
                              *((f"architectures.{a}", s) for a, s in table.architectures.items())))


def _sourced_rows(parts) -> Iterator[tuple[str, str, str]]:  # noqa: ANN001 - (prefix, Part) pairs
    """(prefix.field, value, source) of every sourced field of each (prefix, part)."""
    for prefix, part in parts:
        for fname, source in part.sources.items():
            yield f"{prefix}.{fname}", fmt(fname, getattr(part, fname)), source


def gpu_side_section() -> str:
    from simulator.hardware.nccl_gpu import PARTS_FILE

    text = (f"## The GPU side of a collective (`{rel(PARTS_FILE)}`)\n\n"
            "Per-CTA copy/reduce rates, channel counts, launch and flag latencies per GPU architecture, "
            "and NCCL's library constants (FIFO slots, chunk and slice steps, channel thresholds) "
            "(`simulator/hardware/nccl_gpu.py`, used by `simulator/workloads/collectives/gpu_side.py`).\n\n")
    return text + table(["constant", "value", "source"], _gpu_side_rows()) + "\n"


def _kernel_rows() -> Iterator[tuple[str, str, str]]:
    """(constant, value, source) of every number in kernels.yaml."""
    from simulator.hardware.kernels import load_kernel_table

    yield from _sourced_rows(load_kernel_table().architectures.items())


def kernels_section() -> str:
    text = ("## What a GPU kernel costs (`simulator/hardware/parts/kernels.yaml`)\n\n"
            "Per GPU architecture: fixed cost per kernel (CUDA graph, eager), memory-level parallelism per CTA and "
            "HBM saturation, kernel classes, GEMM tiles and the power-capped tensor rate, FlashAttention's "
            "efficiency, board power by state (`simulator/hardware/kernels.py`, asked by attention, the "
            "transformer layer and Chakra COMP nodes; `fabricsim calibrate` writes overrides, "
            "[../model.md](../model.md) section 10).\n\n")
    return text + table(["constant", "value", "source"], _kernel_rows()) + "\n"


def _retry_rows() -> Iterator[tuple[str, str, str]]:
    """(constant, value, source) of every number in retry.yaml."""
    from simulator.hardware.retry import retry_parts

    yield from _sourced_rows(retry_parts().items())


def retry_section() -> str:
    text = ("## Link-level retry (`simulator/hardware/parts/retry.yaml`)\n\n"
            "Packet size, replay buffer and ACK turnaround per interconnect kind: the go-back-N closed form of "
            "`simulator/hardware/retry.py` turns a `ber` fault into an effective payload rate "
            "([../faults.md](../faults.md)).\n\n")
    return text + table(["constant", "value", "source"], _retry_rows()) + "\n"


def parts_page() -> str:
    counts = Counter(label(s) for _, _, s in all_sourced())
    text = header(SCRIPT, "parts files in simulator/hardware/parts/")
    text += "# Parts catalog reference\n\n"
    text += ("Every physical figure the simulator uses comes from a parts file in `simulator/hardware/parts/`; "
             "topologies name parts, never numbers (except cable lengths and optional buffer overrides). "
             "Each number carries a source: a citation (whitepaper section, spec clause, NCCL file), "
             "`derived:` (arithmetic on cited numbers) or `assumption:` (unpublished, with the reasoning). "
             "A part with an unsourced number does not load (`simulator/hardware/part.py`). "
             f"Today: {counts['cited']} cited, {counts['derived']} derived and {counts['assumption']} "
             "assumption-labelled figures; the assumptions are listed together in "
             "[../assumptions.md](../assumptions.md). A topology may add parts with its own files "
             "(`parts:` key, see [topology.md](topology.md)); redefining a built-in name is an error.\n\n")
    text += ("## Link rates at a glance\n\nDerived from the parts below (`simulator/hardware/links.py`): "
             "a lane's line rate is its raw signaling rate; data rate per direction = pairs per direction x "
             "lane line rate x coding/FEC efficiency / 8 (what `fabricsim describe` prints; `line_rate_Bps` "
             "in the code); payload = data rate x protocol efficiency (what the engines and labs run at). "
             "Both-directions columns are exactly twice the per-direction ones. GB = 10^9 B. PCIe rows are "
             "x16 at the default max payload size. Each level is defined in the "
             "[glossary](glossary.md#rates-of-a-link).\n\n")
    text += link_rates_table() + "\n"
    text += catalog_sections()
    text += protocols_section()
    text += "\n" + gpu_side_section()
    text += "\n" + retry_section()
    text += "\n" + kernels_section()
    return text


# --- assumptions -----------------------------------------------------------------------------------

def all_sourced() -> Iterator[tuple[str, str, str]]:
    """(where, value, source text) of every sourced number in the catalog and protocol constants."""
    from simulator.hardware.catalog import load_catalog

    catalog = load_catalog()
    for section, name, part in catalog.parts():
        for path, sub in part.walk():
            if section in ("links", "pcie") and path == "lane":
                continue
            for fname, source in sub.sources.items():
                where = ".".join(p for p in (section, name, path, fname) if p)
                value = getattr(sub, fname, None)
                yield where, fmt(fname, value) if value is not None else "", source
    _, raw = _protocols_raw()
    for where, value, source in _protocol_rows(raw):
        yield f"protocols.{where}", value, source
    for where, value, source in _gpu_side_rows():
        yield f"gpu_side.{where}", value, source
    for where, value, source in _retry_rows():
        yield f"retry.{where}", value, source
    for where, value, source in _kernel_rows():
        yield f"kernels.{where}", value, source


def topology_assumptions() -> list[list[str]]:
    """Sentences of the shipped topology files' comments that say "assumption", with file:line.

    A trailing comment is shown with the YAML it annotates; a comment block is cut into sentences.
    """
    rows = []
    for path in sorted((ROOT / "topologies").glob("*.yaml")):
        block: list[tuple[int, str]] = []
        lines = path.read_text(encoding="utf-8").splitlines() + [""]
        for i, line in enumerate(lines, 1):
            code, _, comment = line.partition("#")
            if comment and code.strip():
                if ASSUMPTION.search(comment):
                    rows.append([f"`{rel(path)}:{i}`", f"`{code.strip()}`: {comment.strip()}"])
            elif comment and not code.strip():
                block.append((i, comment.strip()))
                continue
            rows += _block_assumptions(path, block)
            block = []
    return rows


def _block_assumptions(path: Path, block: list[tuple[int, str]]) -> list[list[str]]:
    text = " ".join(t for _, t in block)
    out = []
    for sentence in re.split(r"(?<=\.)\s+", text):
        if ASSUMPTION.search(sentence):
            line = next((i for i, t in block if ASSUMPTION.search(t)), block[0][0])
            out.append([f"`{rel(path)}:{line}`", sentence])
    return out


ASSUMPTION = re.compile(r"(?<!`)\bassumption\b", re.IGNORECASE)
"""The word as a label (not quoted as code, as in a docstring that explains the labels)."""


def code_assumptions() -> list[list[str]]:
    """Module- and class-level constants in ``simulator/`` whose docstring says "assumption"."""
    import ast
    import importlib

    rows = []
    for path in sorted((ROOT / "simulator").rglob("*.py")):
        module_name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if "assumption" not in path.read_text(encoding="utf-8").lower():
            continue
        module = importlib.import_module(module_name)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bodies = [("", tree.body)] + [(f"{n.name}.", n.body) for n in tree.body if isinstance(n, ast.ClassDef)]
        for prefix, body in bodies:
            for name, (_, doc) in attribute_docs(module, body).items():
                if ASSUMPTION.search(doc):
                    rows.append([f"`{prefix}{name}`", f"`{rel(path)}`", doc])
    return rows


def assumptions_page() -> str:
    rows = [[f"`{where}`", value, source] for where, value, source in all_sourced() if label(source) == "assumption"]
    topo, code = topology_assumptions(), code_assumptions()
    text = header(SCRIPT, "sources in simulator/hardware/parts/, topologies/ and simulator/")
    text += "# Assumptions\n\n"
    text += (f"Everything the simulator uses that no public source gives: {len(rows)} parts figures, "
             f"{len(topo)} topology choices and {len(code)} modelling constants in the code. Everything else is "
             "cited or derived; see [reference/parts.md](reference/parts.md) for every figure with its source. "
             "Where the results are sensitive to one of these, [model.md](model.md) says so. To change one, "
             "edit the parts file (keep the `assumption:` label and the reasoning) or override it in a "
             "topology (`credit_buffer:`, cable `length:`), then rerun `python docs/gen/parts_docs.py`.\n\n")
    text += "## Parts and protocol constants\n\n"
    text += table(["figure", "value", "reasoning"], rows) + "\n"
    text += "## Choices in the shipped topology files\n\n"
    text += table(["where", "assumption"], topo) + "\n"
    text += "## Modelling constants in the code\n\n"
    text += table(["constant", "file", "docstring"], code)
    return text


def render() -> dict[str, str]:
    return {"docs/reference/parts.md": parts_page(), "docs/assumptions.md": assumptions_page()}


def main(argv: list[str] | None = None) -> None:
    run(render, argv, __doc__ or "")


if __name__ == "__main__":
    main()
