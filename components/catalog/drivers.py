"""NVIDIA driver facts: the minimum driver for a CUDA level, and which branches support which GPUs.

Two checks follow from these facts (both used by config validation and by the policy pack):
1. The driver must be new enough for the CUDA version the stack's workloads are built with.
   A too-old driver shows up at run time as "CUDA driver version is insufficient for CUDA runtime
   version" (with CDI the container toolkit no longer refuses the container at start).
2. The driver branch must support every GPU architecture in the stack: R580 is the last branch
   that supports Volta (V100), so a V100 node must not be given an R595 driver.

Sources:
- CUDA Toolkit Release Notes, section "CUDA Driver", Table 3 "CUDA Toolkit and Corresponding
  Driver Versions" (Linux x86_64) and Table 2 (minor version compatibility):
  https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
  (13.3 rows from third-party summaries of the 13.3 notes: medium confidence).
- NVIDIA Unix Graphics Feature Deprecation Schedule: "The release 580 series will be the last to
  support GPUs based on the Maxwell, Pascal, and Volta architectures".
- First CUDA release per compute capability (the driver must know the architecture):
  https://developer.nvidia.com/cuda-gpus and the CUDA release notes (sm_80 in 11.0, sm_90 in 11.8,
  sm_100 in 12.8).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from components.catalog.gpus import Architecture
from components.catalog.versions import driver_branch, parse_version


class CudaCheckMode(StrEnum):
    """How strictly a driver is held to a CUDA level.

    strict: the driver that ships with that toolkit (Table 3): every feature works.
    permissive: the per-major floor of minor-version compatibility (Table 2): apps run with a
    limited feature set (no JIT of newer PTX).
    """

    STRICT = "strict"
    PERMISSIVE = "permissive"


# CUDA toolkit release -> its Linux x86_64 toolkit driver (Table 3). Newest first.
TOOLKIT_DRIVER_MIN: tuple[tuple[str, str], ...] = (
    ("13.3.0", "610.43.02"),
    ("13.2.2", "595.71.05"),
    ("13.2.1", "595.58.03"),
    ("13.2.0", "595.45.04"),
    ("13.1.1", "590.48.01"),
    ("13.1.0", "590.44.01"),
    ("13.0.2", "580.95.05"),
    ("13.0.1", "580.82.07"),
    ("13.0.0", "580.65.06"),
    ("12.9.1", "575.57.08"),
    ("12.9.0", "575.51.03"),
    ("12.8.1", "570.124.06"),
    ("12.8.0", "570.26"),
    ("12.6.3", "560.35.05"),
    ("12.6.2", "560.35.03"),
    ("12.6.1", "560.35.03"),
    ("12.6.0", "560.28.03"),
    ("12.5.1", "555.42.06"),
    ("12.5.0", "555.42.02"),
    ("12.4.1", "550.54.15"),
    ("12.4.0", "550.54.14"),
    ("12.3.1", "545.23.08"),
    ("12.3.0", "545.23.06"),
    ("12.2.2", "535.104.05"),
    ("12.2.1", "535.86.09"),
    ("12.2.0", "535.54.03"),
    ("12.1.1", "530.30.02"),
    ("12.1.0", "530.30.02"),
    ("12.0.1", "525.85.12"),
    ("12.0.0", "525.60.13"),
    ("11.8.0", "520.61.05"),
    ("11.7.1", "515.48.07"),
    ("11.7.0", "515.43.04"),
    ("11.6.2", "510.47.03"),
    ("11.6.1", "510.47.03"),
    ("11.6.0", "510.39.01"),
    ("11.5.2", "495.29.05"),
    ("11.5.1", "495.29.05"),
    ("11.5.0", "495.29.05"),
    ("11.4.4", "470.82.01"),
    ("11.4.3", "470.82.01"),
    ("11.4.2", "470.57.02"),
    ("11.4.1", "470.57.02"),
    ("11.4.0", "470.42.01"),
    ("11.3.1", "465.19.01"),
    ("11.3.0", "465.19.01"),
    ("11.2.2", "460.32.03"),
    ("11.2.1", "460.32.03"),
    ("11.2.0", "460.27.03"),
    ("11.1.1", "455.32"),
    ("11.1.0", "455.23"),
    ("11.0.3", "450.51.06"),
    ("11.0.2", "450.51.05"),
)

# Minor-version compatibility floor per CUDA major (Table 2).
MINOR_COMPAT_FLOOR: dict[int, str] = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}


@dataclass(frozen=True)
class ArchitectureSupport:
    """The driver branches that can drive one architecture (inclusive bounds; None = open)."""

    min_branch: int
    max_branch: int | None
    why: str


ARCHITECTURE_SUPPORT: dict[Architecture, ArchitectureSupport] = {
    Architecture.VOLTA: ArchitectureSupport(
        384, 580, "R580 is the last branch that supports Volta (NVIDIA feature deprecation schedule)"
    ),
    Architecture.TURING: ArchitectureSupport(410, None, "Turing (sm_75) arrived with CUDA 10.0, driver R410"),
    Architecture.AMPERE: ArchitectureSupport(450, None, "Ampere (sm_80) arrived with CUDA 11.0, driver R450"),
    Architecture.HOPPER: ArchitectureSupport(520, None, "Hopper (sm_90) arrived with CUDA 11.8, driver R520"),
    Architecture.BLACKWELL: ArchitectureSupport(570, None, "Blackwell (sm_100) arrived with CUDA 12.8, driver R570"),
}


class CudaVersionError(ValueError):
    """A CUDA level the catalog has no driver minimum for."""


def _normalise_cuda(cuda: str) -> tuple[int, int, int]:
    parts = parse_version(cuda)
    if len(parts) > 3:
        raise CudaVersionError(f"CUDA version {cuda!r} has too many parts; write MAJOR.MINOR or MAJOR.MINOR.PATCH")
    padded = (*parts, 0, 0)[:3]
    return padded[0], padded[1], padded[2]


def known_cuda_versions() -> list[str]:
    """MAJOR.MINOR levels the catalog knows, oldest first (for error messages)."""
    seen: dict[str, None] = {}
    for release, _ in reversed(TOOLKIT_DRIVER_MIN):
        major, minor, _patch = _normalise_cuda(release)
        seen[f"{major}.{minor}"] = None
    return list(seen)


def minimum_driver(cuda: str, mode: CudaCheckMode = CudaCheckMode.STRICT) -> str:
    """The lowest driver that runs workloads built with CUDA ``cuda``.

    "12.6" means the 12.6 GA toolkit; "12.6.3" the third update. Strict mode takes Table 3;
    permissive mode takes the minor-version-compatibility floor of the major.
    """
    major, minor, patch = _normalise_cuda(cuda)
    if mode is CudaCheckMode.PERMISSIVE:
        if major not in MINOR_COMPAT_FLOOR:
            raise CudaVersionError(
                f"CUDA {cuda}: no driver floor known for major {major}; known majors: "
                + ", ".join(str(m) for m in sorted(MINOR_COMPAT_FLOOR))
            )
        return MINOR_COMPAT_FLOOR[major]
    candidates = [
        (_normalise_cuda(release), driver)
        for release, driver in TOOLKIT_DRIVER_MIN
        if _normalise_cuda(release)[:2] == (major, minor)
    ]
    if not candidates:
        raise CudaVersionError(
            f"CUDA {cuda} is not in the catalog; known CUDA versions: {', '.join(known_cuda_versions())}"
        )
    # The newest update at or below the requested patch level; an unknown later patch takes the newest.
    at_or_below = [item for item in candidates if item[0][2] <= patch]
    chosen = max(at_or_below or candidates, key=lambda item: item[0])
    return chosen[1]


def driver_satisfies_cuda(driver: str, cuda: str, mode: CudaCheckMode = CudaCheckMode.STRICT) -> bool:
    """True when ``driver`` runs CUDA ``cuda`` workloads."""
    return parse_version(driver) >= parse_version(minimum_driver(cuda, mode))


def max_cuda_for_driver(driver: str) -> str:
    """The newest CUDA MAJOR.MINOR whose toolkit driver is at or below ``driver`` (what nvidia-smi reports)."""
    version = parse_version(driver)
    for release, minimum in TOOLKIT_DRIVER_MIN:
        if version >= parse_version(minimum):
            major, minor, _ = _normalise_cuda(release)
            return f"{major}.{minor}"
    raise CudaVersionError(f"driver {driver} is older than every CUDA 11+ toolkit driver (450.51.05)")


def architecture_problem(driver: str, architecture: Architecture) -> str | None:
    """Why ``driver`` cannot drive ``architecture``, or None when it can."""
    support = ARCHITECTURE_SUPPORT[architecture]
    branch = driver_branch(driver)
    if branch < support.min_branch:
        return (
            f"driver {driver} (R{branch}) is too old for {architecture.value} GPUs; "
            f"needs R{support.min_branch} or newer ({support.why})"
        )
    if support.max_branch is not None and branch > support.max_branch:
        return (
            f"driver {driver} (R{branch}) does not support {architecture.value} GPUs; "
            f"use an R{support.max_branch} driver or older ({support.why})"
        )
    return None


def cuda_problem(driver: str, cuda: str, mode: CudaCheckMode = CudaCheckMode.STRICT) -> str | None:
    """Why ``driver`` cannot run CUDA ``cuda`` workloads, or None when it can."""
    needed = minimum_driver(cuda, mode)
    if parse_version(driver) < parse_version(needed):
        return (
            f"driver {driver} is too old for CUDA {cuda} workloads; "
            f"CUDA {cuda} needs driver {needed} or newer ({mode.value} check)"
        )
    return None


# Yandex's gpu_environment whose node image carries a driver installed with NVIDIA's .run installer.
PREINSTALLED_ENVIRONMENT = "runc_drivers_cuda"


def two_drivers_on_node(*, operator_installs_driver: bool, preinstalled: bool, handed_over: bool) -> bool:
    """True when a node would run two drivers: the image's and the GPU Operator's.

    The operator's driver manager finds the host driver, marks the node ``pre-installed`` and never
    manages it again, so the fleet silently runs two driver versions; such nodes must be handed over
    (host-driver removal) or recreated driverless. The config check and the policy pack both ask this.
    """
    return operator_installs_driver and preinstalled and not handed_over


# Where the GPU Operator's driver container puts the driver's root file system on the host: the pinned
# chart's ``hostPaths.driverInstallDir`` default (values.yaml of gpu-operator v26.7.0; the program does not
# change it). A loaded ``nvidia`` module with this directory present is the operator's driver; one without
# it was installed on the host. Host preparation passes it to driver-check.sh (OPERATOR_DRIVER_ROOT).
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"

# What a driverless bare-metal host must not run itself: the operator's driver container starts
# ``nvidia-persistenced`` and, on NVSwitch systems (``/proc/driver/nvidia-nvswitch`` has devices),
# ``nv-fabricmanager`` at its own driver version from inside the container (NVIDIA/gpu-driver-container,
# ``<distro>/nvidia-driver``: ``_assert_nvswitch_system`` and ``_load_driver``, "Starting NVIDIA fabric
# manager daemon"; deployed "as a child daemon process inside the GPU Operator's nvidia-driver-ctr
# container", NVIDIA/NVSentinel#883). A host unit of either would be a second copy at a version the
# host does not control, so host preparation does not run its nvidia-services step on driverless hosts.
DRIVER_CONTAINER_RUNS_HOST_SERVICES = True
