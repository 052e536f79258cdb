"""Chakra traces checked across ranks (issue 28, item 6): a collective's participants come from its
process group (no pg_name: every rank) and every rank of a group must have the same collectives;
a rank's file cut short, a collective dropped or moved to another pg_name, a deleted last rank,
two files for one rank, a negative FLOP count or a comm_size only one rank has is one line naming
that rank's file, exit 2, before anything runs (was: a 7-rank all-reduce, exit 0)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import InputError
from simulator.workloads.traces import chakra_schema as schema
from simulator.workloads.traces.chakra import load_traces, write_trace
from simulator.workloads.traces.chakra_example import LayerShape, tp_layer_nodes

ROOT = Path(__file__).resolve().parents[1]
_register()
runner = CliRunner()
T = schema.NODE_TYPES


@pytest.fixture()
def scen(tmp_path: Path) -> Path:
    """A copy of the shipped Chakra scenario (flow engine, its 8 trace files) on one topology."""
    shutil.copytree(ROOT / "scenarios" / "chakra", tmp_path / "chakra")
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\ntopologies: [{ROOT / 'topologies' / 'hgx_h100.yaml'}]\nengine: flow\n"
                    "workloads:\n  - {kind: chakra, name: layer, chakra: chakra/tp_layer}\n")
    return path


def _trace(tmp_path: Path, rank: int) -> Path:
    return tmp_path / "chakra" / f"tp_layer.{rank}.et"


def _refused(scenario: Path) -> str:
    result = runner.invoke(app, ["run", str(scenario)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout.strip() == ""
    assert lines[0].startswith("fabricsim: ")
    return lines[0].removeprefix("fabricsim: ")


def _rewrite(path: Path, edit) -> None:  # noqa: ANN001 - nodes -> nodes
    (t,) = [x for x in [_read(path)]]
    write_trace(path, edit(list(t.nodes)), world_size=t.world_size)


def _read(path: Path):  # noqa: ANN201
    from simulator.workloads.traces.chakra import read_trace
    return read_trace(path)


def test_the_shipped_traces_say_their_world_size_and_load():
    traces = load_traces(ROOT / "scenarios" / "chakra" / "tp_layer")
    assert [t.world_size for t in traces] == [8] * 8


def test_a_file_cut_at_a_message_boundary_names_that_rank(scen):
    path = _trace(scen.parent, 5)
    data = path.read_bytes()
    payloads = list(schema.read_delimited(data))
    cut = len(data) - len(payloads[-1]) - len(schema._varint(len(payloads[-1])))
    path.write_bytes(data[:cut])
    line = _refused(scen)
    assert line.startswith(f"{path}: rank 5 has 1 collective(s)") and "ranks 0-4, 6, 7 have 2" in line
    assert "mlp_allreduce" in line


def test_a_dropped_last_collective_names_that_rank(scen):
    path = _trace(scen.parent, 7)
    _rewrite(path, lambda nodes: nodes[:-1])
    assert _refused(scen).startswith(f"{path}: rank 7 has 1 collective(s) of the world process group")


def test_a_collective_in_another_pg_name_names_that_rank(scen):
    path = _trace(scen.parent, 2)

    def regroup(nodes):  # noqa: ANN001, ANN202
        nodes[3].attr.add(name="pg_name", string_val="tp_other")
        return nodes
    _rewrite(path, regroup)
    line = _refused(scen)
    assert line.startswith(f"{path}: node 3 (mlp_allreduce): pg_name 'tp_other' is named by rank 2 only")


def test_named_groups_run_over_their_ranks(tmp_path):
    coll = [schema.message_class("Node")(id=0, name="ar", type=T["COMM_COLL_NODE"])]
    for r in range(4):
        n = schema.message_class("Node")(id=0, name="ar", type=T["COMM_COLL_NODE"])
        n.attr.add(name="comm_type", int64_val=0)
        n.attr.add(name="comm_size", int64_val=1 << 20)
        n.attr.add(name="pg_name", string_val=f"pair{r // 2}")
        write_trace(tmp_path / f"g.{r}.et", [n], world_size=4)
    assert coll and len(load_traces(tmp_path / "g")) == 4


def test_a_deleted_last_rank_file_is_named(scen):
    _trace(scen.parent, 7).unlink()
    line = _refused(scen)
    assert line.startswith(f"{_trace(scen.parent, 7)}: no such file: the traces say world_size 8")


def test_two_files_for_one_rank(scen):
    shutil.copy(_trace(scen.parent, 3), scen.parent / "chakra" / "tp_layer.03.et")
    line = _refused(scen)
    assert line == (f"{_trace(scen.parent, 3)}: a second trace file for rank 3 beside tp_layer.03.et; keep one "
                    "(PREFIX.3.et)")


def test_a_gap_in_the_ranks_names_the_missing_file(scen):
    _trace(scen.parent, 2).unlink()
    assert _refused(scen).startswith(f"{_trace(scen.parent, 2)}: no such file: trace ranks must be 0..N-1")


def test_negative_num_ops_is_an_input_error(scen):
    path = _trace(scen.parent, 4)

    def negative(nodes):  # noqa: ANN001, ANN202
        for a in nodes[0].attr:
            if a.name == "num_ops":
                a.int64_val = -5
        return nodes
    _rewrite(path, negative)
    assert _refused(scen) == f"{path}: node 0 (attention): attribute num_ops: must be a finite number >= 0, got -5"


def test_a_comm_size_disagreement_names_the_rank_that_disagrees(scen):
    path = _trace(scen.parent, 6)

    def bigger(nodes):  # noqa: ANN001, ANN202
        for a in nodes[1].attr:
            if a.name == "comm_size":
                a.int64_val *= 2
        return nodes
    _rewrite(path, bigger)
    line = _refused(scen)
    assert line.startswith(f"{path}: node 1 (attn_allreduce): collective 0 of the world process group")
    assert "comm_size 134217728, ranks 0-5, 7 have 67108864" in line


def test_a_world_size_disagreement_names_the_rank(tmp_path):
    ranks = tp_layer_nodes(LayerShape(tp=3, tokens=8, hidden=64, ffn=128))
    for r, nodes in enumerate(ranks):
        write_trace(tmp_path / f"w.{r}.et", nodes, world_size=4 if r == 1 else 3)
    with pytest.raises(InputError, match="world_size 4, but ranks 0, 2 say 3") as err:
        load_traces(tmp_path / "w")
    assert err.value.file == str(tmp_path / "w.1.et")


# --- fuzz: any mutation of one rank's trace either loads or is one InputError naming a trace file ----

_MUTATIONS = st.sampled_from(["drop", "cut", "pg", "size", "type", "ops", "peer", "world", "dup_id", "bytes"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=_MUTATIONS, rank=st.integers(0, 3), index=st.integers(0, 3), value=st.integers(-2**40, 2**40),
       junk=st.binary(max_size=12))
def test_mutated_traces_load_or_name_a_rank_file(tmp_path_factory, mutation, rank, index, value, junk):
    base = tmp_path_factory.mktemp("f")
    ranks = tp_layer_nodes(LayerShape(tp=4, tokens=16, hidden=64, ffn=128))
    paths = [base / f"t.{r}.et" for r in range(4)]
    for r, nodes in enumerate(ranks):
        if r == rank:
            node = nodes[index]
            if mutation == "drop":
                nodes = nodes[:index] + nodes[index + 1:]
            elif mutation == "pg":
                node.attr.add(name="pg_name", string_val=str(value % 3))
            elif mutation in ("size", "type", "ops", "peer"):
                key = {"size": "comm_size", "type": "comm_type", "ops": "num_ops", "peer": "comm_dst"}[mutation]
                node.attr.add(name=key, int64_val=value % 20 - 5 if mutation in ("type", "peer") else value)
            elif mutation == "dup_id":
                node.id = nodes[(index + 1) % 4].id
        write_trace(paths[r], nodes, world_size=(value % 6 if mutation == "world" and r == rank else 4))
        if r == rank and mutation in ("cut", "bytes"):
            data = paths[r].read_bytes()
            paths[r].write_bytes(data[:abs(value) % len(data)] + (junk if mutation == "bytes" else b""))
    try:
        traces = load_traces(base / "t")
    except InputError as err:
        assert err.file and (Path(err.file).name.startswith("t.") or Path(err.file) == base / "t"), str(err)
        assert "\n" not in str(err)
        return
    # what loads is consistent: every rank has the world group's collectives, of one size each
    colls = [[n for n in t.nodes if n.type == T["COMM_COLL_NODE"]] for t in traces]
    assert len({len(c) for c in colls}) == 1


def test_a_missing_dependency_or_a_cycle_is_refused_when_the_scenario_loads(scen):
    path = _trace(scen.parent, 1)

    def to_missing(nodes):  # noqa: ANN001, ANN202
        nodes[2].data_deps.append(99)
        return nodes
    _rewrite(path, to_missing)
    assert _refused(scen) == f"{path}: node 2 (mlp) depends on node 99, which rank 1 does not have"
    _rewrite(path, lambda nodes: [n for n in nodes])  # unchanged copy, then a cycle: node 0 waits for node 3
    fresh = tp_layer_nodes(LayerShape())[1]
    fresh[0].data_deps.append(3)
    write_trace(path, fresh, world_size=8)
    line = _refused(scen)
    assert line.startswith(f"{path}: ") and "waits for itself" in line and "cycle" in line
