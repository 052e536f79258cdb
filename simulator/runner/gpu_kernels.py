"""The kernel model of a fabric's GPU (``hardware.kernels``) with the fabric's calibration files:
what decode, prefill, ring attention, Chakra COMP nodes and NCCL's kernels in a CUDA graph ask."""

from __future__ import annotations

from simulator.errors import InputError
from simulator.hardware.catalog import load_catalog
from simulator.hardware.kernels import GpuKernels, kernel_model
from simulator.topology.fabric import Fabric


def gpu_kernels(fabric: Fabric, gpu: str, launch: str = "graph") -> GpuKernels:
    """The kernel model of a fabric's GPU: its part from the fabric's catalog, the kernel constants
    of its architecture with the fabric's calibration files applied, in ``launch`` mode."""
    name = fabric.nodes[gpu].part
    spec = fabric.gpu_specs.get(name)
    if spec is None:
        part = load_catalog().device(name)
        if part.gpu is None:
            raise InputError(f"part {part.name!r} of {gpu} has no GPU figures for the kernel model")
        spec = part.gpu
    return kernel_model(name, spec, launch, fabric.kernel_files)  # type: ignore[arg-type]
