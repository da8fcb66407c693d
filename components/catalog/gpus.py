"""The one GPU table: every GPU model gpu-platform knows, and the facts about the product itself.

Model keys ("H100-80GB") are the project's own names; every other table is keyed by them: the MIG
table (``mig/profiles.py``: MIG_GPUS has exactly the keys marked ``mig_capable`` here, checked when
it is imported), the Yandex platform table, the driver tables, the policies, and the nvidia-smi reader
of the tests (it maps a product name to a key through ``smi_families``). Sources:
- NVIDIA data-center GPU product pages and the MIG User Guide "Supported GPUs" table
  (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html) for MIG capability.
- CUDA compute capabilities: https://developer.nvidia.com/cuda-gpus
- GPUs per host (``hosts``): the "Server options" rows of NVIDIA's datasheets: A100
  (https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf:
  SXM "HGX A100 ... with 4, 8, or 16 GPUs", PCIe "Partner and NVIDIA-Certified Systems with 1-8 GPUs"),
  H100 (https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet: SXM "HGX H100
  ... with 4 or 8 GPUs", PCIe "... with 1-8 GPUs"), H200 (https://www.nvidia.com/en-us/data-center/h200/:
  SXM "HGX H200 ... with 4 or 8 GPUs", NVL "MGX H200 NVL ... with up to 8 GPUs") and HGX B200
  (https://www.nvidia.com/en-us/data-center/hgx/: an 8-GPU baseboard). Models without that row here
  carry no host fact, and only the config's own bounds apply to them.
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
class HostForm:
    """A form in which a whole host carries the GPU (a baseboard, PCIe slots) and its GPU counts."""

    name: str
    gpu_counts: tuple[int, ...]

    def counts_text(self) -> str:
        """``4 or 8``, ``1 to 8``: how a person would say the counts."""
        counts = self.gpu_counts
        if len(counts) > 2 and counts == tuple(range(counts[0], counts[-1] + 1)):
            return f"{counts[0]} to {counts[-1]}"
        return ", ".join(map(str, counts[:-1])) + f" or {counts[-1]}" if len(counts) > 1 else str(counts[0])


@dataclass(frozen=True)
class GpuModel:
    """One GPU product as the scheduler, the driver and a bare-metal host see it."""

    key: str
    product: str
    architecture: Architecture
    memory_gb: int
    compute_capability: str
    mig_capable: bool
    #: The forms whole hosts carry this GPU in, with their GPU counts (empty: no fact recorded).
    hosts: tuple[HostForm, ...] = ()
    #: The boards (SKUs) the key covers, as NVIDIA's MIG configs and guide name them; the MIG table
    #: (catalog.mig.profiles) holds their PCI device ids.
    boards: tuple[str, ...] = ()
    #: Words of the product name nvidia-smi prints (``NVIDIA H100 80GB HBM3`` -> ``H100``), most specific first.
    smi_families: tuple[str, ...] = ()

    @property
    def host_gpu_counts(self) -> tuple[int, ...] | None:
        """Every GPU count a whole host of this model can have, ascending; None where no fact is recorded."""
        if not self.hosts:
            return None
        return tuple(sorted({count for form in self.hosts for count in form.gpu_counts}))


_SXM4_A100 = HostForm("HGX A100 (SXM4) baseboards", (4, 8, 16))
_PCIE_1_TO_8 = HostForm("PCIe servers", tuple(range(1, 9)))
_SXM5_H100 = HostForm("HGX H100 (SXM5) baseboards", (4, 8))
_SXM5_H200 = HostForm("HGX H200 (SXM5) baseboards", (4, 8))
_MGX_H200_NVL = HostForm("MGX H200 NVL (PCIe) servers", tuple(range(1, 9)))
_HGX_B200 = HostForm("HGX B200 baseboards", (8,))

_MODELS = (
    GpuModel("V100-32GB", "NVIDIA Tesla V100 32GB", Architecture.VOLTA, 32, "7.0", False, smi_families=("V100",)),
    GpuModel("T4-16GB", "NVIDIA Tesla T4", Architecture.TURING, 16, "7.5", False, smi_families=("T4",)),
    GpuModel(
        "A30-24GB", "NVIDIA A30", Architecture.AMPERE, 24, "8.0", True, boards=("A30-PCIE-24GB",), smi_families=("A30",)
    ),
    GpuModel(
        "A100-40GB",
        "NVIDIA A100 40GB",
        Architecture.AMPERE,
        40,
        "8.0",
        True,
        hosts=(_SXM4_A100, _PCIE_1_TO_8),
        boards=("A100-SXM4-40GB", "A100-PCIE-40GB", "A800-40GB"),
        smi_families=("A100",),
    ),
    GpuModel(
        "A100-80GB",
        "NVIDIA A100 80GB",
        Architecture.AMPERE,
        80,
        "8.0",
        True,
        hosts=(_SXM4_A100, _PCIE_1_TO_8),
        boards=("A100-SXM4-80GB", "A100-PCIE-80GB", "A800-80GB"),
        smi_families=("A100",),
    ),
    # The key covers the SXM5 board (HBM3) and the PCIe card (HBM2e): one MIG table, one nvidia-smi family.
    GpuModel(
        "H100-80GB",
        "NVIDIA H100 80GB HBM3",
        Architecture.HOPPER,
        80,
        "9.0",
        True,
        hosts=(_SXM5_H100, _PCIE_1_TO_8),
        boards=("H100-SXM5-80GB", "H100-PCIE-80GB", "H800-80GB"),
        smi_families=("H100",),
    ),
    GpuModel(
        "H100-94GB",
        "NVIDIA H100 NVL 94GB",
        Architecture.HOPPER,
        94,
        "9.0",
        True,
        boards=("H100 NVL", "H800 NVL"),
        smi_families=("H100",),
    ),
    # GH200 96GB shares H100-96GB's MIG table, so nvidia-smi's "GH200" with 96 GB is this key too.
    GpuModel(
        "H100-96GB",
        "NVIDIA H100 96GB / GH200 96GB",
        Architecture.HOPPER,
        96,
        "9.0",
        True,
        boards=("GH200 96GB", "H100 96GB", "PG506-96GB", "H20"),
        smi_families=("GH200", "H100"),
    ),
    # Two keys for the two H200 boards: NVIDIA's MIG configs tell them apart by PCI device id
    # (catalog.mig.profiles: 0x2335 H200 SXM, 0x233B H200 NVL), e.g. all-1g.35gb exists for the SXM only.
    GpuModel(
        "H200-141GB",
        "NVIDIA H200 SXM 141GB",
        Architecture.HOPPER,
        141,
        "9.0",
        True,
        hosts=(_SXM5_H200,),
        boards=("H200-SXM5-141GB",),
        smi_families=("H200",),
    ),
    GpuModel(
        "H200-NVL-141GB",
        "NVIDIA H200 NVL",
        Architecture.HOPPER,
        141,
        "9.0",
        True,
        hosts=(_MGX_H200_NVL,),
        boards=("H200 NVL",),
        smi_families=("H200 NVL",),
    ),
    GpuModel(
        "GH200-144GB",
        "NVIDIA GH200 144GB HBM3e",
        Architecture.HOPPER,
        144,
        "9.0",
        True,
        boards=("GH200 144GB HBM3e",),
        smi_families=("GH200",),
    ),
    GpuModel(
        "B200-180GB",
        "NVIDIA B200 180GB",
        Architecture.BLACKWELL,
        180,
        "10.0",
        True,
        hosts=(_HGX_B200,),
        boards=("B200",),
        smi_families=("B200",),
    ),
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


def gpu_model_problem(key: str) -> str | None:
    """Why ``key`` names no GPU model of the table (with the models it may name); None when it names one."""
    return None if key in GPU_MODELS else f"{key!r} is not a known GPU model; allowed: {', '.join(GPU_MODELS)}"


def host_gpu_count_problem(key: str, gpus: int) -> str | None:
    """Why a whole host of model ``key`` cannot have ``gpus`` GPUs, with the counts it comes in; None if it can.

    None too for a model without a host fact (only the config's own bounds apply) and for an unknown key
    (the caller refuses that with the known models).
    """
    model = GPU_MODELS.get(key)
    if model is None or model.host_gpu_counts is None or gpus in model.host_gpu_counts:
        return None
    forms = "; ".join(f"{form.name} carry {form.counts_text()}" for form in model.hosts)
    allowed = ", ".join(map(str, model.host_gpu_counts))
    return f"a host does not carry {gpus} x {key} ({forms}); allowed: {allowed}"
