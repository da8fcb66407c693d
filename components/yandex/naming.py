"""Names of a Yandex node group that follow from its config: the cloud-side name and the node labels.

Changing ``gpuEnvironment`` (and, on this provider version, the taints, the scale kind or the
location) replaces the node group. Two groups cannot share a cloud-side name, so the name carries a
short digest of exactly those fields: a replacement brings up a new, differently named group first.
No SDK import here: the stack plan and the outputs use these without loading the Yandex SDK.
"""

from __future__ import annotations

import hashlib
import json

from components.catalog.names import (
    GPU_MODEL_LABEL,
    GPU_NODE_LABEL,
    HOST_DRIVER_REMOVAL_ENABLED,
    HOST_DRIVER_REMOVAL_LABEL,
    NODE_GROUP_LABEL,
)
from components.yandex.config import NodeGroupConfig


def replacement_fields(group: NodeGroupConfig) -> dict[str, object]:
    """The values of the fields whose change replaces the group, as a plain dict (shown in the outputs).

    terraform-provider-yandex v0.161 marks ForceNew: gpu_settings.*, node_taints,
    scale_policy.auto_scale (so fixed <-> auto), allocation_policy and the interface's nat.
    """
    return {
        "gpuEnvironment": group.gpu_environment,
        "taints": list(group.taints),
        "scaleKind": "auto" if group.scale.auto else "fixed",
        "location": {"zone": group.location.zone, "subnetId": group.location.subnet_id},
        "nat": group.nat,
    }


def replacement_key(group: NodeGroupConfig) -> str:
    """An 8-hex-digit digest of the replace-triggering fields."""
    text = json.dumps(replacement_fields(group), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


#: Yandex resource names: ``[a-z]([-a-z0-9]{0,61}[a-z0-9])?`` (Yandex Cloud API, resource naming rules).
MAX_CLOUD_NAME = 63


def cloud_name(cluster_name: str, group_name: str, group: NodeGroupConfig) -> str:
    """The node group's name in Yandex Cloud: stable until a replace-triggering field changes.

    ``<cluster>-<group>-<digest>``, at most 63 characters. When that is too long the cluster part is
    shortened, never the digest: a cut digest would give the replacement the old group's name, and
    create-before-delete would collide in Yandex.
    """
    suffix = f"-{group_name}-{replacement_key(group)}"
    prefix = cluster_name[: MAX_CLOUD_NAME - len(suffix)].rstrip("-")
    return f"{prefix}{suffix}"


def node_labels(group_name: str, group: NodeGroupConfig) -> dict[str, str]:
    """Kubernetes labels every node of the group gets at creation (autoscaled nodes included)."""
    labels = {NODE_GROUP_LABEL: group_name, GPU_MODEL_LABEL: group.model.key, GPU_NODE_LABEL: "true"}
    if group.host_driver_removal:
        labels[HOST_DRIVER_REMOVAL_LABEL] = HOST_DRIVER_REMOVAL_ENABLED
    labels.update(group.labels)
    return dict(sorted(labels.items()))
