"""Devices: GPUs, switch chips (NVSwitch, InfiniBand), NICs, PCIe switches, host root complexes.

A device says how many links of each fabric it can terminate (``ports``) and which link
generation those ports run (``generations``); switches add forwarding latency, in-switch reduction
and the power their core draws whether or not traffic flows.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from simulator.hardware.links import FabricKind
from simulator.hardware.part import Bytes, BytesPerSecond, Part, Seconds, Watts

DeviceKind = Literal["gpu", "switch", "nic", "pcie_switch", "host"]


class GpuSpec(Part):
    """What a GPU brings besides ports: memory, compute and power (for the kernel model, ``hardware.kernels``)."""

    hbm_bytes: Bytes = Field(gt=0)
    """HBM capacity (B, decimal GB as marketed)."""
    hbm_Bps: BytesPerSecond = Field(gt=0)
    """HBM bandwidth (B/s)."""
    bf16_flops: float = Field(gt=0)
    """Dense BF16 tensor throughput (FLOP/s)."""
    fp8_flops: float | None = Field(None, gt=0)
    """Dense FP8 tensor throughput (FLOP/s); None where the GPU has no FP8 tensor cores."""
    sms: int = Field(gt=0)
    board_power_W: Watts = Field(gt=0)
    """Board power cap (thermal design power, W): the most the GPU draws; the clock drops to stay under it."""
    architecture: Literal["ampere", "hopper", "blackwell"]
    """GPU architecture: selects the GPU-side collective constants (parts/gpu_side.yaml)."""
    nvlink: str | None
    """NVLink generation (catalog link name) or None."""
    nvlinks: int = Field(ge=0)
    pcie: str
    """PCIe generation of the host interface (catalog link name)."""
    pcie_width: int = Field(gt=0)
    c2c: str | None = None
    """NVLink-C2C generation of the link to a Grace CPU (catalog link name), or None for a GPU whose
    host interface is PCIe only (a superchip GPU has one C2C port besides its PCIe port)."""

    @property
    def ridge_bf16_flop_per_B(self) -> float:
        """Arithmetic intensity where BF16 compute and HBM bandwidth balance (FLOP/B)."""
        return self.bf16_flops / self.hbm_Bps


class DevicePart(Part):
    """One device model."""

    name: str = ""
    kind: DeviceKind
    ports: dict[FabricKind, int]
    """Links of each fabric the device can terminate, e.g. {'nvlink': 18, 'pcie': 1}."""
    generations: dict[FabricKind, str] = {}
    """Link generation (catalog name) each fabric's ports run, e.g. {'nvlink': 'nvlink5'}."""
    lanes: dict[FabricKind, int] = {}
    """Optional lane budget per fabric (PCIe switches and root complexes share lanes among ports)."""
    latency_s: Seconds = Field(0.0, ge=0)
    """Port-to-port forwarding latency (s); 0 for endpoints that do not forward."""
    reduction: bool = False
    """In-switch reduction (NVLS multimem on NVSwitch 3/4, SHARP on InfiniBand)."""
    static_power_W: Watts = Field(0.0, ge=0)
    """Interconnect-related power drawn whether or not traffic flows (switch core, NIC) (W)."""
    gpu: GpuSpec | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "DevicePart":
        if (self.kind == "gpu") != (self.gpu is not None):
            raise ValueError("a gpu device needs a 'gpu' section and only gpus may have one")
        if self.gpu is not None:
            want = {"nvlink": self.gpu.nvlinks, "pcie": 1} if self.gpu.nvlink else {"pcie": 1}
            gens = {"nvlink": self.gpu.nvlink, "pcie": self.gpu.pcie} if self.gpu.nvlink else {"pcie": self.gpu.pcie}
            if self.gpu.c2c:
                want, gens = {**want, "c2c": 1}, {**gens, "c2c": self.gpu.c2c}
            if self.ports != want or self.generations != gens:
                raise ValueError(f"ports {self.ports} / generations {self.generations} disagree with the "
                                 f"gpu section (expected {want} / {gens})")
        extra = set(self.generations) - set(self.ports)
        if extra:
            raise ValueError(f"generations names fabric(s) without ports: {', '.join(sorted(extra))}")
        return self
