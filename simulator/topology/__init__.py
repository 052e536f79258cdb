"""Topology layer: YAML files -> validated model -> :class:`~simulator.topology.fabric.Fabric`.

``validate.load_topology(path)`` reads and checks a file, ``builder.build_fabric(model_or_path)``
builds the fabric, ``describe.describe(fabric)`` summarizes it; ``routing`` and ``synthetic``
serve the engines.
"""
