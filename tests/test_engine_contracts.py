"""The packet engine's contracts: the requester protocol, the ports' and network's public methods,
and the one start/credit rule that ``kick`` and ``take_ahead`` share."""

from __future__ import annotations

import ast
import inspect
import math
from pathlib import Path

import pytest

from simulator.engine.packet import PacketConfig, requester
from simulator.engine.packet.link import EPS_S, OutputPort
from simulator.engine.packet.network import PacketNetwork
from simulator.engine.packet.source import Injector
from simulator.engine.packet.switch import Endpoint, OutputQueue, VirtualOutputQueue
from simulator.topology import synthetic

from engine_helpers import flows

PACKET = 1024
PACKAGE = Path(requester.__file__).parent


def _slots(protocol: type) -> list[str]:
    return [name for name in vars(protocol).get("__annotations__", {}) if not name.startswith("_")]


def _methods(protocol: type) -> list[str]:
    return [name for name, v in vars(protocol).items() if inspect.isfunction(v) and not name.startswith("_")]


@pytest.mark.parametrize("cls", [Injector, VirtualOutputQueue, OutputQueue])
def test_every_requester_carries_every_slot_of_the_protocol(cls):
    slots = set(cls.__slots__)
    wanted = _slots(requester.Requester)
    assert len(wanted) == 7
    missing = [s for s in wanted if s not in slots]
    assert not missing, f"{cls.__name__} lacks {missing}"
    assert all(callable(getattr(cls, m, None)) for m in _methods(requester.Requester))
    if cls is OutputQueue:
        assert all(callable(getattr(cls, m, None)) for m in _methods(requester.CrossedRequester))


def test_every_protocol_slot_has_a_docstring():
    tree = ast.parse((PACKAGE / "requester.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            body = node.body
            for i, stmt in enumerate(body):
                if isinstance(stmt, ast.AnnAssign):
                    doc = body[i + 1] if i + 1 < len(body) else None
                    assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant), \
                        f"{node.name}.{stmt.target.id} has no docstring"
                elif isinstance(stmt, ast.FunctionDef):
                    assert ast.get_docstring(stmt), f"{node.name}.{stmt.name} has no docstring"


def test_requesters_of_a_run_honour_the_protocol():
    fabric = synthetic.star(3)
    net = PacketNetwork(fabric, flows(("gpu0", "gpu1", PACKET * 20), ("gpu2", "gpu1", PACKET * 20)),
                        PacketConfig(packet_bytes=PACKET))
    net.run()
    reqs = [r for port in net.ports for r in port.reqs]
    assert reqs and all(isinstance(r, (Injector, VirtualOutputQueue)) for r in reqs)
    for r in reqs:
        assert isinstance(r.rank, int) and r.rank >= 0 and isinstance(r.name, str) and r.grants > 0
        assert r.crossed is False and hasattr(r.inbuf, "xbar")
    assert [r.rank for r in net.ports[0].reqs] == sorted(r.rank for r in net.ports[0].reqs)


def test_no_module_calls_private_methods_of_ports_or_the_network():
    """Outside its own class, nothing in the engine reaches into a port's or the network's
    private state: they expose ``settle``, ``result``, ``start_time``, ``reserve``."""
    offenders = []
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr in ("_result", "_absorb", "_back_by", "_stall")
                    and not (isinstance(node.value, ast.Name) and node.value.id == "self")):
                offenders.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert not offenders


def _port() -> tuple[OutputPort, PacketNetwork]:
    fabric = synthetic.single_link(credit=synthetic.default_credit(buffer_bytes=4 * PACKET, credit_bytes=PACKET))
    net = PacketNetwork(fabric, flows(("gpu0", "gpu1", PACKET)), PacketConfig(packet_bytes=PACKET))
    return net.ports[0], net


def test_start_time_is_the_latest_of_ready_serializer_and_crossbar_read():
    port, _ = _port()
    inbuf = Endpoint()
    assert port.start_time(1e-6, inbuf, 0, 1) == 1e-6
    port.busy_until = 2e-6
    assert port.start_time(1e-6, inbuf, 0, 1) == 2e-6
    assert port.start_time(2e-6 - EPS_S / 2, inbuf, 0, 1) == 2e-6 - EPS_S / 2  # within EPS_S: equal
    inbuf.xbar = 3e-6
    assert port.start_time(1e-6, inbuf, 0, 1) == 3e-6


def test_start_time_waits_for_credits_and_takes_in_those_back_by_then():
    port, net = _port()
    inbuf = Endpoint()
    port.credits.take(0, 4)  # the whole buffer in use
    assert port.start_time(0.0, inbuf, 0, 1) == math.inf
    port.release(0.0, 0, PACKET)  # one packet's space frees at 0: back after the return lag
    back = port.ret_lag
    assert port.start_time(back / 2, inbuf, 0, 1) == math.inf
    assert port.start_time(back, inbuf, 0, 1) == back
    assert port.credits.used == [3]


def test_settle_takes_in_every_credit_and_closes_a_stall():
    port, net = _port()
    port.credits.take(0, 2)
    port.release(0.0, 0, 2 * PACKET)
    port.stall_since = 1e-6
    port.settle(5e-6)
    assert port.credits.used == [0] and port.stall_s == pytest.approx(4e-6) and not port.blocked


def test_reserve_queues_behind_what_the_serializer_already_does():
    port, _ = _port()
    port.reserve(1e-6, 2e-6)
    assert port.busy_until == 3e-6
    port.reserve(2e-6, 1e-6)
    assert port.busy_until == 4e-6 and port.busy_s == pytest.approx(3e-6)


def test_result_is_public_and_is_what_run_returns():
    _, net = _port()
    res = net.run()
    again = net.result(res.wall_s)
    assert again.makespan_s == res.makespan_s and list(again.finish_s) == list(res.finish_s)
    assert again.bytes_delivered == res.bytes_delivered
