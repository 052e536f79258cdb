"""Running many simulations: sweep files expanded into points, a content-hash result cache, and a
fan-out of the points onto a Dask distributed cluster.

Layer: below reports (which format results and supply the function that simulates one point) and
above metrics. Nothing here imports ``simulator.reports``.
"""
