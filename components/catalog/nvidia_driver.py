"""Facts about the GPU Operator's ``NVIDIADriver`` resource: one driver per set of nodes, and how to wait for it.

Why: a fleet that mixes GPU generations needs more than one driver (V100 stops at R580, newer pools may
need a newer branch for their CUDA level). With ``driver.nvidiaDriverCRD.enabled`` the operator runs one
driver DaemonSet per ``NVIDIADriver`` resource, on the nodes its ``nodeSelector`` matches. The program
writes those resources itself (never the chart's default one where it would overlap), waits for each to
report ready, and orders canary upgrades with Pulumi dependencies.

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
- NVIDIA/gpu-operator ``controllers/nvidiadriver_controller.go``: the reconciler validates that the
  resource's nodeSelector does not overlap another's ("only one driver is deployed per GPU node") and
  otherwise sets ``status.state: notReady`` with condition reason ``ConflictingNodeSelector``; a
  ClusterPolicy without ``useNvidiaDriverCRD`` leaves it ``disabled``; ``ready`` only once every
  state it syncs (the driver DaemonSet's pods) is ready. ``internal/state/state_skel.go``
  ``isDaemonSetReady`` checks pods ready/available, not that they run the new version: the driver
  DaemonSet is ``OnDelete`` and the upgrade controller replaces pods node by node, so ``ready`` can be
  read while old pods still run. That is why the smoke Jobs check the version on the node.
- NVIDIA/gpu-operator ``controllers/nvidiadriver_migration.go`` (main): nodes an NVIDIADriver owns that
  still run a ClusterPolicy driver pod are labelled ``upgrade-required``, so the upgrade controller
  replaces those pods in its normal controlled flow (the move from the ClusterPolicy driver).
- pulumi-kubernetes user-defined await logic (pulumi/pulumi-kubernetes#3134, in 4.18+; this project
  pins 4.34.2): the ``pulumi.com/waitFor`` annotation takes ``condition=Type[=Value]`` or
  ``jsonpath={expr}[=Value]`` with kubectl's ``get -o jsonpath`` syntax; a JSON list of such
  expressions must all hold (pulumi/pulumi-kubernetes#3521).
- values.yaml ``driver.upgradePolicy``: ``maxParallelUpgrades`` "0 means no limit"; ``maxUnavailable``
  "absolute number or a percentage of total nodes at the start of upgrade ... calculated from percentage
  by rounding up".
"""

from __future__ import annotations

import math
import re
from typing import Final

API_VERSION: Final = "nvidia.com/v1alpha1"
KIND: Final = "NVIDIADriver"
DRIVER_TYPE: Final = "gpu"
READY_STATE: Final = "ready"
CONFLICT_REASON: Final = "ConflictingNodeSelector"
#: Spec fields the CRD forbids changing in place: a change needs a new resource (replaceOnChanges).
IMMUTABLE_SPEC_FIELDS: Final = ("driverType", "usePrecompiled")

#: pulumi-kubernetes waits for a custom resource until this holds (``pulumi up`` fails on timeout).
WAIT_FOR_ANNOTATION: Final = "pulumi.com/waitFor"
WAIT_FOR_READY: Final = "jsonpath={.status.state}=" + READY_STATE

#: The driver version a GPU node runs, as nvidia-smi reports it (one line per GPU; tests/fixtures/nvidia-smi).
DRIVER_VERSION_QUERY: Final = "nvidia-smi --query-gpu=driver_version --format=csv,noheader"
#: Seconds between two looks at the node's driver while the smoke Job waits for the declared one.
DRIVER_POLL_SECONDS: Final = 10

_PERCENT = re.compile(r"(\d+)%\Z")


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
