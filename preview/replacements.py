"""Which input changes make ``pulumi up`` replace a resource instead of updating it, and why.

The diff engine (``preview.changes``) asks ``replace_reasons`` for every resource present in both
previews; an empty answer means an in-place update. Two sources of truth:

- Yandex node groups: the fields terraform-provider-yandex v0.161 marks ForceNew (``gpu_settings.*``,
  ``node_taints``, ``scale_policy.auto_scale`` so fixed <-> auto, ``allocation_policy``, the interface's
  subnets and ``nat``), the same fields whose digest ``components.yandex.naming.cloud_name`` puts in the
  cloud-side name, so a replacement brings up a new, differently named group first.
- pulumi-command ``Command`` s: a changed ``triggers`` ("trigger replacements on changes to this
  input", the ``command`` provider's schema); the host-preparation steps put their script digest there.
- Kubernetes objects: pulumi-kubernetes' ``forceNew`` table (``provider/pkg/provider/diff.go``): a
  changed ``metadata.name`` or ``metadata.namespace`` on every kind, and the immutable fields of the
  kinds listed below.

Inputs come as the preview writes them (wire format, secrets as ``"[secret]"``): a changed secret
value cannot be seen, so it is never reported as a replacement reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.catalog.names import NODE_GROUP_TYPE

#: ``kubernetes:<group>/<version>:<Kind>`` -> input paths whose change replaces the object
#: (pulumi-kubernetes ``forceNew``; ``metadata.name``/``metadata.namespace`` apply to every kind).
KUBERNETES_FORCE_NEW: Mapping[str, tuple[str, ...]] = {
    "core/v1:ConfigMap": ("binaryData", "data"),
    "core/v1:Secret": ("type", "stringData", "data"),
    "core/v1:Service": ("spec.clusterIP", "spec.type"),
    "core/v1:PersistentVolumeClaim": ("spec",),
    "core/v1:ResourceQuota": ("spec.scopes",),
    "batch/v1:Job": ("spec.selector", "spec.template"),
    "apps/v1:Deployment": ("spec.selector",),
    "apps/v1:StatefulSet": (
        "spec.podManagementPolicy",
        "spec.revisionHistoryLimit",
        "spec.selector",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
    ),
    "policy/v1:PodDisruptionBudget": ("spec",),
    "rbac.authorization.k8s.io/v1:RoleBinding": ("roleRef",),
    "rbac.authorization.k8s.io/v1:ClusterRoleBinding": ("roleRef",),
    "storage.k8s.io/v1:StorageClass": ("parameters", "provisioner"),
}
_METADATA_FORCE_NEW = ("metadata.name", "metadata.namespace")
COMMAND_TYPES = ("command:remote:Command", "command:local:Command")
_ABSENT = object()


def node_group_replace_fields(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The replace-triggering fields of a ``KubernetesNodeGroup``'s inputs, by the names the stack uses."""
    template = inputs.get("instanceTemplate") or {}
    return {
        "gpuEnvironment": (template.get("gpuSettings") or {}).get("gpuEnvironment"),
        "taints": inputs.get("nodeTaints"),
        "scaleKind": "auto" if "autoScale" in (inputs.get("scalePolicy") or {}) else "fixed",
        "location": (inputs.get("allocationPolicy") or {}).get("locations"),
        "subnets": [i.get("subnetIds") for i in template.get("networkInterfaces") or []],
        "nat": [i.get("nat") for i in template.get("networkInterfaces") or []],
    }


def _at(value: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return _ABSENT
        value = value[key]
    return value


def _shown(value: Any) -> str:
    return "(absent)" if value is _ABSENT else repr(value)


def _kubernetes_paths(resource_type: str) -> tuple[str, ...] | None:
    if not resource_type.startswith("kubernetes:") or resource_type.startswith(
        ("kubernetes:helm.sh/", "kubernetes:kustomize/", "kubernetes:yaml/")
    ):
        return None
    return _METADATA_FORCE_NEW + KUBERNETES_FORCE_NEW.get(resource_type.removeprefix("kubernetes:"), ())


def replace_reasons(resource_type: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``["gpuEnvironment 'runc_drivers_cuda' -> 'runc'", ...]``: why the change replaces; [] for an update."""
    if resource_type == NODE_GROUP_TYPE:
        before, after = node_group_replace_fields(old), node_group_replace_fields(new)
        reasons = [f"{key} {before[key]!r} -> {after[key]!r}" for key in before if before[key] != after[key]]
        if not reasons and old.get("name") != new.get("name"):
            reasons.append(f"name {old.get('name')!r} -> {new.get('name')!r}")
        return reasons
    paths = ("triggers",) if resource_type in COMMAND_TYPES else _kubernetes_paths(resource_type)
    if paths is None:
        return []
    reasons = []
    for path in paths:
        before, after = _at(old, path), _at(new, path)
        if before != after:
            if isinstance(before, Mapping | list) or isinstance(after, Mapping | list):
                reasons.append(f"{path} changed (forces a replacement)")
            else:
                reasons.append(f"{path} {_shown(before)} -> {_shown(after)}")
    return reasons


def replace_note(resource_type: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """How the replacement happens, where we know it (a node group: create-before-delete by cloud name)."""
    if resource_type == NODE_GROUP_TYPE and old.get("name") != new.get("name"):
        return (
            f"pulumi up creates {new.get('name')} first and deletes {old.get('name')} once it is ready "
            "(create-before-delete)."
        )
    if resource_type == NODE_GROUP_TYPE:
        return "the cloud-side name did not change, so the new group cannot be created first (delete-before-create)."
    return ""
