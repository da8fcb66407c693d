"""Names of the node agent: its states, transitions, failure reasons, labels, Leases and image.

The node agent (``components/node_agent``) hands nodes with a preinstalled host driver over to the GPU
Operator and moves ``nvidia.com/mig.config`` to the layout the program declares, a budget of nodes at a
time. This module is the single place the Pulumi component, the agent itself (the ConfigMap ships this
file next to the agent's code, so both read the same names), the docs' tables and the tests take those
names from. Standard library only, and it imports nothing but ``components.catalog.names``, which the
ConfigMap ships too.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from components.catalog.names import MIG_CONFIG_LABEL, PREFIX

AGENT_PREFIX: Final = f"{PREFIX}node-agent."

# -- the image ---------------------------------------------------------------------------------------------
#: The official Python image the agent runs on (its code comes from a ConfigMap: no image to build).
#: Tag and index digest as pinned in nalabelle/build images/digests.Dockerfile
#: ("docker.io/library/python:3.12.7-slim-bookworm@sha256:032c5261..."), the same digest other public
#: Dockerfiles pin for python:3.12-slim-bookworm at the time of 3.12.7.
AGENT_IMAGE: Final = (
    "docker.io/library/python:3.12.7-slim-bookworm"
    "@sha256:032c52613401895aa3d418a4c563d2d05f993bc3ecc065c8f4e2280978acd249"
)
#: docker-library/python 3.12/slim-bookworm/Dockerfile sets no ``USER`` (it ends in ``CMD ["python3"]``),
#: so the image runs as root; the DaemonSet still says ``runAsUser: 0`` so that no default changes it.
AGENT_IMAGE_USER: Final = 0
#: The image is ``FROM debian:bookworm-slim``. ``nsenter`` is in Debian bookworm's ``util-linux`` and
#: ``chroot`` in ``coreutils``, both ``Essential: yes`` packages, so both are in every bookworm image
#: (packages.debian.org/bookworm/amd64/util-linux/filelist, .../coreutils/filelist).
AGENT_IMAGE_TOOLS: Final = ("/usr/bin/nsenter", "/usr/sbin/chroot")
#: ``python3`` of the image (docker-library installs it under /usr/local/bin).
AGENT_PYTHON: Final = "/usr/local/bin/python3"


# -- states ------------------------------------------------------------------------------------------------
class Flow(StrEnum):
    """What the agent is doing to a node."""

    DRIVER_HANDOVER = "driver-handover"  #: host driver -> the GPU Operator's driver
    MIG_LAYOUT = "mig-layout"  #: nvidia.com/mig.config -> the desired layout


class State(StrEnum):
    """Values of :data:`STATE_LABEL`: where a node is in the agent's state machine."""

    IDLE = "idle"  #: nothing to do (or not opted in)
    WAITING_SLOT = "waiting-slot"  #: work to do, waiting for a maintenance budget slot (see the reason)
    CORDONED = "cordoned"  #: holds a slot, the node is cordoned
    EVICTING = "evicting"  #: GPU pods are being evicted through the Eviction API
    UNINSTALLING = "uninstalling"  #: nvidia-uninstall runs on the host (node touched)
    REBOOTING = "rebooting"  #: one reboot was requested, guarded by the boot id (node touched)
    VERIFYING = "verifying"  #: checks that no module and no driver file remains (node touched)
    HANDING_OVER = "handing-over"  #: gpu.deploy.driver=true set; waiting for the operator's driver (touched)
    MIG_APPLYING = "mig-applying"  #: nvidia.com/mig.config set; waiting for mig.config.state=success (touched)
    MIG_RECOVERING = "mig-recovering"  #: the one toggle through all-disabled after pending/failed (touched)
    SMOKE_TESTING = "smoke-testing"  #: one smoke pod per MIG resource the node should advertise (touched)
    DONE = "done"  #: finished: uncordoned (if it was schedulable), slot released
    REFUSED = "refused"  #: the agent would not act (see the reason); nothing was changed, not cordoned
    FAILED = "failed"  #: see the reason; cordoned if the node was touched, with the slot kept


#: States in which the node has been touched: the slot is never taken over, a failure keeps the node cordoned.
TOUCHED_STATES: Final = frozenset(
    {
        State.UNINSTALLING,
        State.REBOOTING,
        State.VERIFYING,
        State.HANDING_OVER,
        State.MIG_APPLYING,
        State.MIG_RECOVERING,
        State.SMOKE_TESTING,
    }
)
#: States that hold a budget slot (the node counts as "in maintenance").
SLOT_STATES: Final = frozenset({State.CORDONED, State.EVICTING, *TOUCHED_STATES})
#: States in which the agent only watches (reset: see docs/node-agent.md).
TERMINAL_STATES: Final = frozenset({State.IDLE, State.DONE, State.REFUSED, State.FAILED})


class Reason(StrEnum):
    """Values of :data:`REASON_LABEL`: short, label-safe, one per way a node can wait, be refused or fail."""

    # waiting
    BUDGET_FULL = "budget-full"  #: maxUnavailable nodes of the pool are in maintenance
    ROLLOUT_HALTED = "rollout-halted"  #: a touched node of the pool failed or stopped renewing its slot
    EVICTION_BLOCKED = "eviction-blocked"  #: an eviction was refused (429: a PodDisruptionBudget); retrying
    MIG_PENDING = "mig-pending"  #: mig-manager has not reported success yet
    DRIVER_PENDING = "driver-pending"  #: the operator's driver is not ready on the node yet
    REBOOT_PENDING = "reboot-pending"  #: allowReboot is false: /run/reboot-required written, waiting for a reboot
    # refused (nothing changed)
    PACKAGE_MANAGED = "package-managed"  #: dpkg/rpm owns the driver: not ours to remove
    MIXED_INSTALL = "mixed-install"  #: .run traces and package-owned files: a human must look
    UNKNOWN_INSTALL = "unknown-install"  #: driver files with neither .run traces nor a package owner
    UNINSTALLER_MISSING = "uninstaller-missing"  #: .run install but no nvidia-uninstall on the host
    HOST_EXEC_FAILED = "host-exec-failed"  #: nsenter/chroot or dpkg -S/rpm -qf failed: the install kind is unknown
    DISK_FULL = "disk-full"  #: the host marker could not be written (no space): refusing to start
    # failed before the node was touched (uncordoned if it was schedulable, slot released)
    EVICTION_TIMEOUT = "eviction-timeout"  #: GPU pods did not leave within evictionTimeoutSeconds
    # failed after the node was touched (stays cordoned, slot kept: the pool halts)
    UNINSTALL_FAILED = "uninstall-failed"  #: nvidia-uninstall exited non-zero or timed out
    FILES_REMAIN = "files-remain"  #: driver files still present after the uninstall
    MODULE_STUCK = "module-stuck"  #: the nvidia module is still loaded after the one allowed reboot
    REBOOT_NOT_PERFORMED = "reboot-not-performed"  #: same boot id after rebootTimeoutSeconds
    DRIVER_NOT_READY = "driver-not-ready"  #: the operator's driver was not ready within driverReadyTimeoutSeconds
    DRIVER_REAPPEARED = "driver-reappeared"  #: a host driver is installed again after hand-over (taken back)
    MIG_FAILED = "mig-failed"  #: mig.config.state failed/pending again after the one toggle
    MIG_TIMEOUT = "mig-timeout"  #: no mig.config.state=success within migTimeoutSeconds, after the toggle
    SMOKE_FAILED = "smoke-failed"  #: a smoke pod for a MIG resource failed or did not finish in time
    NODE_DELETED = "node-deleted"  #: the Node object went away mid-flow (recorded in the host marker)
    UNKNOWN_STATE = "unknown-state"  #: the state label holds a value this agent does not know


#: Reasons that go with State.FAILED on a touched node: the pool's rollout halts on them.
TOUCHED_FAILURES: Final = frozenset(
    {
        Reason.UNINSTALL_FAILED,
        Reason.FILES_REMAIN,
        Reason.MODULE_STUCK,
        Reason.REBOOT_NOT_PERFORMED,
        Reason.DRIVER_NOT_READY,
        Reason.DRIVER_REAPPEARED,
        Reason.MIG_FAILED,
        Reason.MIG_TIMEOUT,
        Reason.SMOKE_FAILED,
        Reason.NODE_DELETED,
        Reason.UNKNOWN_STATE,
    }
)
REFUSALS: Final = frozenset(
    {
        Reason.PACKAGE_MANAGED,
        Reason.MIXED_INSTALL,
        Reason.UNKNOWN_INSTALL,
        Reason.UNINSTALLER_MISSING,
        Reason.HOST_EXEC_FAILED,
        Reason.DISK_FULL,
    }
)
WAIT_REASONS: Final = frozenset(
    {
        Reason.BUDGET_FULL,
        Reason.ROLLOUT_HALTED,
        Reason.EVICTION_BLOCKED,
        Reason.MIG_PENDING,
        Reason.DRIVER_PENDING,
        Reason.REBOOT_PENDING,
    }
)


@dataclass(frozen=True)
class Transition:
    """One edge of the state machine, as the docs list it."""

    source: State
    target: State
    when: str


#: Every transition the machine makes (the fault tests check every move they see against this list).
TRANSITIONS: Final[tuple[Transition, ...]] = (
    Transition(State.IDLE, State.WAITING_SLOT, "work to do: a host driver to hand over, or a MIG layout to apply"),
    Transition(State.IDLE, State.REFUSED, "the host driver cannot be removed safely (a refusal reason)"),
    Transition(State.IDLE, State.DONE, "MIG layout already in place on a new node: the taint is removed"),
    Transition(State.WAITING_SLOT, State.CORDONED, "a budget slot taken; the node is cordoned"),
    Transition(State.WAITING_SLOT, State.REFUSED, "the host marker cannot be written (disk full)"),
    Transition(State.WAITING_SLOT, State.IDLE, "the work went away (driver gone, desired layout reached)"),
    Transition(State.CORDONED, State.WAITING_SLOT, "the slot expired and was taken before touching: uncordoned"),
    Transition(State.EVICTING, State.WAITING_SLOT, "the slot expired and was taken before touching: uncordoned"),
    Transition(State.CORDONED, State.EVICTING, "eviction of the node's GPU pods starts"),
    Transition(State.EVICTING, State.UNINSTALLING, "no GPU pod left (driver hand-over)"),
    Transition(State.EVICTING, State.MIG_APPLYING, "no GPU pod left (MIG layout): nvidia.com/mig.config set"),
    Transition(State.EVICTING, State.FAILED, "eviction-timeout: uncordoned if it was schedulable, slot released"),
    Transition(State.UNINSTALLING, State.VERIFYING, "nvidia-uninstall exited 0"),
    Transition(State.UNINSTALLING, State.FAILED, "uninstall-failed"),
    Transition(State.VERIFYING, State.REBOOTING, "the module is still loaded: the one reboot"),
    Transition(State.VERIFYING, State.HANDING_OVER, "no module, no file: nvidia.com/gpu.deploy.driver=true"),
    Transition(State.VERIFYING, State.FAILED, "files-remain, or module-stuck after the reboot"),
    Transition(State.REBOOTING, State.VERIFYING, "a new boot id"),
    Transition(State.REBOOTING, State.FAILED, "reboot-not-performed: the same boot id after the timeout"),
    Transition(State.HANDING_OVER, State.DONE, "the operator's driver is ready; uncordoned, slot released"),
    Transition(State.HANDING_OVER, State.MIG_APPLYING, "ready, and the MIG layout is not in place yet"),
    Transition(State.HANDING_OVER, State.FAILED, "driver-not-ready"),
    Transition(State.MIG_APPLYING, State.SMOKE_TESTING, "nvidia.com/mig.config.state=success"),
    Transition(State.MIG_APPLYING, State.MIG_RECOVERING, "failed, or pending past the timeout: the one toggle"),
    Transition(State.MIG_APPLYING, State.FAILED, "mig-failed or mig-timeout after the toggle"),
    Transition(State.MIG_RECOVERING, State.MIG_APPLYING, "all-disabled applied: the desired config is set again"),
    Transition(State.MIG_RECOVERING, State.FAILED, "mig-failed: the toggle itself did not apply"),
    Transition(State.SMOKE_TESTING, State.DONE, "every smoke pod succeeded; uncordoned, taint removed, released"),
    Transition(State.SMOKE_TESTING, State.FAILED, "smoke-failed"),
    Transition(State.DONE, State.WAITING_SLOT, "a new desired MIG layout"),
    Transition(State.DONE, State.FAILED, "driver-reappeared: nvidia.com/gpu.deploy.driver=false, cordoned"),
    Transition(State.REFUSED, State.WAITING_SLOT, "the refusal no longer holds (e.g. space freed)"),
)
#: Failures reachable from every touched state, not listed above one by one.
ANY_STATE_FAILURES: Final = (Reason.NODE_DELETED, Reason.UNKNOWN_STATE)

# -- node labels and annotations -----------------------------------------------------------------------
#: The state label, value from :class:`State`; ``kubectl get nodes -L`` shows it.
STATE_LABEL: Final = f"{AGENT_PREFIX}state"
#: The reason label, value from :class:`Reason`; absent when there is none.
REASON_LABEL: Final = f"{AGENT_PREFIX}reason"
#: The flow label, value from :class:`Flow`.
FLOW_LABEL: Final = f"{AGENT_PREFIX}flow"
#: What the program wants nvidia.com/mig.config to be; the agent moves the real label to it.
MIG_DESIRED_LABEL: Final = f"{AGENT_PREFIX}mig-desired-config"
#: The agent's record (JSON): attempt, initial unschedulable, boot id at reboot, step start, toggled...
RECORD_ANNOTATION: Final = f"{AGENT_PREFIX}record"
#: The last human-readable message: what happened, what to do next.
DETAIL_ANNOTATION: Final = f"{AGENT_PREFIX}detail"
#: New nodes of a MIG pool start with this taint; the agent removes it once the layout is in place.
MIG_PENDING_TAINT_KEY: Final = f"{AGENT_PREFIX}mig-layout-pending"
MIG_PENDING_TAINT_EFFECT: Final = "NoSchedule"

#: Labels the agent reads and writes besides its own.
MIG_LABEL: Final = MIG_CONFIG_LABEL
MIG_STATE_LABEL: Final = "nvidia.com/mig.config.state"
MIG_TOGGLE_CONFIG: Final = "all-disabled"
GPU_DEPLOY_DRIVER_LABEL: Final = "nvidia.com/gpu.deploy.driver"
#: What the operator's driver manager writes when it finds a host driver; the agent writes "false" when a host
#: driver reappears after hand-over, so the operator's driver never runs beside it.
DEPLOY_DRIVER_PRE_INSTALLED: Final = "pre-installed"
#: Every label key the agent may change (the admission policy allows exactly these, and its own prefix).
WRITABLE_LABELS: Final = (STATE_LABEL, REASON_LABEL, FLOW_LABEL, MIG_LABEL, GPU_DEPLOY_DRIVER_LABEL)
WRITABLE_ANNOTATIONS: Final = (RECORD_ANNOTATION, DETAIL_ANNOTATION)

# -- the maintenance budget ---------------------------------------------------------------------------------
#: Slot Leases are named ``node-agent-<pool>-<i>`` for i < the pool's budget, in the agent's namespace.
SLOT_LEASE_PREFIX: Final = "node-agent-"
#: Lease label naming the pool (so ``kubectl get leases -l`` lists one pool's slots).
LEASE_POOL_LABEL: Final = f"{AGENT_PREFIX}pool"
#: Lease annotation set once the holder touched its node: such a Lease is never taken over.
LEASE_TOUCHED_ANNOTATION: Final = f"{AGENT_PREFIX}touched"
#: Lease annotation set by a holder that failed after touching: the pool halts at once.
LEASE_FAILED_ANNOTATION: Final = f"{AGENT_PREFIX}failed"
#: Node label naming the node's pool (set by the program: node group / bare-metal pool).
POOL_LABEL: Final = f"{PREFIX}node-group"


def slot_lease_name(pool: str, index: int) -> str:
    """The name of slot ``index`` of ``pool``."""
    return f"{SLOT_LEASE_PREFIX}{pool}-{index}"


def clear_command(namespace: str, pool: str, index: int) -> str:
    """The documented command an operator runs, after fixing the node, to release a halted slot."""
    return f"kubectl -n {namespace} delete lease {slot_lease_name(pool, index)}"


# -- the host ----------------------------------------------------------------------------------------------
#: Survives reboots: JSON with the state, flow, attempt and boot id (a copy of the node's record).
HOST_MARKER_FILE: Final = "/var/lib/gpu-platform/node-agent/state.json"
#: kured's sentinel, written instead of rebooting when allowReboot is false.
HOST_REBOOT_SENTINEL: Final = "/run/reboot-required"
#: Written by the operator's validator; ``IS_HOST_DRIVER=false`` means the containerised driver is ready.
HOST_DRIVER_READY_FILE: Final = "/run/nvidia/validations/driver-ready"
#: The files whose presence means a host driver (checked again after the uninstall).
HOST_DRIVER_FILES: Final = (
    "/usr/bin/nvidia-smi",
    "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
    "/usr/lib64/libnvidia-ml.so.1",
)
#: The .run installer's log; its presence means a .run install.
HOST_RUN_INSTALL_LOG: Final = "/var/log/nvidia-installer.log"
HOST_UNINSTALLER: Final = "/usr/bin/nvidia-uninstall"
NVIDIA_MODULES: Final = ("nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia_peermem", "nvidia")

# -- events ------------------------------------------------------------------------------------------------
#: Events about a Node go to ``default``: the API server accepts events of cluster-scoped objects only there.
EVENT_NAMESPACE: Final = "default"
EVENT_SOURCE: Final = "gpu-platform-node-agent"

# -- settings the component renders as env -----------------------------------------------------------------
ENV_NODE_NAME: Final = "NODE_NAME"
ENV_NAMESPACE: Final = "AGENT_NAMESPACE"
ENV_SETTINGS: Final = "AGENT_SETTINGS"  #: JSON of :class:`components.node_agent.agent.settings.Settings`
