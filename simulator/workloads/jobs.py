"""Several jobs on one fabric: place each job's GPUs, build each job's workload, merge them into one
DAG that runs them concurrently (no job waits for another).

Placement rules (in job order; a GPU belongs to one job at most):

- ``packed``: the first ``count`` free GPUs in rank order (fills a rack before the next);
- ``spread``: free GPUs dealt round-robin over the groups (racks, servers: ``Node.group``), so
  the job has as equal a share of every group as it can;
- an explicit list of ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.engine.transfer import Workload
from simulator.errors import InputError
from simulator.topology.fabric import Fabric
from simulator.workloads.collectives.base import DagBuilder
from simulator.workloads.compose import append

PLACEMENTS = ("packed", "spread")


def place(fabric: Fabric, rule: str | list[int], count: int | None, taken: set[str]) -> list[str]:
    """GPUs for one job under ``rule`` (see module docstring), avoiding ``taken``."""
    free = [g for g in fabric.gpus if g not in taken]
    if isinstance(rule, list):
        if any(not 0 <= r < len(fabric.gpus) for r in rule):
            raise InputError(f"ranks must be 0..{len(fabric.gpus) - 1}", field="gpus")
        chosen = [fabric.gpus[r] for r in rule]
        clash = [g for g in chosen if g in taken]
        if clash or len(set(chosen)) != len(chosen):
            raise InputError(f"GPU {(clash or chosen)[0]} is given to two jobs (or twice)", field="gpus")
        return chosen
    if rule not in PLACEMENTS:
        raise InputError(f"unknown placement {rule!r}; choose {', '.join(PLACEMENTS)} or a list of ranks",
                         field="placement")
    if count is None or count < 1:
        raise InputError("a placement rule needs a positive count", field="count")
    if count > len(free):
        raise InputError(f"{count} GPUs asked, {len(free)} free of {len(fabric.gpus)}", field="count")
    if rule == "packed":
        return free[:count]
    groups: dict[str, list[str]] = {}
    for g in free:
        groups.setdefault(fabric.nodes[g].group, []).append(g)
    queues, chosen = list(groups.values()), []
    while len(chosen) < count:
        for queue in queues:
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    return sorted(chosen, key=fabric.gpus.index)


@dataclass(frozen=True)
class Merged:
    """Jobs' workloads in one DAG; ``owner[t]`` is the job index of transfer t."""

    workload: Workload
    owner: tuple[int, ...]


def merge(names: list[str], workloads: list[Workload]) -> Merged:
    """All jobs' transfers in one DAG, each job's own dependencies kept, none between jobs."""
    dag, owner = DagBuilder(), []
    for j, (name, w) in enumerate(zip(names, workloads)):
        append(dag, w, (), tag=f"{name}.")
        owner.extend([j] * len(w.transfers))
    meta = {"op": "jobs", "jobs": names, "bytes": sum(w.total_bytes for w in workloads), "busbw_factor": 1.0,
            "n": len(names)}
    return Merged(dag.workload("jobs." + "+".join(names), meta), tuple(owner))
