"""GPU models that gpu-platform knows: architecture, memory, MIG capability.

Model keys ("H100-80GB") are the project's own names; they are what config, the Yandex platform
table, the MIG catalog and the policies use. Sources:
- NVIDIA data-center GPU product pages and the MIG User Guide "Supported GPUs" table
  (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html) for MIG capability.
- CUDA compute capabilities: https://developer.nvidia.com/cuda-gpus
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Architecture(StrEnum):
    """NVIDIA GPU architectures, ordered by generation (the order matters for driver support)."""

    VOLTA = "Volta"
    TURING = "Turing"
    AMPERE = "Ampere"
    HOPPER = "Hopper"
    BLACKWELL = "Blackwell"


@dataclass(frozen=True)
class GpuModel:
    """One GPU product as the scheduler and the driver see it."""

    key: str
    product: str
    architecture: Architecture
    memory_gb: int
    compute_capability: str
    mig_capable: bool


_MODELS = (
    GpuModel("V100-32GB", "NVIDIA Tesla V100 32GB", Architecture.VOLTA, 32, "7.0", False),
    GpuModel("T4-16GB", "NVIDIA Tesla T4", Architecture.TURING, 16, "7.5", False),
    GpuModel("A30-24GB", "NVIDIA A30", Architecture.AMPERE, 24, "8.0", True),
    GpuModel("A100-40GB", "NVIDIA A100 40GB", Architecture.AMPERE, 40, "8.0", True),
    GpuModel("A100-80GB", "NVIDIA A100 80GB", Architecture.AMPERE, 80, "8.0", True),
    GpuModel("H100-80GB", "NVIDIA H100 80GB HBM3", Architecture.HOPPER, 80, "9.0", True),
    GpuModel("H100-94GB", "NVIDIA H100 NVL 94GB", Architecture.HOPPER, 94, "9.0", True),
    GpuModel("H100-96GB", "NVIDIA H100 96GB / GH200 96GB", Architecture.HOPPER, 96, "9.0", True),
    # Two keys for the two H200 boards: NVIDIA's MIG configs tell them apart by PCI device id
    # (catalog.mig.profiles: 0x2335 H200 SXM, 0x233B H200 NVL), e.g. all-1g.35gb exists for the SXM only.
    GpuModel("H200-141GB", "NVIDIA H200 SXM 141GB", Architecture.HOPPER, 141, "9.0", True),
    GpuModel("H200-NVL-141GB", "NVIDIA H200 NVL", Architecture.HOPPER, 141, "9.0", True),
    GpuModel("GH200-144GB", "NVIDIA GH200 144GB HBM3e", Architecture.HOPPER, 144, "9.0", True),
    GpuModel("B200-180GB", "NVIDIA B200 180GB", Architecture.BLACKWELL, 180, "10.0", True),
)

GPU_MODELS: dict[str, GpuModel] = {model.key: model for model in _MODELS}


class UnknownGpuModelError(ValueError):
    """A GPU model key that the catalog does not know."""


def gpu_model(key: str) -> GpuModel:
    """Look a GPU model up by key; the error lists every known key."""
    try:
        return GPU_MODELS[key]
    except KeyError:
        known = ", ".join(GPU_MODELS)
        raise UnknownGpuModelError(f"unknown GPU model {key!r}; known models: {known}") from None
