"""Yandex Cloud GPU platforms: which GPU each platform carries and which shapes it offers.

A Yandex VM with GPUs must use one of the listed (gpus, cores, memory) combinations exactly; any
other combination is refused by the cloud at create time, hours into a `pulumi up`. We refuse it
in config instead.

Sources: Yandex Cloud docs, compute/concepts/gpus.md "VM configurations"
(https://yandex.cloud/en/docs/compute/concepts/gpus#config) and compute/concepts/vm-platforms.md
"Platforms with GPUs" / "Restrictions" (https://yandex.cloud/ru/docs/compute/concepts/vm-platforms).
The docs do not name the NVIDIA chip of gpu-standard-v3i ("Gen2"), standard-v3-t4i ("T4i") and
gpu-standard-v4 ("GPU PLATFORM V4"): those carry ``gpu_model=None`` and a stack using them must say
which model it expects (``gpuModel`` in config) before MIG or driver checks can run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

#: A Yandex node group may run at most two minor versions behind its cluster's control plane, never ahead
#: (Yandex Managed Service for Kubernetes docs, "Release channels and updates", concepts/release-channels-and-updates:
#: "the node group version can lag behind the master version by no more than two minor versions"). Upstream
#: Kubernetes allows three (kubernetes.io/releases/version-skew-policy/, since 1.28); the managed service is stricter.
NODE_GROUP_MAX_MINOR_SKEW: Final = 2


@dataclass(frozen=True)
class PlatformShape:
    """One allowed VM shape: GPUs, vCPU cores and memory in GB."""

    gpus: int
    cores: int
    memory_gb: int


@dataclass(frozen=True)
class YandexGpuPlatform:
    """A Yandex Compute GPU platform."""

    platform_id: str
    description: str
    gpu_model: str | None
    shapes: tuple[PlatformShape, ...]
    zones: tuple[str, ...]
    mig_supported: bool

    @property
    def allowed_gpus(self) -> list[int]:
        """GPU counts this platform offers, ascending."""
        return sorted({shape.gpus for shape in self.shapes})

    def shapes_for(self, gpus: int) -> list[PlatformShape]:
        """Every shape with ``gpus`` GPUs."""
        return [shape for shape in self.shapes if shape.gpus == gpus]


def _shapes(*rows: tuple[int, int, int]) -> tuple[PlatformShape, ...]:
    return tuple(PlatformShape(*row) for row in rows)


# V100 and A100 exist only in ru-central1-a/-b (docs: "not d, e"). For Gen2, T4i and V4 the docs'
# restrictions table states only d (and e for V4); a/b are not stated, so they are not refused.
# GPU VMs cannot be created in the deprecated ru-central1-c.
_AB = ("ru-central1-a", "ru-central1-b")
_ABD = ("ru-central1-a", "ru-central1-b", "ru-central1-d")
_ABDE = ("ru-central1-a", "ru-central1-b", "ru-central1-d", "ru-central1-e")

YANDEX_GPU_PLATFORMS: dict[str, YandexGpuPlatform] = {
    p.platform_id: p
    for p in (
        YandexGpuPlatform(
            "gpu-standard-v1",
            "Intel Broadwell with NVIDIA Tesla V100",
            "V100-32GB",
            _shapes((1, 8, 96), (2, 16, 192), (4, 32, 384)),
            _AB,
            False,
        ),
        YandexGpuPlatform(
            "gpu-standard-v2",
            "Intel Cascade Lake with NVIDIA Tesla V100",
            "V100-32GB",
            _shapes((1, 8, 48), (2, 16, 96), (4, 32, 192), (8, 64, 384)),
            _AB,
            False,
        ),
        YandexGpuPlatform(
            "gpu-standard-v3",
            "AMD EPYC with NVIDIA Ampere A100 80GB",
            "A100-80GB",
            _shapes((1, 28, 119), (2, 56, 238), (4, 112, 476), (8, 224, 952)),
            _AB,
            True,
        ),
        YandexGpuPlatform(
            "gpu-standard-v3i",
            "Gen2 (AMD EPYC 9474F), 80 GB per GPU",
            None,
            _shapes((1, 18, 144), (2, 36, 288), (4, 72, 576), (8, 180, 1440)),
            _ABD,
            True,
        ),
        YandexGpuPlatform(
            "standard-v3-t4",
            "Intel Ice Lake with NVIDIA Tesla T4",
            "T4-16GB",
            _shapes((1, 4, 16), (1, 8, 32), (1, 16, 64), (1, 32, 128)),
            _ABD,
            False,
        ),
        YandexGpuPlatform(
            "standard-v3-t4i",
            "Intel Ice Lake with T4i 24 GB",
            None,
            _shapes((1, 4, 16), (1, 8, 32), (1, 16, 64), (1, 32, 128)),
            _ABD,
            False,
        ),
        YandexGpuPlatform(
            "gpu-standard-v4",
            "GPU PLATFORM V4 (Intel Xeon Platinum), 141 GB per GPU",
            None,
            _shapes((1, 22, 220), (2, 44, 440), (4, 88, 880), (8, 180, 1800)),
            _ABDE,
            True,
        ),
    )
}


class UnknownPlatformError(ValueError):
    """A platform id that is not a Yandex GPU platform."""


def yandex_platform(platform_id: str) -> YandexGpuPlatform:
    """Look a GPU platform up; the error lists the GPU platforms Yandex offers."""
    try:
        return YANDEX_GPU_PLATFORMS[platform_id]
    except KeyError:
        known = ", ".join(YANDEX_GPU_PLATFORMS)
        raise UnknownPlatformError(f"{platform_id!r} is not a Yandex GPU platform; allowed: {known}") from None


# ----------------------------------------------------------------------------------------------
# Values the program sends to the Yandex API, by the API's own rules (issue #28). Sources: the Managed
# Service for Kubernetes and Compute API references (https://yandex.cloud/en/docs/managed-kubernetes/api-ref/,
# https://yandex.cloud/en/docs/compute/api-ref/) and the concept pages named at each fact.

#: Resource ids (a cluster's, a subnet's, a security group's): lowercase Latin letters and digits, at most
#: 50 characters ("The maximum string length in characters is 50" on every id field of the API reference;
#: ids are generated as a three-letter service prefix and lowercase alphanumerics, e.g. ``catm5...``).
_YANDEX_ID = re.compile(r"[a-z0-9]{1,50}\Z")
#: Label values: at most 63 characters of ``[-_./\\@0-9a-z]`` (the API reference, ``labels`` of a node group:
#: "The maximum string length in characters for each value is 63. Each value must match the regular
#: expression ``[-_./\\@0-9a-z]*``").
_YANDEX_LABEL_VALUE = re.compile(r"[-_./\\@0-9a-z]{0,63}\Z")
#: ``deployPolicy.maxExpansion`` and ``maxUnavailable`` of a node group: "Acceptable values are 0 to 100,
#: inclusive" (API reference, NodeGroup.DeployPolicy).
DEPLOY_POLICY_RANGE = (0, 100)
#: Disk types whose size is a whole number of allocation units: "The size of a non-replicated disk must be a
#: multiple of 93 GB", and the same for ultra high-speed network storage with three replicas (SSD)
#: (compute/concepts/disk, "Disk types").
DISK_SIZE_STEP_GB = {"network-ssd-nonreplicated": 93, "network-ssd-io-m3": 93}


def yandex_id_problem(value: str) -> str | None:
    """Why ``value`` is not a Yandex Cloud resource id, or None."""
    if _YANDEX_ID.match(value):
        return None
    return (
        f"{value!r} is not a Yandex Cloud id: 1-50 lowercase Latin letters and digits, as the console and "
        "`yc ... list` show it (Yandex Cloud API)"
    )


def yandex_label_value_problem(value: str) -> str | None:
    """Why ``value`` cannot be the value of a Yandex resource label, or None."""
    if _YANDEX_LABEL_VALUE.match(value):
        return None
    return (
        f"{value!r} cannot be a Yandex Cloud label value: at most 63 characters of lowercase Latin letters, "
        "digits and - _ . / \\ @ (Yandex Cloud API)"
    )


def deploy_policy_problem(value: int) -> str | None:
    """Why ``value`` is not a node group's maxExpansion or maxUnavailable, or None."""
    low, high = DEPLOY_POLICY_RANGE
    if low <= value <= high:
        return None
    return f"{value} is out of range; Yandex Cloud accepts {low} to {high} nodes (NodeGroup deploy policy)"


def disk_size_problem(disk_type: str, size_gb: int) -> str | None:
    """Why a ``disk_type`` disk cannot be ``size_gb`` GB, or None."""
    step = DISK_SIZE_STEP_GB.get(disk_type)
    if step is None or size_gb % step == 0:
        return None
    lower, upper = size_gb // step * step, (size_gb // step + 1) * step
    nearest = ", ".join(str(size) for size in (lower, upper) if size > 0)
    return f"a {disk_type} disk is a multiple of {step} GB (Yandex Cloud disk types); nearest: {nearest}"
