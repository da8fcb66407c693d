"""Config model of the GPU smoke test (``smokeTest`` in the stack file)."""

from __future__ import annotations

from pydantic import Field

from components.base.config_model import ConfigModel

# NVIDIA's CUDA vectorAdd sample (https://catalog.ngc.nvidia.com/orgs/nvidia/teams/k8s/containers/cuda-sample),
# the image the GPU Operator docs use to verify an install. Its CUDA level decides the driver it needs.
DEFAULT_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
DEFAULT_IMAGE_CUDA = "12.5"


class SmokeTestConfig(ConfigModel):
    """One Job per GPU pool and MIG profile that must succeed for ``pulumi up`` to succeed."""

    enabled: bool = True
    image: str = DEFAULT_IMAGE
    image_cuda: str = Field(default=DEFAULT_IMAGE_CUDA, description="the CUDA level the image is built with")
    timeout_seconds: int = Field(default=1200, ge=60, description="includes scaling a GPU group up from zero")
    ttl_seconds_after_finished: int = Field(default=86400, ge=0)
    skip_pools: list[str] = Field(default_factory=list)
