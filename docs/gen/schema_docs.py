"""Generate docs/reference/topology.md, scenario.md and serving.md from the pydantic schemas.

Field names (YAML spelling), types, defaults, constraints and descriptions are read from the
models themselves (``simulator/topology/schema.py``, ``simulator/workloads/scenario.py``); the
descriptions are the attribute docstrings under each field. The worked examples are the shipped
NVL72 files, loaded and built while generating, so an example that stops validating fails here.

    python docs/gen/schema_docs.py [--out DIR]
"""

from __future__ import annotations

import ast
import sys
import types
import typing
from collections import Counter
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import annotated_types as at
import yaml
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (ROOT, class_attribute_docs, attribute_docs, docstring_as_markdown, header,  # noqa: E402
                     module_doc, run, table)

from simulator.hardware.protocols import PROTOCOL_NAMES  # noqa: E402
from simulator.workloads.collectives import algorithm_help  # noqa: E402

SCRIPT = "schema_docs.py"


# --- types, constraints, defaults ------------------------------------------------------------------

class _StripAnnotated(ast.NodeTransformer):
    """``Annotated[X, ...]`` -> ``X`` in an annotation's source (metadata is shown as constraints)."""

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "Annotated" and isinstance(node.slice, ast.Tuple):
            return node.slice.elts[0]
        return node


def _literal_choices(annotation: Any) -> list[Any] | None:
    """The choices of a ``Literal`` (or ``Literal | None``) annotation, else None."""
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    if get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in get_args(annotation):
            if get_origin(arg) is Literal:
                return list(get_args(arg))
    return None


def _choices_text(annotation: Any) -> str:
    """``Literal`` choices as code, other union members by name: `a` | `b` | int."""
    if get_origin(annotation) is Literal:
        return " | ".join(f"`{c}`" for c in get_args(annotation))
    parts = []
    for arg in get_args(annotation):
        parts.append(_choices_text(arg) if get_origin(arg) is Literal else
                     "none" if arg is type(None) else f"`{getattr(arg, '__name__', arg)}`")
    return " | ".join(parts)


def type_text(source: str, annotation: Any) -> str:
    """Readable type: the annotation as written with ``Annotated`` stripped; Literals as choices."""
    if _literal_choices(annotation) is not None:
        return _choices_text(annotation)
    if not source:
        return getattr(annotation, "__name__", str(annotation))
    tree = _StripAnnotated().visit(ast.parse(source, mode="eval"))
    return f"`{ast.unparse(tree)}`"


_BOUNDS = ((at.Ge, "ge", "≥ {}"), (at.Gt, "gt", "> {}"), (at.Le, "le", "≤ {}"), (at.Lt, "lt", "< {}"))


def constraints(info: Any) -> str:
    """Constraints pydantic enforces on the field (bounds, minimum length, name pattern)."""
    out = []
    for item in info.metadata:
        for kind, attr, fmt in _BOUNDS:
            if isinstance(item, kind):
                out.append(fmt.format(getattr(item, attr)))
        if isinstance(item, at.MinLen):
            out.append(f"at least {item.min_length} item(s)" if item.min_length > 1 or "list" in str(info.annotation)
                       else "not empty")
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            out.append(f"matches `{pattern}`")
    return ", ".join(out)


def default_text(info: Any) -> str:
    """The default as YAML, ``required`` when there is none."""
    if info.is_required():
        return "**required**"
    value = info.default_factory() if info.default is PydanticUndefined else info.default
    if value is None:
        return "omitted"
    if isinstance(value, BaseModel):
        value = value.model_dump()
    return f"`{yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix('...').strip()}`"


FALLBACK: dict[tuple[str, str], str] = {
    # Meanings of schema fields that carry no docstring yet; a docstring in the schema wins.
    ("TopologyModel", "name"): "System name shown in reports and plots.",
    ("TopologyModel", "description"): "One line for `fabricsim describe` and reports.",
    ("TopologyModel", "enclosures"): "Servers and trays, each with its own devices and internal links.",
    ("TopologyModel", "devices"): "Devices outside any enclosure (network switches).",
    ("TopologyModel", "links"): "Links between enclosures or top-level devices; selectors see full names "
                                "such as `compute3.gpu1`.",
    ("EnclosureSpec", "name"): "Enclosure name; instances are `<name><i>` when `count` is given.",
    ("EnclosureSpec", "count"): "Number of identical instances; omitted: one, named `<name>`.",
    ("EnclosureSpec", "devices"): "Devices inside each instance.",
    ("EnclosureSpec", "links"): "Links inside each instance; selectors see local names (`gpu*`).",
    ("DeviceSpec", "name"): "Device name; `<name><i>` for i in 0..count-1 when `count` is given.",
    ("DeviceSpec", "part"): "Catalog device: `a100`, `h100`, `h200`, `b200`, `gb200`, `nvswitch2/3/4`, "
                            "`ib_switch_ndr`, `cx7`, `pcie5_switch`, `host_cpu` (see parts.md).",
    ("DeviceSpec", "count"): "Number of devices; omitted: one, named `<name>`.",
    ("LinkSpec", "from_"): "Glob(s) selecting one end of each link, e.g. `compute*.gpu*`.",
    ("LinkSpec", "to"): "Glob(s) selecting the other end.",
    ("LinkSpec", "pattern"): "How the two selections pair up (see above).",
    ("LinkSpec", "cable"): "Cable kind and length (checked against reach at the lane rate).",
    ("", "Name"): "A device or enclosure name: a letter or _ then letters, digits, _ or -.",
    ("ScenarioModel", "name"): "Scenario title shown in the output.",
    ("ScenarioModel", "description"): "Free text shown under the title.",
    ("ScenarioModel", "engine"): "`packet`, `flow`, or `auto` (packet while the run is small, flow beyond; "
                                 "see `simulator/engine/dispatch.py`).",
    ("ScenarioModel", "seed"): "Seed of each run's random generator: same seed, same result.",
    ("ScenarioModel", "packet_bytes"): "Packet engine transfer unit (payload bytes per packet); "
                                       "default 4096.",
    ("ScenarioModel", "workloads"): "Workload items, each selected by its `kind` (below).",
    ("CollectiveItem", "name"): "Row label in the output.",
    ("CollectiveItem", "op"): "Collective operation (nccl-tests size convention: see model.md).",
    ("CollectiveItem", "sizes"): ("`1K:8G` (doubling), a list `1M,64M`, or one size; 1K = 1k = 1024 B as in "
                                  "nccl-tests, `1 MiB` = 2^20 B, `1MB` = 10^6 B."),
    ("CollectiveItem", "algo"): "`auto` (the tuner picks) or one of the algorithms' records "
                                "(`simulator/workloads/collectives/registry.py`): "
                                + "; ".join(f"`{line.split(': ', 1)[0]}`: {line.split(': ', 1)[1]}"
                                            for line in algorithm_help(details=True).splitlines()) + ".",
    ("CollectiveItem", "protocol"): ", ".join(f"`{p}`" for p in PROTOCOL_NAMES) + " or `auto` (tuner picks).",
    ("CopyItem", "name"): "Row label in the output.",
    ("CopyItem", "op"): "`h2d` / `d2h`: GPU to/from its nearest host over PCIe; `p2p`: GPU to GPU.",
    ("CopyItem", "gpus"): "Number of GPUs copying at once (first N ranks).",
    ("CopyItem", "sizes"): "Sizes as for collectives.",
    ("_ModelItem", "name"): "Row label in the output.",
    ("_ModelItem", "model"): "Transformer shape (below).",
    ("_ModelItem", "batch"): "Sequences in the batch.",
    ("_ModelItem", "context"): "Context length in tokens.",
    ("DecodeItem", "tp"): "Tensor-parallel degree: the first `tp` GPUs.",
    ("DecodeItem", "flash_decoding"): "Split the KV sequence over SMs (Flash-Decoding); false: plain "
                                      "FlashAttention, one thread block per (batch, head).",
    ("PrefillItem", "tp"): "Tensor-parallel degree: the first `tp` GPUs.",
    ("KvTransferItem", "block_tokens"): "Tokens per KV block (vLLM PagedAttention default 16).",
    ("RingAttentionItem", "gpus"): "GPUs in the ring (first N ranks).",
    ("ModelSpec", "layers"): "Transformer layers.",
    ("ModelSpec", "hidden"): "Hidden size.",
    ("ModelSpec", "heads"): "Attention (query) heads.",
    ("ModelSpec", "kv_heads"): "Key/value heads (GQA).",
    ("ModelSpec", "head_dim"): "Dimension of one head.",
    ("ModelSpec", "ffn_hidden"): "MLP intermediate size (0: no MLP modelled).",
    ("ModelSpec", "dtype"): "Element type of weights, activations and KV cache.",
}
"""(model class, field) -> meaning, used only while the schema has no attribute docstring for it."""


# --- models ----------------------------------------------------------------------------------------

def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """Pydantic models mentioned anywhere inside an annotation, in order."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in get_args(annotation):
        found += [m for m in _models_in(arg) if m not in found]
    return found


def model_tree(root: type[BaseModel]) -> list[type[BaseModel]]:
    """``root`` and every model reachable from its fields, breadth first."""
    order, queue = [], [root]
    while queue:
        model = queue.pop(0)
        if model in order:
            continue
        order.append(model)
        for info in model.model_fields.values():
            queue += [m for m in _models_in(info.annotation) if m not in order]
    return order


def field_rows(model: type[BaseModel]) -> list[list[str]]:
    """One row per field: YAML key, type, default, constraints, description."""
    docs = class_attribute_docs(model)
    rows = []
    names = sorted(model.model_fields, key=lambda n: n != "kind")  # the discriminator first
    for name in names:
        info = model.model_fields[name]
        source, doc = docs.get(name, ("", ""))
        rows.append([f"`{info.alias or name}`", type_text(source, info.annotation), default_text(info),
                     constraints(info), doc.replace("``", "`") or info.description or meaning_fallback(model, name)])
    return rows


def meaning_fallback(model: type[BaseModel], name: str) -> str:
    """Meaning of a field whose schema has no docstring yet (nearest class in the MRO wins)."""
    if name == "kind":
        return "Selects this kind of workload item."
    for klass in model.__mro__:
        if (klass.__name__, name) in FALLBACK:
            return FALLBACK[(klass.__name__, name)]
    return ""


def model_section(model: type[BaseModel], title: str) -> str:
    doc = (model.__doc__ or "").strip()
    inherited = doc == (BaseModel.__doc__ or "").strip() or any(
        doc == (base.__doc__ or "").strip() for base in model.__mro__[1:] if base is not model)
    text = f"### {title}\n\n"
    if doc and not inherited:
        text += docstring_as_markdown(doc.replace("``", "`")) + "\n"
    text += table(["key", "type", "default", "constraints", "meaning"], field_rows(model))
    return text + "\n"


def alias_section(module: types.ModuleType, names: list[str]) -> str:
    """Type aliases used by the schema, with the docstring written under each."""
    docs = attribute_docs(module)
    rows = []
    for name in names:
        value = getattr(module, name)
        base = get_args(value)[0] if get_origin(value) is typing.Annotated else value
        shown = base.__name__ if isinstance(base, type) else str(base)
        rows.append([f"`{name}`", f"`{shown}`", docs.get(name, ("", ""))[1] or FALLBACK.get(("", name), "")])
    return table(["type", "is", "meaning"], rows)


def units_section() -> str:
    from simulator import units

    return ("### Quantities and units\n\n" + docstring_as_markdown(module_doc(units).split("\n\n", 1)[1])
            + "\nSee `simulator/units.py`. Message sizes in scenarios (`sizes: \"1M:1G\"`) follow nccl-tests: "
              "`1K` = 1024 B, `1G` = 2^30 B; a range `A:B` doubles from A to B, a list is comma-separated.\n\n")


# --- pages -----------------------------------------------------------------------------------------

def _yaml_block(path: Path) -> str:
    return f"`{path.relative_to(ROOT).as_posix()}`:\n\n```yaml\n{path.read_text(encoding='utf-8').rstrip()}\n```\n\n"


def _fabric_summary(path: Path) -> str:
    """What a topology file builds: devices by part, links by generation, channels, static power."""
    from simulator.topology.builder import build_fabric

    fabric = build_fabric(path)
    parts = Counter(n.part for n in fabric.nodes.values())
    links: Counter[str] = Counter()
    seen: set[int] = set()
    for ch in fabric.channels:
        if ch.link not in seen:
            seen.add(ch.link)
            links[f"{ch.generation} ({ch.cable or 'trace'})"] += 1
    rows = [["devices", ", ".join(f"{k} x {v:,}" for k, v in sorted(parts.items()))],
            ["GPUs (ranks 0..N-1)", f"{len(fabric.gpus)}: {fabric.gpus[0]} ... {fabric.gpus[-1]}"],
            ["physical links", ", ".join(f"{k}: {v:,}" for k, v in sorted(links.items()))],
            ["channels (one per link direction)", f"{len(fabric.channels):,}"],
            ["static interconnect power", ", ".join(f"{k} {w:,.0f} W" for k, w in sorted(fabric.static_power_W.items()))
             + f"; total {sum(fabric.static_power_W.values()):,.0f} W"]]
    return (f"Building it (`fabricsim describe {path.relative_to(ROOT).as_posix()}`) gives:\n\n"
            + table(["", "value"], rows) + "\n")


def topology_page() -> str:
    from simulator.topology import loader, schema

    models = model_tree(schema.TopologyModel)
    where = {"TopologyModel": "top level", "EnclosureSpec": "`enclosures[]`", "DeviceSpec": "`devices[]`",
             "LinkSpec": "`links[]`", "CableSpec": "`links[].cable`"}
    text = header(SCRIPT, "schema in simulator/topology/schema.py")
    text += "# Topology file reference\n\n"
    text += ("A topology file describes one system (a server, a rack) as enclosures, devices and links. "
             "It is validated by `simulator/topology/schema.py` (unknown keys are errors, reported as "
             "`FILE:LINE: field.path: what`, exit code 2) and built into a `Fabric` by "
             "`simulator/topology/builder.py`. Parts (`gb200`, `nvswitch4`, `nvlink5`, `optical` ...) come "
             "from the catalog: see [parts.md](parts.md).\n\n")
    text += "## How a file is read\n\n" + docstring_as_markdown(module_doc(schema)) + "\n"
    text += "### `extends:` and overriding by name\n\n" + docstring_as_markdown(
        module_doc(loader).split("\n\n")[1]) + "\n"
    text += units_section()
    text += "## Keys\n\n"
    for model in models:
        text += model_section(model, f"{where.get(model.__name__, model.__name__)} ({model.__name__})")
    text += "### Types used above\n\n" + alias_section(schema, ["Length", "DataSize", "Selector", "Name"]) + "\n"
    nvl72 = ROOT / "topologies" / "gb200_nvl72.yaml"
    optical = ROOT / "topologies" / "gb200_nvl72_optical.yaml"
    text += "## Worked example: GB200 NVL72\n\n" + _yaml_block(nvl72)
    text += ("Two enclosure kinds are replicated (`count`), so device names are `compute0.gpu0` ... "
             "`compute17.gpu3` and `switch_tray0.nvsw0` ... `switch_tray8.nvsw1`. The one top-level link "
             "spec selects every GPU and every switch chip with globs and joins them with `pattern: all`, "
             "one NVLink 5 link per pair.\n\n")
    text += _fabric_summary(nvl72)
    text += "### A what-if that extends it\n\n" + _yaml_block(optical)
    text += ("Only the link named `spine` changes: its `cable` is merged over the base file's, every other "
             "key is inherited.\n\n")
    text += _fabric_summary(optical)
    return text


def scenario_page() -> str:
    from simulator.workloads import scenario

    models = model_tree(scenario.ScenarioModel)
    text = header(SCRIPT, "schema in simulator/workloads/scenario.py")
    text += "# Scenario file reference\n\n"
    text += ("A scenario names topologies and workloads; `fabricsim run SCENARIO.yaml` runs every workload on "
             "every topology (two or more topologies make a side-by-side comparison). It is validated by "
             "`simulator/workloads/scenario.py` with the same one-line `FILE:LINE: field: what` errors as "
             "topologies.\n\n")
    text += "## Overview\n\n" + docstring_as_markdown(module_doc(scenario)) + "\n"
    text += "## Keys\n\n"
    for model in models:
        if model is scenario.ScenarioModel:
            title = "top level (ScenarioModel)"
        elif model is scenario.FaultSpec:
            title = "`faults[]` (FaultSpec; docs/faults.md)"
        elif model is scenario.PlacementSpec:
            title = f"`workloads[].placement` ({model.__name__}; simulator/topology/placement.py)"
        elif "kind" in model.model_fields:
            kind = get_args(model.model_fields["kind"].annotation)[0]
            title = f"`workloads[]` with `kind: {kind}` ({model.__name__})"
        else:
            title = f"`workloads[].model` ({model.__name__})"
        text += model_section(model, title)
    nvl72 = ROOT / "scenarios" / "nvl72_allreduce.yaml"
    decode = ROOT / "scenarios" / "tp_decode.yaml"
    text += "## Worked examples\n\n### An nccl-tests-style sweep on GB200 NVL72\n\n" + _yaml_block(nvl72)
    text += _scenario_summary(nvl72)
    text += "### A tensor-parallel decode step on GB200 NVL72\n\n" + _yaml_block(decode)
    text += ("YAML anchors (`&llama70b` / `*llama70b`) reuse one model shape across items.\n\n")
    text += _scenario_summary(decode)
    return text


def _scenario_summary(path: Path) -> str:
    from simulator.workloads.scenario import load_scenario

    model, topologies = load_scenario(path)
    rows = [[w.kind, w.name] for w in model.workloads]
    return (f"It loads as engine `{model.engine}`, seed {model.seed}, on "
            + ", ".join(f"`{p.resolve().relative_to(ROOT).as_posix()}`" for p in topologies)
            + f"; run it with `fabricsim run {path.relative_to(ROOT).as_posix()}`.\n\n"
            + table(["kind", "name"], rows) + "\n")


def serving_page() -> str:
    from simulator.workloads.serving import scenario as serving

    text = header(SCRIPT, "schema in simulator/workloads/serving/scenario.py")
    text += "# Serving scenario file reference\n\n"
    text += ("A serving scenario names topologies, a model, the load, the SLOs and deployments; `fabricsim serve "
             "SCENARIO.yaml` serves the load with every deployment at every rate on every topology "
             "(docs/serving.md explains what is modelled). It is validated by "
             "`simulator/workloads/serving/scenario.py` with the same one-line `FILE:LINE: field: what` errors as "
             "topologies.\n\n")
    text += "## Overview\n\n" + docstring_as_markdown(module_doc(serving)) + "\n"
    text += "## How all-reduces run (`deployments[].all_reduce`)\n\n"
    text += table(["name", "what runs"], [[f"`{k}`", v] for k, v in serving.ALL_REDUCE_POLICIES.items()]) + "\n"
    text += "## Keys\n\n"
    titles = {serving.ServingScenario: "top level (ServingScenario)", serving.ServedModelSpec: "`model` (ServedModelSpec)",
              serving.LoadSpec: "`load` (LoadSpec)", serving.LengthSpec: "`load.prompt_tokens`, `load.output_tokens` "
              "(LengthSpec)", serving.SloSpec: "`slo` (SloSpec)", serving.DeploymentSpec: "`deployments[]` "
              "(DeploymentSpec)", serving.PoolSpec: "`deployments[].prefill`, `deployments[].decode` (PoolSpec)"}
    for model in model_tree(serving.ServingScenario):
        text += model_section(model, titles.get(model, f"`{model.__name__}`"))
    example = ROOT / "scenarios" / "serving_nvl72_vs_hopper.yaml"
    text += "## Worked example\n\n### Llama-3-70B on GB200 NVL72 and the Hopper IB rack\n\n" + _yaml_block(example)
    text += f"Run it with `fabricsim serve {example.relative_to(ROOT).as_posix()}` (or `fabricsim serve {example.stem}`).\n"
    return text


def render() -> dict[str, str]:
    return {"docs/reference/topology.md": topology_page(), "docs/reference/scenario.md": scenario_page(),
            "docs/reference/serving.md": serving_page()}


def main(argv: list[str] | None = None) -> None:
    run(render, argv, __doc__ or "")


if __name__ == "__main__":
    main()
