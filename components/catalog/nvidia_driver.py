"""Facts about the GPU Operator's ``NVIDIADriver`` resource: one driver per set of nodes, and how to wait for it.

Why: a fleet that mixes GPU generations needs more than one driver (V100 stops at R580, newer pools may
need a newer branch for their CUDA level). With ``driver.nvidiaDriverCRD.enabled`` the operator runs one
driver DaemonSet per ``NVIDIADriver`` resource, on the nodes its ``nodeSelector`` matches. The program
writes those resources itself (no default one: see Who owns a node), proves each step on every node (a proof
Job, not the resources' status), and orders canary upgrades with Pulumi dependencies.

Sources:
- Chart v26.7.0 (``.upstream/gpu-operator-v26.7.0``): ``crds/nvidia.com_nvidiadrivers.yaml`` (group
  nvidia.com, version v1alpha1, kind NVIDIADriver, cluster-scoped; ``spec`` requires ``default``,
  ``driverType``, ``image``; ``status.state`` enum ignored/ready/notReady/disabled; ``driverType`` and
  ``usePrecompiled`` carry the CEL rule ``self == oldSelf`` ("immutable field. Please create a new
  NvidiaDriver resource instead"); a ``default: true`` resource must not have a nodeSelector).
  ``values.yaml`` ``driver.nvidiaDriverCRD`` {enabled: false, deployDefaultCR: true, driverType: gpu,
  nodeSelector: {}}; ``templates/nvidiadriver.yaml`` writes one resource named ``default`` with
  ``default: true`` and no nodeSelector (every GPU node) when enabled and deployDefaultCR;
  ``templates/clusterpolicy.yaml`` writes ``driver.useNvidiaDriverCRD`` and, only when it is false,
  the driver's version/kernelModuleType/usePrecompiled; ``upgradePolicy`` is written either way.
- NVIDIA/gpu-operator v26.7.0 ``controllers/nvidiadriver_controller.go``: the reconciler validates that the
  resource's nodeSelector does not overlap another's ("only one driver is deployed per GPU node") and
  otherwise sets ``status.state: notReady`` with condition reason ``ConflictingNodeSelector``; a
  ClusterPolicy without ``useNvidiaDriverCRD`` leaves it ``disabled``; ``ready`` only once every
  state it syncs (the driver DaemonSet's pods) is ready. ``internal/state/state_skel.go``
  ``isDaemonSetReady`` asks that every available pod is an updated one (``UpdatedNumberScheduled ==
  NumberAvailable``) but not that the DaemonSet's status was written for its current template (that
  branch compares no ``observedGeneration``): right after a template change the old counts still say
  ready, and a node whose new pod is not yet created counts as neither. The CRD's ``status`` has
  no ``observedGeneration`` (only ``conditions``, ``namespace``, ``state``; a condition's own
  ``observedGeneration`` is optional), and pulumi-kubernetes' jsonpath wait compares
  ``observedGeneration`` only where the object has one: after a spec change ``pulumi up`` reads the old
  ``ready``; while a node lags it says ``notReady`` with no node's name. So the program awaits no status (no
  ``pulumi.com/waitFor``; pulumi-kubernetes awaits no custom resource by itself unless ``PULUMI_K8S_AWAIT_ALL``
  is set, pulumi/pulumi-kubernetes#3143): the proof Job (``components.proof.component``) is the gate, checking
  each node for the declared driver and running CUDA on it, and naming the nodes that lag.
- Who owns a node (v26.7.0): ``internal/nvidiadriver/nvidiadriver.go`` ``AssignOwners`` labels every node with
  ``nvidia.com/gpu.present=true`` ``nvidia.com/gpu-operator.driver.owner=<NVIDIADriver>``: the one non-default
  resource whose nodeSelector matches (two matching is an error), else the ``default: true`` resource, else
  no owner at all (the label is removed: the node gets no driver, and nothing reports it). A default
  resource therefore covers only nodes no other resource selects; it does not overlap them.
- The move from the ClusterPolicy driver (v26.7.0): ``controllers/state_manager.go`` deletes the
  ClusterPolicy's driver DaemonSet with ``DeletePropagationOrphan`` (its pods keep running, unowned);
  ``controllers/nodelabeling_controller.go`` ``labelNodesWithOrphanedDriverPods`` marks each node an
  NVIDIADriver owns that still runs such a pod ``nvidia.com/gpu-driver-upgrade-state=upgrade-required``; the
  upgrade controller then replaces the orphan under that NVIDIADriver's policy. With ``autoUpgrade: false``
  nothing replaces it (``controllers/upgrade_controller.go`` skips the resource and clears its nodes' upgrade
  state), and the new pod stays Pending: both DaemonSets carry a required pod anti-affinity on
  ``app.kubernetes.io/component`` in (nvidia-driver, nvidia-vgpu-manager) per ``kubernetes.io/hostname``.
- Waves (v26.7.0 ``controllers/upgrade_controller.go`` ``reconcileNVIDIADriverUpgrades``): with
  ``useNvidiaDriverCRD`` the upgrade controller builds one state of every driver pod, partitions it by the
  node's owner label, and applies EACH resource's own ``upgradePolicy`` (``GetUpgradePolicyWithDefaults``)
  to its own nodes: ``maxUnavailable`` is scaled over ``GetTotalManagedNodes`` of that partition
  (k8s-operator-libs ``pkg/upgrade/common_manager.go``: every managed node, cordoned and NotReady ones
  included). The ClusterPolicy's ``upgradePolicy`` is not read in that mode; without it the budget is one
  over the whole cluster (``reconcileClusterPolicyDriverUpgrades``).
- pulumi-kubernetes user-defined await logic (pulumi/pulumi-kubernetes#3134, in 4.18+; this project
  pins 4.34.2): the ``pulumi.com/waitFor`` annotation takes ``condition=Type[=Value]`` or
  ``jsonpath={expr}[=Value]`` with kubectl's ``get -o jsonpath`` syntax; a JSON list of such
  expressions must all hold (pulumi/pulumi-kubernetes#3521).
- values.yaml ``driver.upgradePolicy``: ``maxParallelUpgrades`` "0 means no limit"; ``maxUnavailable``
  "absolute number or a percentage of total nodes at the start of upgrade ... calculated from percentage
  by rounding up".
- The driver pod and what the node reports (evidence the proof reads): driver pods carry
  ``app.kubernetes.io/component=nvidia-driver`` and run container ``nvidia-driver-ctr`` with image
  ``<repository>/<image>:<version>-<os>`` (``-<kernel>-<os>`` when precompiled; v26.7.0
  ``api/nvidia/v1alpha1/nvidiadriver_types.go`` ``GetImagePath``/``GetPrecompiledImagePath``,
  ``manifests/state-driver/0500_daemonset.yaml``); the DaemonSet controller labels each pod
  ``controller-revision-hash`` with the ControllerRevision it was made from, and k8s-operator-libs
  ``pkg/upgrade`` restarts a pod whose hash is not its DaemonSet's newest revision's (``common_manager.go``
  ``podInSyncWithDS``: ``GetPodControllerRevisionHash`` against ``GetDaemonsetControllerRevisionHash``, in
  ``pod_manager.go``; the facts and ``revision_hash`` are in ``components.catalog.gpu_operator_upgrade``). The
  ``pod-template-generation`` label is no such evidence: after a template rollback (A, B, A) the DaemonSet's
  generation moves on while the pods of A are current again. GPU Feature Discovery (the chart's
  ``gfd`` is k8s-device-plugin v0.20.0) labels the node ``nvidia.com/cuda.driver-version.full`` with the
  driver NVML reports (``internal/lm/nvml.go`` ``newVersionLabeler``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Final

# The facts about the driver pods and the upgrade controller have one home (``gpu_operator_upgrade``); the
# names below are this module's views of them, kept for its readers. ``DRIVER_CONTAINER`` and
# ``UPGRADE_STATE_LABEL`` (the upgrade controller's per-node state) are re-exported as they are.
from components.catalog.gpu_operator_upgrade import DRIVER_COMPONENT, DRIVER_COMPONENT_LABEL, DRIVER_OWNER_LABEL
from components.catalog.gpu_operator_upgrade import DRIVER_CONTAINER as DRIVER_CONTAINER
from components.catalog.gpu_operator_upgrade import UPGRADE_STATE_LABEL as UPGRADE_STATE_LABEL

API_VERSION: Final = "nvidia.com/v1alpha1"
KIND: Final = "NVIDIADriver"
DRIVER_TYPE: Final = "gpu"
READY_STATE: Final = "ready"
CONFLICT_REASON: Final = "ConflictingNodeSelector"
#: Spec fields the CRD forbids changing in place: a change needs a new resource (replaceOnChanges).
IMMUTABLE_SPEC_FIELDS: Final = ("driverType", "usePrecompiled")


#: The driver version a GPU node runs, as nvidia-smi reports it (one line per GPU; tests/fixtures/nvidia-smi).
DRIVER_VERSION_QUERY: Final = "nvidia-smi --query-gpu=driver_version --format=csv,noheader"
#: Seconds between two looks at the node's driver while the smoke Job waits for the declared one.
DRIVER_POLL_SECONDS: Final = 10

_PERCENT = re.compile(r"(\d+)%\Z")


#: The node label the operator writes with the NVIDIADriver that owns the node (``internal/consts/consts.go``).
OWNER_LABEL: Final = DRIVER_OWNER_LABEL
#: Only GPU nodes get an owner (``AssignOwners`` lists nodes with this label).
GPU_PRESENT_LABEL: Final = "nvidia.com/gpu.present"
#: Driver pods, whichever DaemonSet (ClusterPolicy's or an NVIDIADriver's) made them.
DRIVER_POD_COMPONENT: Final = (DRIVER_COMPONENT_LABEL, DRIVER_COMPONENT)
#: GPU Feature Discovery's label with the driver NVML reports on the node.
GFD_DRIVER_VERSION_LABEL: Final = "nvidia.com/cuda.driver-version.full"


def resource_name(group: str) -> str:
    """The NVIDIADriver resource of one driver group (cluster-scoped, so prefixed with what owns it)."""
    return f"gpu-platform-{group}"


def max_unavailable_nodes(max_unavailable: str | int, nodes: int) -> int:
    """``maxUnavailable`` as a node count: a percentage of ``nodes`` rounded up, or the number itself."""
    if isinstance(max_unavailable, int):
        return max_unavailable
    match = _PERCENT.match(max_unavailable.strip())
    if match:
        return math.ceil(nodes * int(match.group(1)) / 100)
    return int(max_unavailable)


def nodes_per_wave(nodes: int, max_parallel_upgrades: int, max_unavailable: str | int) -> int:
    """How many nodes the upgrade controller takes at once: ``maxParallelUpgrades`` (0: all), bounded by
    ``maxUnavailable``."""
    parallel = nodes if max_parallel_upgrades == 0 else max_parallel_upgrades
    return max(0, min(parallel, max_unavailable_nodes(max_unavailable, nodes), nodes))


def upgrade_waves(nodes: int, max_parallel_upgrades: int, max_unavailable: str | int) -> int | None:
    """``ceil(nodes / per wave)``: how many rounds an upgrade of ``nodes`` takes; None when it cannot
    progress (``maxUnavailable`` resolves to 0 nodes)."""
    if nodes == 0:
        return 0
    per_wave = nodes_per_wave(nodes, max_parallel_upgrades, max_unavailable)
    return math.ceil(nodes / per_wave) if per_wave else None


def selecting_drivers(node_labels: Mapping[str, str], selectors: Mapping[str, Mapping[str, str]]) -> list[str]:
    """The non-default NVIDIADriver resources whose nodeSelector matches a node with ``node_labels``, sorted.

    ``AssignOwners`` gives the node to the one match; none leaves it to a default resource (or to no
    driver at all), two are an error for the whole cluster. Asked by the config check and the policy pack.
    """
    return sorted(
        name for name, selector in selectors.items() if all(node_labels.get(k) == v for k, v in selector.items())
    )


def driver_image_prefix(repository: str, image: str, version: str) -> str:
    """What the driver container's image of ``version`` starts with: ``<repository>/<image>:<version>-``
    (the operator appends ``-<os>``, or ``-<kernel>-<os>`` for precompiled drivers); a digest is exact."""
    if version.startswith("sha256:"):
        return f"{repository}/{image}@{version}"
    return f"{repository}/{image}:{version}-"


def driver_check_script(version: str) -> str:
    """A POSIX sh loop that passes once every GPU of the node reports ``version``.

    Until then it prints what it found and looks again every ``DRIVER_POLL_SECONDS``: a pod that lands
    on a node still on the old driver never passes (the Job's deadline fails it), and one that the
    upgrade controller evicts for the node's own upgrade is retried on the upgraded node.
    """
    return (
        f'want="{version}"\n'
        "while :; do\n"
        f'  found="$({DRIVER_VERSION_QUERY} | sort -u)"\n'
        '  if [ "$found" = "$want" ]; then echo "driver $found as declared"; exit 0; fi\n'
        '  echo "node ${NODE_NAME:-?} runs driver ${found:-none}, the stack declares $want; waiting"\n'
        f"  sleep {DRIVER_POLL_SECONDS}\n"
        "done\n"
    )


#: Precompiled driver images (``usePrecompiled: true``) are tagged ``<branch>-<kernel>-<os>``
#: (``nvcr.io/nvidia/driver:580-6.8.0-60-generic-ubuntu24.04``): the GPU Operator builds the tag from the
#: driver *branch*, the node's kernel and its OS, and NVIDIA publishes them for Ubuntu kernels only (GPU
#: Operator docs, "Precompiled Driver Containers"). A full version (580.95.05) names no precompiled image.
PRECOMPILED_TAG_FORM: Final = "<branch>-<kernel>-<os>"


def precompiled_problem(version: str) -> str | None:
    """Why ``usePrecompiled: true`` cannot run the driver ``version``, or None (a bare branch such as 580)."""
    if version.isdigit():
        return None
    return (
        f"true with driver version {version}: precompiled images are tagged {PRECOMPILED_TAG_FORM} by driver "
        "branch and exist for Ubuntu kernels only, so no image carries a full version and the driver pods "
        "would never start; set false (the operator builds the driver for each node's kernel)"
    )
