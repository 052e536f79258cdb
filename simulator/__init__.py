"""fabricsim: a discrete-event simulator of GPU cluster interconnects.

Data flows one way: YAML -> validated model (topology) -> graph (topology) -> engine -> metrics -> reports.
"""

__version__ = "0.1.0"
