"""Switch scheduling designs: one record per design, and the engine's classes agree with it."""

from __future__ import annotations

import typing

import numpy as np
import pytest

from simulator.engine.packet import PacketConfig
from simulator.engine.packet.allocators import ALLOCATORS, ARBITERS, DESIGNS, MATCHING_ONLY
from simulator.engine.packet.allocators.separable import Bid, Separable
from simulator.errors import InputError
from simulator.topology import switch_designs as sd
from simulator.topology.fabric import ALLOCATOR_NAMES, Node, SwitchScheduling
from simulator.topology.schema import SchedulingSpec


def test_the_engine_attaches_a_class_to_every_design_and_nothing_else():
    assert tuple(DESIGNS) == sd.DESIGN_NAMES == ALLOCATOR_NAMES
    for name, design in DESIGNS.items():
        assert design.spec is sd.DESIGNS_BY_NAME[name]
        assert design.allocator.name == name
        assert design.matching_only == design.spec.matching_only == (design.arbiter is None)
        if design.arbiter is not None:
            assert design.arbiter.name == name
    assert MATCHING_ONLY == sd.MATCHING_ONLY
    assert set(ALLOCATORS) == set(DESIGNS) and set(ARBITERS) == set(DESIGNS) - set(MATCHING_ONLY)


def test_topology_files_accept_exactly_the_design_names():
    hints = typing.get_type_hints(SchedulingSpec)
    literal = next(a for a in typing.get_args(hints["arbiter"]) if a is not type(None))
    assert typing.get_args(literal) == sd.DESIGN_NAMES
    assert typing.get_args(typing.get_type_hints(SwitchScheduling)["queueing"])[0] == sd.Queueing
    with pytest.raises(Exception, match="islip"):
        SchedulingSpec(arbiter="islop")


def test_help_names_every_design_and_the_matching_only_ones():
    lines = sd.switch_design_help().splitlines()
    assert [line.split(":")[0] for line in lines] == list(sd.DESIGN_NAMES)
    assert all(("matching crossbar only" in line) == (name in sd.MATCHING_ONLY)
               for line, name in zip(lines, sd.DESIGN_NAMES))
    assert all(name in sd.crossbar_help() for name in sd.MATCHING_ONLY)


@pytest.mark.parametrize("name", sorted(set(DESIGNS) - set(MATCHING_ONLY)))
def test_a_separable_design_grants_one_output_as_its_per_output_arbiter_does(name):
    """With one output every grant is accepted, so the matcher's grants are the per-output
    arbiter's picks: the algorithm is the same code on both crossbars."""
    design = DESIGNS[name]
    assert issubclass(design.allocator, Separable) and design.allocator.grant_arbiter is design.arbiter
    rng = np.random.default_rng(3)
    n = 5
    weights = [int(w) for w in rng.integers(1, 4, n)]
    matcher = design.allocator(n, 1, np.random.default_rng(0), weights)
    arbiter = design.arbiter()
    for _ in range(200):
        inputs = sorted(int(i) for i in rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
        age = {(i, 0): float(rng.integers(0, 3)) for i in inputs}
        got = matcher.match({0: inputs}, age, iterations=1)
        want = arbiter.pick([Bid(i, weights[i], age[(i, 0)]) for i in inputs]).rank
        assert got == {want: 0}


def test_islip_moves_pointers_only_on_accepted_grants_and_rrm_on_every_grant():
    requests = {0: [0, 1], 1: [0, 1]}  # both outputs grant input 0 first; it accepts output 0
    islip = ALLOCATORS["islip"](2, 2, np.random.default_rng(0), [1, 1])
    rrm = ALLOCATORS["round_robin"](2, 2, np.random.default_rng(0), [1, 1])
    assert islip.match(requests, {}, 1) == rrm.match(requests, {}, 1) == {0: 0}
    assert islip.grant_ptr == [1, 0] and rrm.grant_ptr == [1, 1]
    assert islip.accept_ptr == rrm.accept_ptr == [1, 0]


def test_queueing_is_one_setting_from_topology_to_engine():
    cfg = PacketConfig()
    assert cfg.queueing == "voq"
    fifo = cfg.with_switch(SwitchScheduling(queueing="fifo"))
    switch = Node("sw0", "switch", "nvswitch4")
    assert fifo.queueing == "fifo" and not fifo.switch_setup(switch).voq
    voq_here = Node("sw1", "switch", "nvswitch4", scheduling=SwitchScheduling(queueing="voq"))
    assert fifo.switch_setup(voq_here).queueing == "voq" and fifo.switch_setup(voq_here).voq
    with pytest.raises(InputError, match="packet.queueing"):
        PacketConfig(queueing="lifo")  # type: ignore[arg-type]


def test_crossbar_auto_follows_the_record():
    for name, design in DESIGNS.items():
        setup = PacketConfig(arbiter=name).switch_setup(Node("sw0", "switch", "nvswitch4"))
        assert setup.matching == design.matching_only
    with pytest.raises(InputError, match="matching allocator"):
        PacketConfig(arbiter="islip", crossbar="output").switch_setup(Node("sw0", "switch", "nvswitch4"))
