"""Hardware layer: physical parts (lanes, link generations, devices, cables, retimers) and their
arithmetic, loaded from sourced YAML parts files. Entry point: :func:`catalog.load_catalog`."""
