"""Names of a Yandex node group that follow from its config: the cloud-side name and the node labels.

A change of a field terraform-provider-yandex marks ForceNew (``components.catalog.replacements``, the
table the review reads too: ``gpuEnvironment``, the taints, fixed <-> auto scale) replaces the node
group. Pulumi replaces create-before-delete, but two groups cannot share a cloud-side name, so the
name carries a short digest of those fields: a replacement brings up a new, differently named group
first. The digest also covers the location and NAT, which the provider changes in place (v0.161.0):
they were in it when the names were first given, and dropping them would rename every group; a change
of them renames the group in place.
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

#: The config-controlled fields among the provider's ForceNew ones, by the names the catalog's table
#: (``components.catalog.replacements``) gives them; tests/diff/test_truth.py holds the two together.
FORCE_NEW_FIELDS = ("gpuEnvironment", "taints", "scaleKind")
#: In the digest although they change in place (see the module docstring): kept so existing names stay.
IN_PLACE_FIELDS_IN_NAME = ("location", "nat")


def replacement_fields(group: NodeGroupConfig) -> dict[str, object]:
    """The values of the fields in the cloud name's digest, as a plain dict (shown in the outputs).

    ``FORCE_NEW_FIELDS`` (whose change replaces the group) and ``IN_PLACE_FIELDS_IN_NAME``.
    """
    values: dict[str, object] = {
        "gpuEnvironment": group.gpu_environment,
        "taints": list(group.taints),
        "scaleKind": "auto" if group.scale.auto else "fixed",
        "location": {"zone": group.location.zone, "subnetId": group.location.subnet_id},
        "nat": group.nat,
    }
    return {key: values[key] for key in (*FORCE_NEW_FIELDS, *IN_PLACE_FIELDS_IN_NAME)}


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
