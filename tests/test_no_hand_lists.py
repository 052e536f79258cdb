"""No name list written by hand (issue 26): the names of algorithms, switch designs, protocols, ops,
engines, crossbar modes and queueings are written once, in their registry or record, and every
listing (CLI help, pydantic Literals, error messages, lookups) is derived from it. An AST scan of
every module finds a tuple, list, set or dict of two or more names of one registry, or a string
(docstrings apart) listing three or more, anywhere but in the registry's own source."""

import ast
import re
from pathlib import Path

import pytest

from simulator.engine.choices import ENGINES
from simulator.hardware.protocols import PROTOCOL_NAMES
from simulator.topology.switch_designs import CROSSBAR_MODES, DESIGN_NAMES, QUEUEINGS
from simulator.workloads.collectives import ALGORITHM_NAMES
from simulator.workloads.collectives.ops import OPS

PACKAGE = Path(__file__).resolve().parent.parent / "simulator"
REGISTRIES = {
    "algorithms": (ALGORITHM_NAMES, {"workloads/collectives/__init__.py"}, 2),
    "switch designs": (DESIGN_NAMES, {"topology/switch_designs.py"}, 2),
    "protocols": (PROTOCOL_NAMES, {"hardware/protocols.py"}, 2),
    "ops": (OPS, {"workloads/collectives/ops.py"}, len(OPS)),
    "engines": (ENGINES, {"engine/choices.py"}, 2),
    "crossbar modes": (CROSSBAR_MODES, {"topology/switch_designs.py"}, 2),
    "queueings": (QUEUEINGS, {"topology/switch_designs.py", "workloads/labs/hol.py"}, 2),
}
"""Registry -> (its names, the files that may write them, how many names in one literal make a list).
Ops are listed in subsets by rule (the ops an algorithm implements, in its record; the reducing or
rooted ops): only a copy of all of them is a hand list. The HOL lab runs its two queueings in
teaching order (FIFO's head-of-line blocking, then the VOQ cure)."""


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (a module's, a class's, a function's, or an
    attribute's: a string statement on its own)."""
    out = set()
    for node in ast.walk(tree):
        for stmt in getattr(node, "body", []) if isinstance(getattr(node, "body", None), list) else []:
            value = stmt.value if isinstance(stmt, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.add(id(value))
    return out


def _hand_lists(path: Path, names: tuple[str, ...], least: int = 2, root: Path = PACKAGE) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        items = None
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        if items is not None:
            hits = [e.value for e in items if isinstance(e, ast.Constant) and e.value in names]
            if len(hits) >= least:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {hits}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            words = [w for w in re.findall(r"[\w-]+", node.value) if w in names]
            if len(set(words)) >= max(3, least):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value[:60]!r}")
    return found


@pytest.mark.parametrize("registry", REGISTRIES)
def test_no_name_list_is_written_by_hand(registry):
    names, sources, least = REGISTRIES[registry]
    found = [line for path in sorted(PACKAGE.rglob("*.py"))
             if str(path.relative_to(PACKAGE)) not in sources for line in _hand_lists(path, names, least)]
    assert found == []


def test_the_scan_finds_a_hand_list(tmp_path):
    # the check itself: what the CLI's --algo help was before issue 26
    path = tmp_path / "probe.py"
    path.write_text('"""A docstring may say ring, tree and nvls."""\n'
                    'HELP = "ring, tree, direct, nvls, hierarchical or auto."\nPAIR = ("islip", "pim")\n')
    assert len(_hand_lists(path, ALGORITHM_NAMES, root=tmp_path)) == 1
    assert len(_hand_lists(path, DESIGN_NAMES, root=tmp_path)) == 1
