"""Which input changes make a provider replace a resource instead of updating it, one table per provider.

The review (``preview.diff.replacements``) reads these, together with the options the program itself puts
on a resource (``replace_on_changes``, ``delete_before_replace``, recorded by the preview's mocks),
and never keeps a list of its own. Paths are in the wire format the engine and the mocks see
(camelCase, dots between keys).

Sources, each pinned to what the program runs:

- pulumi-kubernetes ``provider/pkg/provider/diff.go`` (``forceNew``, ``metadataForceNewProperties``,
  ``containerForceNewProperties``, ``labelSelectorForceNewProperties``; read at the 4.x branch head,
  2026-07): ``metadata.name``/``metadata.namespace`` of every kind; a ConfigMap's ``data``/``binaryData``
  unless the provider sets ``enableConfigMapMutable``; a Secret's ``type``/``stringData``/``data`` unless
  it sets ``enableSecretMutable`` (the program's provider sets neither, ``components/cluster/access.py``);
  the kinds listed below by API group and kind. A Pod template's container fields are listed for a bare
  Pod only; a Job's whole ``spec.template`` is in the Job's row.
- terraform-provider-yandex v0.161.0 ``yandex/resource_yandex_kubernetes_node_group.go`` (bridged by
  pulumi-yandex-marketmaker): ``ForceNew: true`` on ``cluster_id``, ``allowed_unsafe_sysctls``,
  ``node_taints``, ``instance_template.nat`` (deprecated), ``instance_template.container_network.pod_mtu``,
  ``instance_template.gpu_settings.gpu_cluster_id`` and ``.gpu_environment``, the ``scale_policy.auto_scale``
  block (so fixed <-> auto; ``min``/``max``/``initial`` inside it are not), the ``allocation_policy`` block
  (adding or removing it) and ``allocation_policy.location.subnet_id`` (deprecated). Not ForceNew, so
  changed in place: ``name``, ``allocation_policy.location.zone``, the ``network_interface`` blocks
  (``subnet_ids``, ``nat``, ``security_group_ids``), labels, resources, platform.
- pulumi-command ``remote.Command``/``local.Command``: ``triggers`` ("Trigger a resource replacement on
  changes to any of these values", the provider's schema).
"""

from __future__ import annotations

from collections.abc import Mapping

from components.catalog.names import LOCAL_COMMAND_TYPE, REMOTE_COMMAND_TYPE

#: pulumi-kubernetes replaces a named object that keeps its name and namespace delete-first: the same name
#: cannot exist twice (``provider/pkg/provider/provider.go`` ``Diff``: ``deleteBeforeReplace`` when the object
#: is named, not auto-named, and its name and namespace stay).
KUBERNETES_SAME_NAME_DELETES_FIRST = True

#: Every Kubernetes object: a new name or namespace is a new object.
KUBERNETES_METADATA_FORCE_NEW: tuple[str, ...] = ("metadata.name", "metadata.namespace")

_SELECTOR = (
    "spec.selector",
    "spec.selector.matchExpressions",
    "spec.selector.matchLabels",
)
_CONTAINER_FIELDS = (
    "args",
    "command",
    "env",
    "image",
    "imagePullPolicy",
    "lifecycle",
    "livenessProbe",
    "ports",
    "readinessProbe",
    "resources",
    "securityContext",
    "stdin",
    "stdinOnce",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "tty",
    "volumeDevices",
    "volumeMounts",
    "workingDir",
)

#: ``<API group or "core">/<Kind>`` -> the input paths whose change replaces the object (any version the
#: provider lists; a path covers everything under it; ``containers[*]`` means every container).
KUBERNETES_FORCE_NEW: Mapping[str, tuple[str, ...]] = {
    "apps/DaemonSet": _SELECTOR,
    "apps/Deployment": _SELECTOR,
    "apps/StatefulSet": (
        "spec.podManagementPolicy",
        "spec.revisionHistoryLimit",
        *_SELECTOR,
        "spec.serviceName",
        "spec.volumeClaimTemplates",
    ),
    "batch/Job": ("spec.completions", "spec.parallelism", *_SELECTOR, "spec.template"),
    "core/ConfigMap": ("binaryData", "data"),
    "core/Secret": ("type", "stringData", "data"),
    "core/PersistentVolumeClaim": (
        "spec.accessModes",
        "spec.selector",
        "spec.storageClassName",
        "spec.volumeName",
    ),
    "core/Pod": (
        *(
            f"spec.{field}"
            for field in (
                "affinity",
                "automountServiceAccountToken",
                "dnsConfig",
                "dnsPolicy",
                "enableServiceLinks",
                "hostAliases",
                "hostIPC",
                "hostNetwork",
                "hostPID",
                "hostname",
                "imagePullSecrets",
                "nodeName",
                "nodeSelector",
                "overhead",
                "preemptionPolicy",
                "priority",
                "priorityClassName",
                "readinessGates",
                "restartPolicy",
                "runtimeClassName",
                "schedulerName",
                "securityContext",
                "serviceAccount",
                "serviceAccountName",
                "shareProcessNamespace",
                "subdomain",
                "terminationGracePeriodSeconds",
                "volumes",
            )
        ),
        *(f"spec.containers[*].{field}" for field in _CONTAINER_FIELDS),
        *(f"spec.initContainers[*].{field}" for field in _CONTAINER_FIELDS),
    ),
    "core/ResourceQuota": ("spec.scopes",),
    "core/Service": ("spec.clusterIP",),
    "policy/PodDisruptionBudget": ("spec",),  # listed for policy/v1beta1 only; v1 PDBs update in place
    "rbac.authorization.k8s.io/ClusterRoleBinding": ("roleRef",),
    "rbac.authorization.k8s.io/RoleBinding": ("roleRef",),
    "storage.k8s.io/StorageClass": ("parameters", "provisioner"),
}

#: API versions a row applies to where the provider lists only some of a group's versions.
KUBERNETES_FORCE_NEW_VERSIONS: Mapping[str, tuple[str, ...]] = {
    "policy/PodDisruptionBudget": ("v1beta1",),
}

#: pulumi-command: an update of a command without an ``update`` command runs its ``create`` again ("If an
#: `update` command isn't provided, then `create` will also be run when the resource's inputs are modified",
#: ``pulumi_command/remote/command.py``, pulumi-command 1.2.1).
COMMAND_UPDATE_RUNS_CREATE = True

#: pulumi-command: a changed ``triggers`` replaces the command (it runs its ``create`` again).
COMMAND_FORCE_NEW: Mapping[str, tuple[str, ...]] = {
    REMOTE_COMMAND_TYPE: ("triggers",),
    LOCAL_COMMAND_TYPE: ("triggers",),
}


#: terraform-provider-yandex v0.161.0, ``yandex_kubernetes_node_group``: the wire-format input paths
#: (pulumi names) whose change replaces the group -> the name the review and the outputs give the field.
#: ``scalePolicy.autoScale`` and ``allocationPolicy`` are ForceNew as blocks: adding or removing them.
YANDEX_NODE_GROUP_FORCE_NEW: Mapping[str, str] = {
    "clusterId": "clusterId",
    "allowedUnsafeSysctls": "allowedUnsafeSysctls",
    "nodeTaints": "taints",
    "instanceTemplate.nat": "templateNat",
    "instanceTemplate.containerNetwork.podMtu": "podMtu",
    "instanceTemplate.gpuSettings.gpuClusterId": "gpuClusterId",
    "instanceTemplate.gpuSettings.gpuEnvironment": "gpuEnvironment",
    "allocationPolicy.locations[*].subnetId": "locationSubnet",
}

#: Blocks whose presence (not their content) forces a new group: path -> the name shown.
YANDEX_NODE_GROUP_FORCE_NEW_BLOCKS: Mapping[str, str] = {
    "scalePolicy.autoScale": "scaleKind",
    "allocationPolicy": "allocationPolicy",
}


def yandex_node_group_force_new_names() -> tuple[str, ...]:
    """Every replace-forcing field of a node group by its shown name (paths, then blocks; each once)."""
    names = [*YANDEX_NODE_GROUP_FORCE_NEW.values(), *YANDEX_NODE_GROUP_FORCE_NEW_BLOCKS.values()]
    return tuple(dict.fromkeys(names))
