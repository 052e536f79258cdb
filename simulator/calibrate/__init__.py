"""fabricsim calibrate: microbenchmarks on a CUDA GPU (``microbench.py``: the standard library and,
imported inside functions, PyTorch and Triton, so it runs alone on a GPU host), the fit that turns
a run into kernel constants (``fit.py``: numpy), and the override file they are written to
(``write.py``). Imports nothing itself, so that ``python3 -m simulator.calibrate.microbench`` needs
no pydantic."""
