"""Config model of the GPU smoke test (``smokeTest`` in the stack file)."""

from __future__ import annotations

from collections.abc import Collection, Iterator

from pydantic import Field

from components.base.config_model import ConfigModel
from components.base.problems import Problem, join_path
from components.catalog.drivers import CudaVersionError, minimum_driver
from components.catalog.image_reference import image_reference_problem, unpinned_image_problem

# NVIDIA's CUDA vectorAdd sample (https://catalog.ngc.nvidia.com/orgs/nvidia/teams/k8s/containers/cuda-sample),
# the image the GPU Operator docs use to verify an install. Its CUDA level decides the driver it needs.
DEFAULT_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
DEFAULT_IMAGE_CUDA = "12.5"


class SmokeTestConfig(ConfigModel):
    """One Job per GPU pool and MIG profile that must succeed for ``pulumi up`` to succeed."""

    enabled: bool = True
    image: str = Field(
        default=DEFAULT_IMAGE,
        description="the CUDA image of the smoke Jobs and the driver steps' proofs: a reference the kubelet can pull "
        "(distribution/reference grammar) with a version tag or a digest, never :latest",
    )
    image_cuda: str = Field(default=DEFAULT_IMAGE_CUDA, description="the CUDA level the image is built with")
    timeout_seconds: int = Field(default=1200, ge=60, description="includes scaling a GPU group up from zero")
    ttl_seconds_after_finished: int = Field(default=86400, ge=0)
    skip_pools: list[str] = Field(default_factory=list)

    def problems(self, path: str, pool_names: Collection[str]) -> Iterator[Problem]:
        """The image is one the kubelet can pull and a fixed one; its CUDA level is one the catalog knows; skipped
        pools exist."""
        image = image_reference_problem(self.image) or unpinned_image_problem(self.image)
        if image:
            yield Problem(join_path(path, "image"), f"{image} (it runs the smoke Jobs and the driver steps' proofs)")
        try:
            minimum_driver(self.image_cuda)
        except (CudaVersionError, ValueError) as error:
            yield Problem(join_path(path, "imageCuda"), str(error))
        for index, name in enumerate(self.skip_pools):
            if name not in pool_names:
                allowed = ", ".join(sorted(pool_names)) or "none"
                yield Problem(join_path(path, "skipPools", index), f"{name!r} is not a GPU pool; pools: {allowed}")
