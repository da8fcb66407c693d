"""Resource type tokens, labels and annotations the policies recognise.

The names themselves are the program's, in ``components.catalog.names``: the pack imports the catalog and
nothing else of the program, so it never pulls in a provider SDK.
"""

from __future__ import annotations

import re
from typing import Final

from components.catalog.names import (
    CONFIG_MAP_TYPE,
    DECLARED_TAINTS_ANNOTATION,
    DRIVER_CUDA_ANNOTATION,
    DRIVER_OWNER_ANNOTATION,
    DRIVER_VERSION_ANNOTATION,
    GPU_MODEL_LABEL,
    GPU_MODELS_ANNOTATION,
    GPU_NODE_LABEL,
    GPU_OPERATOR_RESOURCE_PREFIX,
    HELM_RELEASE_TYPES,
    INGRESS_TYPES,
    NAMESPACE_TYPE,
    NODE_GROUP_LABEL,
    NODE_GROUP_TYPE,
    NODE_PATCH_TYPE,
    NVIDIA_DRIVER_TYPE,
    SECRET_TYPES,
    SERVICE_TYPES,
    UNTAINTED_ACCEPTED_ANNOTATION,
)
from components.catalog.names import HOST_DRIVER_REMOVAL_ENABLED as OPT_IN_VALUE
from components.catalog.names import HOST_DRIVER_REMOVAL_LABEL as OPT_IN_LABEL

# Where each workload kind keeps its pod spec (Patch variants have the same shape).
_POD_SPEC_PATHS: Final = {
    "core/v1:Pod": ("spec",),
    "apps/v1:Deployment": ("spec", "template", "spec"),
    "apps/v1:DaemonSet": ("spec", "template", "spec"),
    "apps/v1:StatefulSet": ("spec", "template", "spec"),
    "apps/v1:ReplicaSet": ("spec", "template", "spec"),
    "batch/v1:Job": ("spec", "template", "spec"),
    "batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
_WORKLOAD_TYPE = re.compile(r"^kubernetes:(?P<kind>[a-z0-9./]+:[A-Za-z]+?)(?:Patch)?$")

__all__ = [
    "CONFIG_MAP_TYPE",
    "DECLARED_TAINTS_ANNOTATION",
    "DRIVER_CUDA_ANNOTATION",
    "DRIVER_OWNER_ANNOTATION",
    "DRIVER_VERSION_ANNOTATION",
    "GPU_MODELS_ANNOTATION",
    "GPU_MODEL_LABEL",
    "GPU_NODE_LABEL",
    "GPU_OPERATOR_RESOURCE_PREFIX",
    "HELM_RELEASE_TYPES",
    "INGRESS_TYPES",
    "NAMESPACE_TYPE",
    "NODE_GROUP_LABEL",
    "NODE_GROUP_TYPE",
    "NODE_PATCH_TYPE",
    "NVIDIA_DRIVER_TYPE",
    "OPT_IN_LABEL",
    "OPT_IN_VALUE",
    "SECRET_TYPES",
    "SERVICE_TYPES",
    "UNTAINTED_ACCEPTED_ANNOTATION",
    "pod_spec_path",
]


def pod_spec_path(resource_type: str) -> tuple[str, ...] | None:
    """The path of the pod spec inside a workload's props, or None if the type has no pod spec."""
    match = _WORKLOAD_TYPE.match(resource_type)
    return _POD_SPEC_PATHS.get(match.group("kind")) if match else None
