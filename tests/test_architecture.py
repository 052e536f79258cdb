"""The layers as the developers' guide draws them: data flows one way, hardware -> topology ->
engine -> workloads -> metrics -> runner -> reports -> cli/api; no import goes up a layer and no
imports circle, function-level imports counted (an AST scan of every module, not the imports
Python happened to run)."""

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parent.parent / "simulator"
LAYERS = ("version", "units", "errors", "shipped", "hardware", "calibrate", "topology", "engine", "workloads",
          "metrics", "runner", "reports", "cli", "api")
"""Bottom to top. ``version``, ``units``, ``errors`` and ``shipped`` are leaf helpers every layer may use;
``calibrate`` (measuring a GPU, fitting and writing a parts override) sits on hardware alone; the
runner runs it for ``fabricsim calibrate``."""
TOP = "simulator"
"""The package itself imports ``simulator.api`` lazily (``simulator.bench``): the one arrow from the top
(so no module below may import the package: ``simulator.version`` holds ``__version__``)."""


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> nx.DiGraph:
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target in modules and target != name:
                    graph.add_edge(name, target)
    return graph


def _layer(module: str) -> int | None:
    parts = module.split(".")
    layer = "cli" if parts[1:] == ["__main__"] else parts[1] if len(parts) > 1 else None
    return LAYERS.index(layer) if layer in LAYERS else None


def test_every_module_belongs_to_a_layer():
    assert sorted(m for m in _graph() if m != TOP and _layer(m) is None) == []


def test_no_import_goes_up_a_layer():
    graph = _graph()
    up = [f"{a} -> {b}" for a, b in graph.edges if a != TOP and _layer(b) > _layer(a)]
    assert up == []


def test_no_imports_circle():
    assert list(nx.simple_cycles(_graph())) == []


def test_the_scan_sees_function_level_imports():
    # the check itself: cli/bench.py imports the runner inside its command function only
    assert _graph().has_edge("simulator.cli.bench", "simulator.runner.bench")
