"""Names of a Yandex node group that follow from its config: the cloud-side name and the node labels.

A change of a field terraform-provider-yandex marks ForceNew replaces the node group. Pulumi replaces
create-before-delete, but two groups cannot share a cloud-side name, so the name carries a short digest
of the replace-forcing fields the config sets: a replacement brings up a new, differently named group
first. The fields are read from the catalog's table (``components.catalog.replacements``), the one the
review reads too; a field the provider changes in place (the zone, the subnet and NAT of the network
interface, the security groups, the name itself) is not in the digest, so changing it renames nothing
and replaces nothing.
No SDK import here: the stack plan and the outputs use these without loading the Yandex SDK.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping

from components.catalog.pools import gpu_node_labels
from components.catalog.replacements import yandex_node_group_force_new_names
from components.yandex.config import NodeGroupConfig

#: How the config sets a replace-forcing field, by the name the catalog gives it. The catalog's other
#: fields are not set from the config: ``clusterId`` comes from the cluster (another cluster is another
#: set of names), the rest the program never sends (``tests/yandex/test_node_group.py`` checks both).
_FROM_CONFIG: Mapping[str, Callable[[NodeGroupConfig], object]] = {
    "gpuEnvironment": lambda group: group.gpu_environment,
    "taints": lambda group: list(group.taints),
    "scaleKind": lambda group: "auto" if group.scale.auto else "fixed",
}


def digest_fields() -> tuple[str, ...]:
    """The catalog's replace-forcing fields that the config sets, in the catalog's order."""
    return tuple(name for name in yandex_node_group_force_new_names() if name in _FROM_CONFIG)


def replacement_fields(group: NodeGroupConfig) -> dict[str, object]:
    """The values of the fields in the cloud name's digest (shown in the outputs): a change replaces the group."""
    return {name: _FROM_CONFIG[name](group) for name in digest_fields()}


def replacement_key(group: NodeGroupConfig) -> str:
    """An 8-hex-digit digest of the replace-forcing fields."""
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
    return gpu_node_labels(
        group_name, group.model.key, host_driver_removal=group.host_driver_removal, labels=group.labels
    )
