"""What the GPU Operator's own node machinery does to a GPU node: its driver pods, its upgrade controller, its pausers.

Why this module: the node agent (``components/node_agent``) acts on the same nodes as the GPU Operator's upgrade
controller (k8s-operator-libs ``pkg/upgrade``, vendored in gpu-operator v26.7.0), k8s-driver-manager and
mig-manager. Every value here is a fact about one of them, read from the pinned source under ``.upstream/``;
``components.catalog.upstream_facts`` names the file and symbol of each and its test reads that file, so a pin
bump that changes one of them fails by name. Standard library only: the node agent's ConfigMap and the proof's
ship this file.

The cooperation protocol built on these facts is in ``docs/node-agent.md`` ("Sharing nodes with the GPU
Operator").
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

# -- driver pods --------------------------------------------------------------------------------------------
#: Every driver pod and DaemonSet, in both modes (ClusterPolicy: ``assets/state-driver/0500_daemonset.yaml``;
#: NVIDIADriver: ``manifests/state-driver/0500_daemonset.yaml``, for ``driverType`` gpu).
DRIVER_COMPONENT_LABEL: Final = "app.kubernetes.io/component"
DRIVER_COMPONENT: Final = "nvidia-driver"
#: The ``app`` label of the ClusterPolicy's one driver DaemonSet and its pods.
CLUSTER_POLICY_DRIVER_APP: Final = "nvidia-driver-daemonset"
#: The ``app`` label of an NVIDIADriver's DaemonSets: ``nvidia-<driverType>-driver-<os>-<hash>``
#: (``internal/state/driver.go`` ``getDriverAppName``; the hash is of the CR's UID and the node pool's kernel; a
#: name over 63 characters has its prefix cut so that the hash stays whole). The agent never builds this name: it
#: finds the DaemonSets by :data:`DRIVER_COMPONENT_LABEL`.
NVIDIADRIVER_APP_FORMAT: Final = "nvidia-{driver_type}-driver-{os}-{hash}"
#: The driver container, in both modes.
DRIVER_CONTAINER: Final = "nvidia-driver-ctr"
#: The NVIDIADriver that owns a node (``internal/consts/consts.go`` ``NVIDIADriverOwnerLabel``); the operator puts
#: it in each NVIDIADriver DaemonSet's nodeSelector (``internal/state/nodepool.go``).
DRIVER_OWNER_LABEL: Final = "nvidia.com/gpu-operator.driver.owner"
#: The DaemonSet controller's label on each pod: the ControllerRevision it was made from.
#: k8s-operator-libs ``pkg/upgrade/pod_manager.go`` (``PodControllerRevisionHashLabelKey``) judges a driver pod
#: current when this label equals the suffix of its DaemonSet's newest ControllerRevision (by ``.revision``)
#: after ``<daemonset name>-`` (``GetDaemonsetControllerRevisionHash``).
CONTROLLER_REVISION_HASH_LABEL: Final = "controller-revision-hash"

# -- the upgrade controller ---------------------------------------------------------------------------------
#: ``upgrade.SetDriverName("gpu")`` in ``cmd/gpu-operator/main.go``: the ``%s`` of every key below.
UPGRADE_DRIVER_NAME: Final = "gpu"
#: ``UpgradeStateLabelKeyFmt``: the node's place in the operator's upgrade.
UPGRADE_STATE_LABEL: Final = f"nvidia.com/{UPGRADE_DRIVER_NAME}-driver-upgrade-state"
#: ``UpgradeSkipNodeLabelKeyFmt``: ``"true"`` keeps a node from leaving ``upgrade-required`` (``SkipNodeUpgrade``,
#: read in ``ProcessUpgradeRequiredNodes``); a node already past that state goes on.
UPGRADE_SKIP_LABEL: Final = f"nvidia.com/{UPGRADE_DRIVER_NAME}-driver-upgrade.skip"
UPGRADE_SKIP_VALUE: Final = "true"
#: ``UpgradeInitialStateAnnotationKeyFmt``: written when a node is moved to ``upgrade-required`` while it is
#: unschedulable; at the end of the upgrade the operator then does not uncordon it
#: (``updateNodeToUncordonOrDoneState``) and removes the annotation.
UPGRADE_INITIAL_STATE_ANNOTATION: Final = (
    f"nvidia.com/{UPGRADE_DRIVER_NAME}-driver-upgrade.node-initial-state.unschedulable"
)


class UpgradeState(StrEnum):
    """Values of :data:`UPGRADE_STATE_LABEL` (vendored ``pkg/upgrade/consts.go``)."""

    UNKNOWN = ""
    UPGRADE_REQUIRED = "upgrade-required"
    CORDON_REQUIRED = "cordon-required"
    WAIT_FOR_JOBS_REQUIRED = "wait-for-jobs-required"
    POD_DELETION_REQUIRED = "pod-deletion-required"
    DRAIN_REQUIRED = "drain-required"
    NODE_MAINTENANCE_REQUIRED = "node-maintenance-required"
    POST_MAINTENANCE_REQUIRED = "post-maintenance-required"
    POD_RESTART_REQUIRED = "pod-restart-required"
    VALIDATION_REQUIRED = "validation-required"
    UNCORDON_REQUIRED = "uncordon-required"
    DONE = "upgrade-done"
    FAILED = "upgrade-failed"


#: The states in which the operator is upgrading the node (from ``cordon-required`` to ``uncordon-required``):
#: it cordons, deletes GPU pods, drains, restarts the driver and uncordons. ``upgrade-failed`` keeps the node
#: cordoned until its driver pod is in sync and Ready (``ProcessUpgradeFailedNodes``), so it holds the node too.
OPERATOR_HOLDS_STATES: Final = frozenset(
    {
        UpgradeState.CORDON_REQUIRED,
        UpgradeState.WAIT_FOR_JOBS_REQUIRED,
        UpgradeState.POD_DELETION_REQUIRED,
        UpgradeState.DRAIN_REQUIRED,
        UpgradeState.NODE_MAINTENANCE_REQUIRED,
        UpgradeState.POST_MAINTENANCE_REQUIRED,
        UpgradeState.POD_RESTART_REQUIRED,
        UpgradeState.VALIDATION_REQUIRED,
        UpgradeState.UNCORDON_REQUIRED,
        UpgradeState.FAILED,
    }
)

# -- what the operator calls a GPU pod (``gpuPodSpecFilter`` in ``cmd/gpu-operator/main.go``) ---------------
#: Resource name prefixes of a GPU pod's containers (limits or requests).
GPU_POD_RESOURCE_PREFIXES: Final = ("nvidia.com/gpu", "nvidia.com/mig-")
#: A pod holding a ResourceClaim allocated by this DRA driver is a GPU pod too (``PodHasNVIDIAGPUClaim``,
#: ``controllers/nodelabeling_controller.go`` ``NVIDIAGPUDRADriverName``); a claim that cannot be read counts.
GPU_DRA_DRIVER: Final = "gpu.nvidia.com"

# -- operand pausers ----------------------------------------------------------------------------------------
#: mig-manager (mig-parted ``pkg/mig/reconfigure/reconfigure.go`` ``shutdownKubernetesGPUClients``) sets these to
#: :data:`PAUSED_FOR_MIG` before a change; ``nvidia.com/gpu.deploy.client`` only where it is present.
MIG_MANAGER_PAUSED_LABELS: Final = (
    "nvidia.com/gpu.deploy.device-plugin",
    "nvidia.com/gpu.deploy.gpu-feature-discovery",
    "nvidia.com/gpu.deploy.dcgm-exporter",
    "nvidia.com/gpu.deploy.dcgm",
    "nvidia.com/gpu.deploy.nvsm",
    "nvidia.com/gpu.deploy.client",
)
PAUSED_FOR_MIG: Final = "paused-for-mig-change"
#: k8s-driver-manager (``cmd/driver-manager/main.go`` ``evictAllGPUOperatorComponents``, ``evictKubeletPlugin``)
#: sets these to :data:`PAUSED_FOR_DRIVER_UPGRADE` (``pausedStr``) while the driver is reloaded, and back to
#: ``true`` (``maybeSetTrue``) after; a value other than true/false gets ``_paused-for-driver-upgrade`` appended.
DRIVER_MANAGER_PAUSED_LABELS: Final = (
    "nvidia.com/gpu.deploy.operator-validator",
    "nvidia.com/gpu.deploy.container-toolkit",
    "nvidia.com/gpu.deploy.device-plugin",
    "nvidia.com/gpu.deploy.gpu-feature-discovery",
    "nvidia.com/gpu.deploy.dcgm-exporter",
    "nvidia.com/gpu.deploy.dcgm",
    "nvidia.com/gpu.deploy.nvsm",
    "nvidia.com/gpu.deploy.sandbox-validator",
    "nvidia.com/gpu.deploy.sandbox-device-plugin",
    "nvidia.com/gpu.deploy.vgpu-device-manager",
    "nvidia.com/gpu.deploy.dra-validator",
    "nvidia.com/gpu.deploy.dcgm-dra",
    "nvidia.com/gpu.deploy.dcgm-exporter-dra",
    "nvidia.com/gpu.deploy.mig-manager",
    "nvidia.com/gpu.deploy.client",
    "nvidia.com/gpu.deploy.dra-driver",
)
PAUSED_FOR_DRIVER_UPGRADE: Final = "paused-for-driver-upgrade"


def is_paused(value: str) -> bool:
    """An operand label one of the two pausers holds paused (``paused-for-…``, alone or appended with ``_``)."""
    return PAUSED_FOR_MIG in value or PAUSED_FOR_DRIVER_UPGRADE in value


def operator_holds(node_labels: dict[str, str]) -> bool:
    """The operator's upgrade controller is upgrading the node (or keeps it cordoned after a failed upgrade)."""
    return node_labels.get(UPGRADE_STATE_LABEL, "") in OPERATOR_HOLDS_STATES


def revision_hash(daemon_set_name: str, revisions: list[tuple[str, int]]) -> str:
    """The hash a current pod of ``daemon_set_name`` carries: the newest of its ControllerRevisions
    ``(name, revision)`` whose name starts with the DaemonSet's, after ``<name>-``; "" when it has none.

    As ``GetDaemonsetControllerRevisionHash`` does it: a prefix match on the name, the highest ``.revision``.
    """
    own = [(revision, name) for name, revision in revisions if name.startswith(daemon_set_name)]
    if not own:
        return ""
    return max(own)[1].removeprefix(f"{daemon_set_name}-")
