"""GPU resources in a ResourceQuota: which quota keys are about NVIDIA GPUs and which can cap anything at all.

Asked by both the Kubeflow config check (``components.kubeflow.gpus``, against the stack's own fleet) and
the policy pack (``kubeflow-profile-gpu-quotas``, against every resource NVIDIA's device plugin can
advertise for a GPU model the catalog knows), so the two never disagree on what a GPU quota key is.
"""

from __future__ import annotations

import functools

from components.catalog.gpu_operator_chart import GPU_RESOURCE, mig_resource_name
from components.catalog.kubernetes import EXTENDED_RESOURCE_QUOTA_PREFIX
from components.catalog.mig import mig_models, mig_profiles

#: Every resource NVIDIA's device plugin advertises lives in this domain (gpu-operator docs, gpu-operator-mig.rst).
NVIDIA_DOMAIN = "nvidia.com/"
_LIMITS_PREFIX = "limits."


def gpu_quota_resource(key: str) -> str | None:
    """The NVIDIA resource a quota key names (``requests.nvidia.com/gpu`` -> ``nvidia.com/gpu``), else None."""
    for prefix in (EXTENDED_RESOURCE_QUOTA_PREFIX, _LIMITS_PREFIX, ""):
        if key.startswith(prefix) and key[len(prefix) :].startswith(NVIDIA_DOMAIN):
            return key[len(prefix) :]
    return None


def uncounted_quota_problem(key: str) -> str | None:
    """Why a GPU quota key caps nothing because Kubernetes never counts it (``limits.``, bare name), or None."""
    resource = gpu_quota_resource(key)
    if resource is None or key.startswith(EXTENDED_RESOURCE_QUOTA_PREFIX):
        return None
    kind = f"a {key.split(NVIDIA_DOMAIN)[0]} key" if key.split(NVIDIA_DOMAIN)[0] else "a bare resource name"
    wanted = EXTENDED_RESOURCE_QUOTA_PREFIX + resource
    return f"Kubernetes counts an extended resource in a quota only as {wanted} ({kind} caps nothing); use {wanted}"


@functools.cache
def known_gpu_resources() -> frozenset[str]:
    """Every resource the device plugin can advertise for a catalog GPU: ``nvidia.com/gpu`` and each MIG profile's."""
    return frozenset(
        {GPU_RESOURCE, *(mig_resource_name(profile.name) for model in mig_models() for profile in mig_profiles(model))}
    )
