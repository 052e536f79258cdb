"""Teaching labs on the packet engine: the credit loop, switch arbitration, head-of-line blocking.

Each lab is a pure function that builds synthetic fabrics from catalog link figures, runs ordinary
``Workload``s through ``run_packet`` and returns rows (dicts, GB = 1e9 B, rates per direction),
plus an ``explain_*`` function that turns those rows into a sentence or two for the user.
"""

from simulator.workloads.labs.arbitration import arbitration_lab, explain_arbitration
from simulator.workloads.labs.credits import credit_sweep, explain_credits
from simulator.workloads.labs.hol import credit_pools, explain_hol, hol_blocking, hol_lab

__all__ = ["arbitration_lab", "credit_pools", "credit_sweep", "explain_arbitration", "explain_credits",
           "explain_hol", "hol_blocking", "hol_lab"]
