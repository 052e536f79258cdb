"""fabricsim calibrate: microbenchmarks on a CUDA GPU (microbench.py, PyTorch imported lazily) and the fit that turns them into a kernel-constant override file (fit.py, pure Python)."""
