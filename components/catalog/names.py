"""Every name gpu-platform owns, in one place: labels, annotations, taints, type tokens, env names.

Node groups get the labels at creation (so autoscaled nodes carry them too), bare-metal nodes
through a NodePatch; the GPU Operator values, the smoke test, the stack outputs and the policy pack
select on them. Pure constants (and one predicate over the type tokens): the policy pack reads the same
names without any provider SDK. The node agent's own names (its states, reasons, Leases, image, namespace)
are in ``components.catalog.node_agent``.
"""

from __future__ import annotations

from typing import Final

PREFIX: Final = "gpu-platform.io/"

# Node labels the program sets on every GPU node it manages.
GPU_NODE_LABEL: Final = f"{PREFIX}gpu"  # "true" on every GPU node the stack manages
NODE_GROUP_LABEL: Final = f"{PREFIX}node-group"  # the Yandex node group (or bare-metal pool) name
GPU_MODEL_LABEL: Final = f"{PREFIX}gpu-model"  # the catalog model key, e.g. "V100-32GB"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"  # well-known label; selects a single bare-metal node

# Opt-in to the host-driver hand-over: the node agent hands a node's driver over only when its node
# carries it, so a mis-rendered selector cannot strip drivers from nodes nobody asked for.
HOST_DRIVER_REMOVAL_LABEL: Final = f"{PREFIX}host-driver-removal"
HOST_DRIVER_REMOVAL_ENABLED: Final = "enabled"

# The driver group of a pool when pools run different drivers: each NVIDIADriver resource selects the
# nodes whose label carries its group's name, so a node carries one value and matches one NVIDIADriver
# (the operator refuses overlapping selectors; components.catalog.nvidia_driver). Node groups get it at
# creation, bare-metal nodes through the NodePatch; it is set only on stacks with per-pool drivers.
DRIVER_GROUP_LABEL: Final = f"{PREFIX}driver"

# Server-side apply field managers of the patches the program owns.
#: The Pulumi project name (``Pulumi.yaml``): config keys are ``gpu-platform:<key>``, URNs carry it.
PROJECT: Final = "gpu-platform"
#: The one field manager of everything the program applies, a bare-metal node's NodePatch included (one per
#: Node: two patches of one Node under two managers conflict on the annotations both send, see
#: ``components.bare_metal.node_labels``).
FIELD_MANAGER: Final = "gpu-platform"
#: The manager of the separate bare-metal MIG NodePatch (``mig-config-<node>``) of releases before the patches
#: were merged: the ``pulumi up`` that merges them deletes that patch, and pulumi-kubernetes' delete releases
#: this manager's fields (tests/stack/test_server_side_apply.py replays that step). Read by the tests only.
LEGACY_MIG_FIELD_MANAGER: Final = "gpu-platform-mig"

# pulumi-kubernetes Patch resources (``NodePatch``, ``ConfigMapPatch``): server-side apply as the named
# field manager; a field another manager owns is a conflict unless forced (pulumi-kubernetes API docs of
# every ``*Patch`` resource: "Conflicts will result in an error by default, but can be forced using the
# pulumi.com/patchForce annotation").
PATCH_FIELD_MANAGER_ANNOTATION: Final = "pulumi.com/patchFieldManager"
PATCH_FORCE_ANNOTATION: Final = "pulumi.com/patchForce"

# Explicit ordering inside one kustomize.v2.Directory / yaml/v2 ConfigGroup: pulumi-kubernetes makes an
# object depend on the objects this annotation names, "<group>/namespaces/<namespace>/<kind>/<name>"
# (cli-utils dependency graph; pulumi-kubernetes docs, yaml/v2 ConfigFile "Explicit Dependency Ordering").
DEPENDS_ON_ANNOTATION: Final = "config.kubernetes.io/depends-on"

# Bare-metal nodes record the taints their config declares, so the policy pack checks GPU nodes of both kinds.
# The program never writes ``spec.taints``: core/v1 NodeSpec.taints carries no list-map markers, so
# server-side apply treats it as one atomic value (Kubernetes docs, "Server-Side Apply", merge strategy) and a
# patch would take the whole list over from kubelet --register-with-taints and the node lifecycle controller. Annotations are a map, so the NodePatch owns exactly these two keys.
DECLARED_TAINTS_ANNOTATION: Final = f"{PREFIX}declared-taints"  # "key=value:Effect,..." as in the config
UNTAINTED_ACCEPTED_ANNOTATION: Final = f"{PREFIX}untainted-accepted"  # "true": bareMetal allowUntainted

# The GPU Operator namespace records the driver facts for the policy pack.
DRIVER_OWNER_ANNOTATION: Final = f"{PREFIX}driver-owner"
DRIVER_VERSION_ANNOTATION: Final = f"{PREFIX}driver-version"
GPU_MODELS_ANNOTATION: Final = f"{PREFIX}gpu-models"
# On each NVIDIADriver resource: the GPU models and the newest CUDA level its pools' workloads need,
# so the policy pack checks each driver against its own pools (not against the whole fleet).
DRIVER_CUDA_ANNOTATION: Final = f"{PREFIX}cuda"
DRIVER_POOLS_ANNOTATION: Final = f"{PREFIX}pools"

# NVIDIA's MIG label, read by mig-manager. The GPU Operator itself writes all-disabled on MIG-capable
# nodes that carry none, as field manager gpu-operator (gpu_operator_chart.OPERATOR_FIELD_MANAGER, with
# its source), so a bare-metal NodePatch that carries the label is forced (CONTESTED_NODE_LABELS).
MIG_CONFIG_LABEL: Final = "nvidia.com/mig.config"
MIG_ALL_DISABLED: Final = "all-disabled"
# mig-manager's answer to a MIG label: pending, rebooting, success or failed (mig-parted v0.15.0
# pkg/mig/reconfigure/reconfigure.go); read by the node agent and the alerts.
MIG_CONFIG_STATE_LABEL: Final = "nvidia.com/mig.config.state"
#: Node labels the program sets that another field manager may own (the operator's, above): a NodePatch that
#: carries one is forced, since an unforced apply that changes a field another manager owns is a conflict.
#: Every other label and annotation of the patch only the program writes, so those patches are not forced.
CONTESTED_NODE_LABELS: Final = (MIG_CONFIG_LABEL,)

#: Node labels the program sets itself; a user label with one of these keys would override the platform's.
OWNED_NODE_LABELS: Final = (
    GPU_NODE_LABEL,
    NODE_GROUP_LABEL,
    GPU_MODEL_LABEL,
    HOST_DRIVER_REMOVAL_LABEL,
    MIG_CONFIG_LABEL,
    DRIVER_GROUP_LABEL,
)

#: Families of label, annotation and taint keys the platform writes under its own prefix (the node agent's states,
#: reasons and MIG-pending taint: ``catalog.node_agent.AGENT_PREFIX``; the spawner's PodDefault labels; the proof's
#: run and step labels). A user key in one of them would be overwritten or removed by the platform, or would make
#: the platform act on a node nobody asked it to touch.
OWNED_KEY_PREFIXES: Final = (f"{PREFIX}node-agent.", f"{PREFIX}gpu-pool-", f"{PREFIX}proof-")

# Pod Security Admission labels of a namespace whose pods need host access (GPU Operator operands).
PSA_PRIVILEGED: Final = {
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/audit": "privileged",
    "pod-security.kubernetes.io/warn": "privileged",
}
MANAGED_BY_LABELS: Final = {"app.kubernetes.io/managed-by": "gpu-platform"}

#: The namespace the program installs the GPU Operator into unless ``gpuOperator.namespace`` says otherwise:
#: NVIDIA's documented install namespace (``helm install ... -n gpu-operator --create-namespace``, docs
#: ``gpu-operator/getting-started.rst``). The node agent and the policy pack default to it too.
GPU_OPERATOR_NAMESPACE: Final = "gpu-operator"

# Pulumi type tokens: the provider resources the mocks, the review and the policies recognise (every one of
# them here, never typed again elsewhere)...
NODE_GROUP_TYPE: Final = "yandex:index/kubernetesNodeGroup:KubernetesNodeGroup"
GET_CLUSTER_TOKEN: Final = "yandex:index/getKubernetesCluster:getKubernetesCluster"
HELM_RELEASE_TYPE: Final = "kubernetes:helm.sh/v3:Release"  # what the program registers the GPU Operator as
HELM_RELEASE_TYPES: Final = (HELM_RELEASE_TYPE, "kubernetes:helm.sh/v4:Chart")
NAMESPACE_TYPE: Final = "kubernetes:core/v1:Namespace"
CONFIG_MAP_TYPE: Final = "kubernetes:core/v1:ConfigMap"
NODE_PATCH_TYPE: Final = "kubernetes:core/v1:NodePatch"
SECRET_TYPES: Final = ("kubernetes:core/v1:Secret", "kubernetes:core/v1:SecretPatch")
INGRESS_TYPES: Final = ("kubernetes:networking.k8s.io/v1:Ingress", "kubernetes:networking.k8s.io/v1:IngressPatch")
KUSTOMIZE_DIRECTORY_TYPE: Final = "kubernetes:kustomize/v2:Directory"
SERVICE_TYPES: Final = ("kubernetes:core/v1:Service", "kubernetes:core/v1:ServicePatch")
# The GPU Operator's custom resources (ClusterPolicy nvidia.com/v1, NVIDIADriver nvidia.com/v1alpha1): their
# spec blocks configure the operands the operator creates.
GPU_OPERATOR_RESOURCE_PREFIX: Final = "kubernetes:nvidia.com/"
NVIDIA_DRIVER_TYPE: Final = "kubernetes:nvidia.com/v1alpha1:NVIDIADriver"
# pulumi-command (the bare-metal host preparation) and pulumi-random (Kubeflow's generated secrets).
REMOTE_COMMAND_TYPE: Final = "command:remote:Command"
LOCAL_COMMAND_TYPE: Final = "command:local:Command"
COPY_TO_REMOTE_TYPE: Final = "command:remote:CopyToRemote"
RANDOM_PASSWORD_TYPE: Final = "random:index/randomPassword:RandomPassword"
# The engine's own resources: the root stack every URN hangs from, and a reference to another stack's outputs.
STACK_TYPE: Final = "pulumi:pulumi:Stack"
STACK_REFERENCE_TYPE: Final = "pulumi:pulumi:StackReference"
#: Every pulumi-kubernetes type token starts so.
KUBERNETES_TYPE_PREFIX: Final = "kubernetes:"
#: Type tokens that are no object in the cluster: the providers, and pulumi-kubernetes' provider-side components
#: (a Helm release or chart, a kustomize Directory, a YAML ConfigFile/ConfigGroup), whose children are the objects.
NOT_CLUSTER_OBJECT_PREFIXES: Final = (
    "pulumi:providers:",
    "kubernetes:helm.sh/",
    "kubernetes:kustomize/",
    "kubernetes:yaml/",
)

# ...and our own ComponentResources (``gpu-platform:<capability>:<Name>``).
CLUSTER_ACCESS_TYPE: Final = "gpu-platform:cluster:ClusterAccess"
GPU_NODE_GROUP_TYPE: Final = "gpu-platform:yandex:GpuNodeGroup"
HOST_PREPARATION_TYPE: Final = "gpu-platform:baremetal:HostPreparation"
NODE_LABELS_TYPE: Final = "gpu-platform:baremetal:NodeLabels"
GPU_OPERATOR_TYPE: Final = "gpu-platform:gpu:GpuOperator"
NODE_AGENT_TYPE: Final = "gpu-platform:gpu:NodeAgent"
GPU_SMOKE_TEST_TYPE: Final = "gpu-platform:gpu:GpuSmokeTest"
GPU_DRIVERS_TYPE: Final = "gpu-platform:gpu:GpuDrivers"
GPU_PROOF_TYPE: Final = "gpu-platform:gpu:GpuProof"  # the per-node proof of a driver step (an awaited Job)
GPU_PROOF_ACCESS_TYPE: Final = "gpu-platform:gpu:GpuProofAccess"  # its namespace, ServiceAccount, RBAC and code
#: Where the driver steps' proof Jobs and their CUDA pods run: not the operator's namespace, whose pods must all
#: come from the operator's registries (policy gpu-operator-images-allowed-registries), while the proof Job runs on
#: the node agent's Python image.
PROOF_NAMESPACE: Final = "gpu-platform-proof"
#: On every CUDA pod of a proof: the run (the proof Job's pod) and the step it belongs to, and the node it is for.
#: (Read with the rest of the proof's vocabulary in ``catalog.proof``.)
PROOF_RUN_LABEL: Final = f"{PREFIX}proof-run"
PROOF_STEP_LABEL: Final = f"{PREFIX}proof-step"
PROOF_NODE_ANNOTATION: Final = f"{PREFIX}proof-node"
KUBEFLOW_TYPE: Final = "gpu-platform:kubeflow:Kubeflow"
OBSERVABILITY_TYPE: Final = "gpu-platform:observability:Observability"

# Environment variables the program reads.
OFFLINE_ENV: Final = "GPU_PLATFORM_OFFLINE"  # "1" under the offline preview

# Kubeflow PodDefaults, one per GPU pool in every Profile namespace: the spawner sets this label (per pool)
# to "true" on a notebook when its PodDefault is ticked (catalog.kubeflow.v1_10_2.spawner.PODDEFAULT_KIND).
GPU_POOL_PODDEFAULT_PREFIX: Final = "gpu-pool-"  # PodDefault name: gpu-pool-<pool>
GPU_POOL_PODDEFAULT_LABEL_PREFIX: Final = f"{PREFIX}gpu-pool-"  # selector label: gpu-platform.io/gpu-pool-<pool>
# Kubeflow Profiles as Pulumi registers them (the program's CustomResource, or a YAML/kustomize object).
PROFILE_TYPES: Final = ("kubernetes:kubeflow.org/v1:Profile", "kubernetes:kubeflow.org/v1beta1:Profile")


def is_cluster_object(resource_type: str) -> bool:
    """True for a type token of an object the program declares in the cluster itself (a Kubernetes kind or its
    Patch), False for a provider, a provider-side component (:data:`NOT_CLUSTER_OBJECT_PREFIXES`) or another
    provider's resource."""
    return resource_type.startswith(KUBERNETES_TYPE_PREFIX) and not resource_type.startswith(
        NOT_CLUSTER_OBJECT_PREFIXES
    )
