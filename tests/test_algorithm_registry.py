"""The algorithm registry (``collectives/registry.py``): one record per algorithm, read by the tuner,
the CTA count and ``why_not``; a new algorithm is one file with its record.

A temporary algorithm written to a file here (a one-shot all_gather of direct sends) registers, builds
through ``build_collective`` (by name, and through the tuner for ``protocol=auto`` and ``algo=auto``)
and runs on the flow engine at the closed-form time of its sends; no module that reads the records
names an algorithm, and no import of the package (function-level ones included) closes a cycle.
"""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from pathlib import Path

import networkx as nx
import pytest

from simulator.api import load_topology
from simulator.engine.dispatch import simulate
from simulator.errors import InputError
from simulator.workloads import collectives
from simulator.workloads.collectives import (ALGORITHM_NAMES, ALGORITHMS, SHIPPED, algorithm_help, build_collective,
                                             check_algo, register, tuner, unregister)
from simulator.workloads.collectives.base import route_lat_s

PACKAGE = Path(collectives.__file__).parent
READERS = ("__init__.py", "tuner.py", "gpu_side.py", "rails.py", "registry.py", "build.py")
"""The package's modules that decide by record, never by an algorithm's name."""
ONESHOT = '''
"""A one-shot all_gather: every rank sends its S/n straight to each peer, at the direct kernel's latencies."""

from simulator.workloads.collectives.gpu_side import CtaRule
from simulator.workloads.collectives.registry import AlgorithmRecord


def build(spec, dag):
    for src in spec.gpus:
        for dst in spec.gpus:
            if src != dst:
                dag.add(src, dst, spec.wire(spec.nbytes / spec.n), (), spec.base_s() + spec.hop_s(src, dst), None,
                        "oneshot", spec.cta_Bps(src, dst, max(1.0, spec.channels / (spec.n - 1))))


RECORD = AlgorithmRecord("oneshot_gather", frozenset({"all_gather"}), build, "every rank sends S/n to each peer",
                         ctas=CtaRule(pool="p2p_channels"), table_row="direct")
'''


def _load(folder: Path, module_name: str):
    """The temporary algorithm's module, written to ``folder`` and imported from that file."""
    path = folder / "oneshot_gather.py"
    path.write_text(textwrap.dedent(ONESHOT))
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def oneshot(tmp_path):
    """The temporary algorithm's record, registered for the test."""
    record = register(_load(tmp_path, "oneshot_gather").RECORD)
    try:
        yield record
    finally:
        unregister(record.name)


def test_shipped_records_are_the_registry_in_order():
    """Each shipped algorithm's file declares the record the registry holds, in ``SHIPPED`` order."""
    assert tuple(ALGORITHMS) == ALGORITHM_NAMES == ("ring", "tree", "direct", "nvls", "nvls_tree", "collnet_chain",
                                                    "pat", "hierarchical")
    assert all(ALGORITHMS[m.RECORD.name] is m.RECORD for m in SHIPPED)
    assert [m.RECORD.name for m in SHIPPED] == list(ALGORITHM_NAMES)
    assert algorithm_help() == ("ring, tree, direct, nvls, nvls_tree, collnet_chain, pat, hierarchical or auto; a comma "
                                "list lets the tuner choose among those, ^ and a list among the others")
    assert algorithm_help(details=True).splitlines()[0].startswith("ring: ")


def test_a_new_algorithm_from_its_own_file_builds_and_runs_at_its_closed_form(oneshot):
    """On HGX H100 (18 NVLink 4 links per GPU, every GPU one hop from every other through the
    NVSwitches) each rank sends (n-1)/n S and answers the (n-1)/n S it receives (responses cost
    ``reverse_overhead`` rho of each byte on the other direction), all at once over its links of
    B bytes/s: t = route latency + (n-1)/n S (1 + rho) / B, so busbw = B / (1 + rho)."""
    fabric = load_topology("hgx_h100")
    gpus, n, S = tuple(fabric.gpus[:8]), 8, 1 << 30
    assert ALGORITHM_NAMES + ("oneshot_gather",) == tuple(ALGORITHMS) and check_algo("oneshot_gather")
    assert algorithm_help().startswith(
        "ring, tree, direct, nvls, nvls_tree, collnet_chain, pat, hierarchical, oneshot_gather or auto;")
    work = build_collective(fabric, gpus, "all_gather", S, algo="oneshot_gather", protocol="ideal")
    assert work.meta["algo"] == "oneshot_gather" and len(work.transfers) == n * (n - 1)
    assert work.meta["channels"] == 32  # the record's CTA rule: Hopper's point-to-point channels
    result = simulate(fabric, work, engine="flow")
    nvlink = [c for c in fabric.out_channels(gpus[0]) if fabric.nodes[c.dst].kind == "switch"
              and c.fabric == "nvlink"]
    B, rho = sum(c.rate_Bps for c in nvlink), nvlink[0].reverse_overhead
    assert len(nvlink) == 18 and rho > 0
    closed = route_lat_s(fabric, gpus[0], gpus[1]) + (n - 1) / n * S * (1 + rho) / B
    assert result.makespan_s == pytest.approx(closed, rel=1e-4)
    busbw = S / result.makespan_s * work.meta["busbw_factor"]
    assert busbw == pytest.approx(B / (1 + rho), rel=1e-3)
    # a real protocol pays the latencies of the record's protocol row (direct's Simple base latency)
    simple = build_collective(fabric, gpus, "all_gather", S, algo="oneshot_gather", protocol="Simple")
    assert simple.transfers[0].delay_s >= 8.4e-6


def test_the_tuner_picks_protocols_for_a_new_algorithm_and_weighs_it_under_auto(oneshot, monkeypatch):
    """``protocol=auto`` with the new algorithm asks the tuner, which builds only it; ``algo=auto``
    builds it among the candidates for the op its record serves, not for another op."""
    fabric = load_topology("hgx_h100")
    gpus = tuple(fabric.gpus[:8])
    chosen = build_collective(fabric, gpus, "all_gather", 64 << 20, algo="oneshot_gather", protocol="auto")
    assert chosen.meta["algo"] == "oneshot_gather" and "predicted_s" in chosen.meta
    built, original = [], tuner.estimate

    def counting(fabric, workload):
        built.append(workload.meta["algo"])
        return original(fabric, workload)

    monkeypatch.setattr(tuner, "estimate", counting)
    build_collective(fabric, gpus, "all_gather", 64 << 20)
    assert "oneshot_gather" in built and "ring" in built
    built.clear()
    build_collective(fabric, gpus, "all_reduce", 64 << 20)
    assert built and "oneshot_gather" not in built


def test_registering_checks_names_and_why_not_reads_the_record(oneshot):
    """A taken name (or ``auto``) cannot register; an op outside the record's ops is refused by name."""
    with pytest.raises(ValueError):
        register(oneshot)
    with pytest.raises(ValueError):
        register(type(oneshot)("auto", oneshot.ops, oneshot.build, "no"))
    fabric = load_topology("hgx_h100")
    with pytest.raises(InputError, match="oneshot_gather does not implement all_reduce"):
        build_collective(fabric, fabric.gpus[:4], "all_reduce", 1 << 20, algo="oneshot_gather")


def test_unregistered_names_are_unknown_again(tmp_path):
    """``unregister`` takes a temporary algorithm out: the name is an unknown choice afterwards."""
    record = register(_load(tmp_path, "oneshot_gather_again").RECORD)
    assert unregister("oneshot_gather") is record
    assert tuple(ALGORITHMS) == ALGORITHM_NAMES
    with pytest.raises(InputError):
        check_algo("oneshot_gather")


@pytest.mark.parametrize("name", READERS)
def test_no_reader_of_the_records_names_an_algorithm(name):
    """No string literal of these modules equals a registered algorithm's name: the tuner, the CTA
    count and the checks decide by the record's fields (each algorithm's own file holds its name)."""
    tree = ast.parse((PACKAGE / name).read_text())
    named = [node.value for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ALGORITHMS]
    assert named == [], name


def _imports(path: Path, package: str, modules: set[str]) -> set[str]:
    """The package modules ``path`` imports anywhere (module or function level)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                out.add(full if full in modules else node.module)
    return out & modules


def test_the_package_imports_without_a_cycle():
    """Every import between the package's modules, function-level ones included, as a directed
    graph: no cycle (``build_collective`` and ``tuner.choose`` both build through ``build.py``)."""
    package = "simulator.workloads.collectives"
    files = {(package if p.stem == "__init__" else f"{package}.{p.stem}"): p for p in PACKAGE.glob("*.py")}
    graph = nx.DiGraph()
    for name, path in files.items():
        graph.add_node(name)
        graph.add_edges_from((name, t) for t in _imports(path, package, set(files)) if t != name)
    assert list(nx.simple_cycles(graph)) == []
    assert graph.has_edge(f"{package}.tuner", f"{package}.build") and graph.has_edge(package, f"{package}.tuner")
