"""Names of ``components/host_driver_removal/host-driver-removal.sh``: the labels, states, reasons and env it uses.

Yandex node groups with ``gpu_environment: runc_drivers_cuda`` boot with an NVIDIA driver installed by the
``.run`` installer. With the GPU Operator's driver enabled, its driver manager labels such a node
``nvidia.com/gpu.deploy.driver=pre-installed`` and never manages it again. The script removes that host driver,
one node at a time, and hands the node over to the operator's containerised driver.

This module is the single place that the Pulumi component (which renders the DaemonSet, RBAC and env), the docs
and the tests take the script's names from. It is deliberately pure (no Pulumi import) so docs tooling and tests
can import it without a Pulumi runtime. ``tests/host_driver_removal/test_script.py`` checks that the env
defaults below are the ones the script really uses, so a drift fails CI instead of surprising an operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Final

from components.catalog.names import HOST_DRIVER_REMOVAL_ENABLED, HOST_DRIVER_REMOVAL_LABEL
from components.catalog.names import PREFIX as NAMES_PREFIX

#: Every label and annotation the script owns starts with this prefix, so ``kubectl get nodes -L`` and a
#: cleanup can find them all.
PREFIX: Final = NAMES_PREFIX

# --------------------------------------------------------------------------------------------------------------
# Opt-in. The DaemonSet's nodeSelector uses it; the script checks it again before starting a fresh attempt, so a
# mis-rendered nodeSelector cannot strip drivers from nodes nobody asked for.
# --------------------------------------------------------------------------------------------------------------
OPT_IN_LABEL: Final = HOST_DRIVER_REMOVAL_LABEL
OPT_IN_VALUE: Final = HOST_DRIVER_REMOVAL_ENABLED


class RemovalState(StrEnum):
    """Values of :data:`STATE_LABEL`; the state machine the script records on the Node.

    The label is the primary record; the host marker file (:data:`HOST_MARKER_FILE`) mirrors it so a reboot or
    a lost label cannot make the script forget that it already touched the driver.
    """

    #: Waiting for the rollout lock (another node is being processed, or the rollout is halted). Nothing on the
    #: node or host has been changed; the container exits with :attr:`ExitCode.RETRY_LATER` and restarts.
    PENDING = "pending"
    #: Lock held; spec.unschedulable recorded; node cordoned; operand labels paused; GPU pods being evicted.
    DRAINING = "draining"
    #: The driver is being touched (services stopped, modules unloaded, nvidia-uninstall). From here on a
    #: failure keeps the node cordoned.
    REMOVING = "removing"
    #: A kernel module stayed loaded after uninstall; one reboot was requested (boot id recorded).
    REBOOTING = "rebooting"
    #: Host driver files and modules verified gone; ``nvidia.com/gpu.deploy.driver=true`` set; waiting for the
    #: operator's driver to become ready before uncordoning.
    REMOVED = "removed"
    #: Terminal success: the GPU Operator owns the driver; the node is schedulable again if it was before.
    HANDED_OVER = "handed-over"
    #: Terminal: the script refused to act (see :class:`Reason`); nothing was changed.
    SKIPPED = "skipped"
    #: Terminal until reset: see :data:`REASON_LABEL` and :data:`DETAIL_ANNOTATION`, and the node's Events.
    FAILED = "failed"


#: States after which the driver has been touched: a failure there must not uncordon the node.
DRIVER_TOUCHED_STATES: Final = frozenset({RemovalState.REMOVING, RemovalState.REBOOTING, RemovalState.REMOVED})
#: States in which the script does nothing but idle (reset: remove :data:`STATE_LABEL`, delete the pod).
TERMINAL_STATES: Final = frozenset({RemovalState.HANDED_OVER, RemovalState.SKIPPED, RemovalState.FAILED})

#: The state label; value from :class:`RemovalState`.
STATE_LABEL: Final = f"{PREFIX}driver-removal.state"
#: Short, label-safe reason (values from :class:`Reason`) for pending/rebooting/skipped/failed; absent otherwise.
REASON_LABEL: Final = f"{PREFIX}driver-removal.reason"


class Reason(StrEnum):
    """Values of :data:`REASON_LABEL`. Kept short and label-safe (``[a-z0-9-]``, <= 63 chars) so they can be
    used in selectors and alerts; the human-readable story goes to :data:`DETAIL_ANNOTATION` and an Event."""

    # pending
    LOCK_HELD = "lock-held"  #: another node holds the rollout Lease and it has not expired
    ROLLOUT_HALTED = "rollout-halted"  #: a node failed after touching its driver and halted the rollout
    # skipped
    PACKAGE_MANAGED = "package-managed"  #: dpkg/rpm owns nvidia-smi or libnvidia-ml: not ours to remove
    MIXED_INSTALL = "mixed-install"  #: both .run traces and package-owned files: refuse, a human must look
    UNKNOWN_INSTALL = "unknown-install"  #: driver files with neither .run traces nor a package owner
    UNINSTALLER_MISSING = "uninstaller-missing"  #: .run backup log but no nvidia-uninstall/nvidia-installer
    # rebooting
    MODULES_BUSY = "modules-busy"  #: nvidia module could not be unloaded; one reboot requested/awaited
    # failed before the driver was touched (node uncordoned if it was schedulable, lock released)
    OPERAND_WAIT_TIMEOUT = "operand-wait-timeout"  #: paused GPU Operator operand pods did not leave in time
    EVICTION_TIMEOUT = "eviction-timeout"  #: GPU pods not evicted within EVICTION_TIMEOUT_SECONDS (PDBs?)
    DRIVER_REAPPEARED = "driver-reappeared"  #: state was handed-over but a host driver is installed again
    UNKNOWN_STATE = "unknown-state"  #: the state label holds a value this script does not know
    # failed after the driver was touched (node stays cordoned, rollout halted)
    UNINSTALL_FAILED = "uninstall-failed"  #: nvidia-uninstall exited non-zero or timed out
    FILES_REMAIN = "files-remain"  #: nvidia-smi / libnvidia-ml / the .run backup log still present
    MODULE_STUCK = "module-stuck"  #: nvidia module still loaded after the one allowed reboot
    REBOOT_FAILED = "reboot-failed"  #: `systemctl reboot` on the host failed, or no boot id to guard it
    REBOOT_NOT_PERFORMED = "reboot-not-performed"  #: restarted on the same boot after requesting a reboot
    DRIVER_NOT_READY = "driver-not-ready"  #: the operator's driver did not become ready in time
    # any state
    SCRIPT_ERROR = "script-error"  #: unexpected command failure (e.g. API error); see the detail annotation


# --------------------------------------------------------------------------------------------------------------
# Annotations on the Node (values are free text; the script keeps them on one line).
# --------------------------------------------------------------------------------------------------------------
#: Last human-readable message: what happened, what to do next. Also sent as an Event on failure.
DETAIL_ANNOTATION: Final = f"{PREFIX}driver-removal.detail"
#: ``"true"``/``"false"``: spec.unschedulable before the script cordoned, so hand-over (or a failure before the
#: driver was touched) only uncordons nodes that were schedulable. Removed when the attempt ends.
INITIAL_UNSCHEDULABLE_ANNOTATION: Final = f"{PREFIX}driver-removal.initial-unschedulable"
#: The host boot id (``/proc/sys/kernel/random/boot_id``) at the moment the script asked for a reboot. A restart
#: with the same id means the reboot did not happen; a different id means "continue verifying, never reboot again".
REBOOT_BOOT_ID_ANNOTATION: Final = f"{PREFIX}driver-removal.reboot-boot-id"
#: Attempts started on this node (incremented when an attempt cordons the node).
ATTEMPT_ANNOTATION: Final = f"{PREFIX}driver-removal.attempt"
#: Comma-separated ``nvidia.com/gpu.deploy.*`` label keys the script changed from ``true`` to
#: :data:`OPERAND_PAUSED_VALUE`; exactly these are set back to ``true`` on hand-over or early failure.
PAUSED_OPERANDS_ANNOTATION: Final = f"{PREFIX}driver-removal.paused-operands"
#: Version of the host driver being removed (first line of ``/var/lib/nvidia/log`` or the loaded module).
DRIVER_VERSION_ANNOTATION: Final = f"{PREFIX}driver-removal.driver-version"

# --------------------------------------------------------------------------------------------------------------
# Rollout lock: a coordination.k8s.io/v1 Lease in the DaemonSet's namespace.
# holderIdentity = node name, renewTime + leaseDurationSeconds = expiry. Writes use `kubectl create` (fails if
# someone created it first) and `kubectl replace` with metadata.resourceVersion (fails with 409 Conflict if
# someone wrote in between): optimistic concurrency, so two nodes can never both believe they hold it, and a
# crashed holder is taken over once its lease has expired.
# --------------------------------------------------------------------------------------------------------------
LOCK_LEASE_NAME: Final = "host-driver-removal-lock"
#: Set on the Lease by a node that failed after touching its driver (HALT_ROLLOUT_ON_FAILURE=true); value = that
#: node. While present, no other node starts, regardless of expiry. Clear it (or delete the Lease) after fixing.
LOCK_HALTED_ANNOTATION: Final = f"{PREFIX}driver-removal.halted-by"

# --------------------------------------------------------------------------------------------------------------
# GPU Operator labels the script reads and writes.
# --------------------------------------------------------------------------------------------------------------
GPU_DEPLOY_DRIVER_LABEL: Final = "nvidia.com/gpu.deploy.driver"
#: What k8s-driver-manager writes when it finds a host driver; the operator never replaces a non-empty value.
GPU_DEPLOY_DRIVER_PRE_INSTALLED: Final = "pre-installed"
#: Operand labels (``nvidia.com/gpu.deploy.<operand>``) with value ``true`` are paused during removal so that the
#: device plugin, DCGM, validator, toolkit... release /dev/nvidia* and restart against the new driver root.
OPERAND_LABEL_PREFIX: Final = "nvidia.com/gpu.deploy."
#: Same value k8s-driver-manager uses; the operand DaemonSets' nodeSelectors (``...=true``) stop matching.
OPERAND_PAUSED_VALUE: Final = "paused-for-driver-upgrade"
#: Labels under :data:`OPERAND_LABEL_PREFIX` that are not operands and are never paused.
NON_OPERAND_DEPLOY_LABELS: Final = frozenset({GPU_DEPLOY_DRIVER_LABEL, "nvidia.com/gpu.deploy.operands"})

#: Kernel modules unloaded, in this order, if loaded (dependents first; nvidia_drm holds nvidia_modeset).
NVIDIA_MODULES_UNLOAD_ORDER: Final = (
    "nvidia_drm",
    "nvidia_modeset",
    "nvidia_uvm",
    "nvidia_peermem",
    "nvidia_fs",
    "gdrdrv",
    "nvidia_vgpu_vfio",
    "nvidia",
)

# --------------------------------------------------------------------------------------------------------------
# Host files (paths on the host; the script sees them under HOST_ROOT).
# --------------------------------------------------------------------------------------------------------------
#: ``key=value`` lines: state, attempt, boot_id, driver_version, updated. Written on every transition.
HOST_MARKER_FILE: Final = "/var/lib/gpu-platform/driver-removal/state"
#: kured's default sentinel; written instead of rebooting when ALLOW_REBOOT=false.
HOST_REBOOT_SENTINEL: Final = "/run/reboot-required"
#: Written by the operator's validator; ``IS_HOST_DRIVER=false`` there means the containerised driver is ready.
HOST_DRIVER_READY_FILE: Final = "/run/nvidia/validations/driver-ready"

# --------------------------------------------------------------------------------------------------------------
# Events (v1 Event, involvedObject = the Node, in namespace EVENT_NAMESPACE; the API server only accepts events
# for cluster-scoped objects in "default").
# --------------------------------------------------------------------------------------------------------------
EVENT_REASON_STARTED: Final = "HostDriverRemovalStarted"
EVENT_REASON_REBOOT: Final = "HostDriverRemovalReboot"
EVENT_REASON_REMOVED: Final = "HostDriverRemoved"
EVENT_REASON_HANDED_OVER: Final = "HostDriverHandedOver"
EVENT_REASON_SKIPPED: Final = "HostDriverRemovalSkipped"
EVENT_REASON_FAILED: Final = "HostDriverRemovalFailed"


class ExitCode(IntEnum):
    """Process exit codes. With IDLE_AFTER_DONE=true (production) terminal outcomes idle instead of exiting, so
    only RETRY_LATER, REBOOT_PENDING and CONFIG_ERROR are seen as container restarts."""

    OK = 0  #: handed-over, skipped, nothing to do, not opted in, or dry run finished
    FAILED = 1  #: state failed was recorded
    CONFIG_ERROR = 2  #: missing/invalid env (e.g. NODE_NAME); nothing was changed
    REBOOT_PENDING = 10  #: a reboot was requested/awaited and the container is still alive; restart to continue
    RETRY_LATER = 75  #: lock not obtained within LOCK_WAIT_TIMEOUT_SECONDS; state pending; restart retries


@dataclass(frozen=True)
class EnvVar:
    """One environment variable of the script: the component renders it, the docs list it."""

    name: str
    default: str
    meaning: str


ENV_VARS: Final[tuple[EnvVar, ...]] = (
    EnvVar("NODE_NAME", "", "Required. The node the pod runs on (downward API spec.nodeName)."),
    EnvVar(
        "POD_NAMESPACE",
        "",
        "Namespace of the Lease (downward API metadata.namespace); empty = the ServiceAccount's namespace.",
    ),
    EnvVar("LOCK_NAME", LOCK_LEASE_NAME, "Name of the rollout Lease."),
    EnvVar(
        "LOCK_TTL_SECONDS",
        "1800",
        "Lease duration. A holder that stops renewing (crash) is taken over after this; it must outlast a reboot.",
    ),
    EnvVar(
        "LOCK_WAIT_TIMEOUT_SECONDS",
        "3600",
        "How long to wait (state pending) for the lock before exiting 75 so the container restarts and retries.",
    ),
    EnvVar("POLL_INTERVAL_SECONDS", "10", "Sleep between polls in every wait loop (decimals allowed)."),
    EnvVar(
        "EVICTION_TIMEOUT_SECONDS",
        "300",
        "How long GPU pods may take to leave via the Eviction API (PDBs honoured) before failing.",
    ),
    EnvVar("OPERAND_WAIT_TIMEOUT_SECONDS", "300", "How long paused GPU Operator operand pods may take to leave."),
    EnvVar("OPERATOR_NAMESPACE", "gpu-operator", "Namespace of the GPU Operator's operand pods."),
    EnvVar("UNINSTALL_TIMEOUT_SECONDS", "600", "Wall-clock limit for nvidia-uninstall."),
    EnvVar(
        "DRIVER_READY_TIMEOUT_SECONDS",
        "1200",
        "How long to wait for the operator's driver (driver-ready, IS_HOST_DRIVER=false) before uncordoning; "
        "0 = do not wait.",
    ),
    EnvVar(
        "REBOOT_WAIT_SECONDS",
        "600",
        "After `systemctl reboot`, how long to wait to be killed before exiting 10.",
    ),
    EnvVar(
        "ALLOW_REBOOT",
        "true",
        "If false, a stuck module writes the kured sentinel /run/reboot-required and waits for someone to reboot "
        "(the Lease is not renewed while waiting, so other nodes may start after LOCK_TTL_SECONDS).",
    ),
    EnvVar(
        "HALT_ROLLOUT_ON_FAILURE",
        "true",
        "If a node fails after its driver was touched, keep the Lease with the halted-by annotation so no other "
        "node starts (stops a systematic failure from cordoning every GPU node).",
    ),
    EnvVar("DRY_RUN", "false", "Print what would be done; change nothing (no label, cordon, lock or host change)."),
    EnvVar(
        "IDLE_AFTER_DONE",
        "true",
        "Sleep forever after a terminal outcome so the DaemonSet does not restart the pod; false for tests/jobs.",
    ),
    EnvVar(
        "REQUIRE_OPT_IN_LABEL",
        "true",
        f"Refuse to start a fresh attempt unless the node has {OPT_IN_LABEL}={OPT_IN_VALUE}.",
    ),
    EnvVar("HOST_ROOT", "/host", "Where the host's / is mounted in the container (hostPath /, rbind)."),
    EnvVar(
        "HOST_EXEC",
        "chroot",
        "How host binaries (dpkg, rpm, modprobe, rmmod, nvidia-uninstall) run: chroot HOST_ROOT | nsenter | direct.",
    ),
    EnvVar(
        "SYSTEMCTL_EXEC",
        "nsenter",
        "How systemctl runs: nsenter into PID 1's namespaces (systemctl ignores requests from a chroot) | "
        "chroot | direct.",
    ),
    EnvVar(
        "HOST_GPU_SERVICES",
        "nvidia-persistenced nvidia-fabricmanager nvidia-dcgm dcgm",
        "Host systemd units stopped (if active) before unloading modules; they hold /dev/nvidia*.",
    ),
    EnvVar("EVENT_NAMESPACE", "default", "Namespace for Events about the Node (must be default for Node events)."),
    EnvVar("KUBECTL_REQUEST_TIMEOUT", "30s", "kubectl --request-timeout for every API call."),
)


def env_defaults() -> dict[str, str]:
    """Return ``{name: default}`` for the component to render (it overrides NODE_NAME/POD_NAMESPACE)."""
    return {var.name: var.default for var in ENV_VARS}


@dataclass(frozen=True)
class PolicyRule:
    """One RBAC rule the script's ServiceAccount needs, derived from the kubectl calls it makes."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()


#: ClusterRole rules.
CLUSTER_RULES: Final[tuple[PolicyRule, ...]] = (
    # kubectl get node (read state) + kubectl patch node --type=merge (labels, annotations, spec.unschedulable).
    PolicyRule(("",), ("nodes",), ("get", "patch")),
    # kubectl get pods --all-namespaces --field-selector spec.nodeName=... (GPU pods, operand pods).
    PolicyRule(("",), ("pods",), ("list",)),
    # kubectl create --raw /api/v1/namespaces/NS/pods/NAME/eviction (Eviction API, honours PDBs).
    PolicyRule(("",), ("pods/eviction",), ("create",)),
)
#: Role rules in the DaemonSet's namespace (the Lease). ``create`` cannot be limited by name in RBAC.
LOCK_NAMESPACE_RULES: Final[tuple[PolicyRule, ...]] = (
    PolicyRule(("coordination.k8s.io",), ("leases",), ("get", "update"), (LOCK_LEASE_NAME,)),
    PolicyRule(("coordination.k8s.io",), ("leases",), ("create",)),
)
#: Role rules in EVENT_NAMESPACE.
EVENT_NAMESPACE_RULES: Final[tuple[PolicyRule, ...]] = (PolicyRule(("",), ("events",), ("create",)),)
