"""Names of the node agent: its states, transitions, reasons, the controller <-> executor protocol, its image.

The node agent (``components/node_agent``) is two programs: a **rollout controller** (one leader-elected
Deployment) that owns every cluster-side decision (the budget per pool, cordon, eviction, uncordon, halts,
Events, Leases), and **node executors** (a DaemonSet) that do only what needs the host (inspect, uninstall,
verify, reboot) when the controller asks, and report on their own node. This module is the single place the
Pulumi component, both programs (the ConfigMap ships this file next to their code, so all read the same
names), the docs' tables and the tests take those names from. Standard library only, and it imports nothing
but ``components.catalog.names``, ``gpu_operator_upgrade`` and ``nvidia_driver``, which the ConfigMap ships too.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.names import (
    MIG_ALL_DISABLED,
    MIG_CONFIG_LABEL,
    MIG_CONFIG_STATE_LABEL,
    NODE_GROUP_LABEL,
    PREFIX,
)
from components.catalog.nvidia_driver import max_unavailable_nodes

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
#: so the image runs as root; the executors' DaemonSet still says ``runAsUser: 0`` so that no default changes it.
#: The controller needs no root: it runs as :data:`CONTROLLER_USER`, with no privilege and a read-only root.
AGENT_IMAGE_USER: Final = 0
#: ``nobody`` in Debian's base-passwd (uid 65534): the controller's user.
CONTROLLER_USER: Final = 65534
# The image is ``FROM debian:bookworm-slim``. ``nsenter`` (/usr/bin) is in Debian bookworm's ``util-linux`` and
# ``chroot`` (/usr/sbin) in ``coreutils``, both ``Essential: yes`` packages, so both are in every bookworm image
# (packages.debian.org/bookworm/amd64/util-linux/filelist, .../coreutils/filelist): the executors run both.
#: ``python3`` of the image (docker-library installs it under /usr/local/bin).
AGENT_PYTHON: Final = "/usr/local/bin/python3"


# -- states ------------------------------------------------------------------------------------------------
class Flow(StrEnum):
    """What the controller is doing to a node."""

    DRIVER_HANDOVER = "driver-handover"  #: host driver -> the GPU Operator's driver
    MIG_LAYOUT = "mig-layout"  #: nvidia.com/mig.config -> the desired layout


class State(StrEnum):
    """Values of :data:`STATE_LABEL`, written only by the controller: where a node is in its rollout."""

    IDLE = "idle"  #: nothing to do (or not opted in, or the executor's inspection is awaited)
    WAITING_SLOT = "waiting-slot"  #: work to do, waiting for room in the pool's budget (see the reason)
    CORDONED = "cordoned"  #: holds a slot (its Lease exists) and is cordoned
    EVICTING = "evicting"  #: GPU pods are being evicted through the Eviction API
    UNINSTALLING = "uninstalling"  #: the executor was asked to run nvidia-uninstall (node touched)
    REBOOTING = "rebooting"  #: the executor was asked for the one reboot, guarded by the boot id (touched)
    VERIFYING = "verifying"  #: the executor checks that no module and no driver file remains (touched)
    HANDING_OVER = "handing-over"  #: gpu.deploy.driver=true; waiting for the operator's driver pod (touched)
    MIG_APPLYING = "mig-applying"  #: nvidia.com/mig.config set, its state cleared; waiting for mig-manager (touched)
    MIG_RECOVERING = "mig-recovering"  #: the one toggle through all-disabled after failed/no answer (touched)
    SMOKE_TESTING = "smoke-testing"  #: one smoke pod per MIG resource the node should advertise (touched)
    DONE = "done"  #: finished: uncordoned (if it was schedulable), Lease deleted
    REFUSED = "refused"  #: the controller will not act (see the reason); nothing was changed, not cordoned
    FAILED = "failed"  #: see the reason; a touched node stays cordoned and its Lease halts the pool
    PROVING = "proving"  #: holds a slot (its Lease) for its CUDA proof: smoke pods on it; not cordoned, nothing changed


#: States in which the node has been touched: it keeps its slot until done, a failure keeps it cordoned.
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
#: States that take one slot of the pool's budget: maintenance (the node cordoned), and the CUDA proof of a node that
#: joined the pool or came back under a new identity (not cordoned: nothing on the node changes, but its smoke pods
#: hold one device of it, and the proof shares the budget so that proving never adds to what a rollout takes away).
SLOT_HOLDING_STATES: Final = frozenset({*SLOT_STATES, State.PROVING})


class Reason(StrEnum):
    """Values of :data:`REASON_LABEL`: short, label-safe, one per way a node can wait, be refused or fail."""

    # waiting
    BUDGET_FULL = "budget-full"  #: maxUnavailable of the pool's live nodes are in maintenance
    ROLLOUT_HALTED = "rollout-halted"  #: a touched node of the pool failed or vanished: its Lease halts the pool
    EVICTION_BLOCKED = "eviction-blocked"  #: an eviction was refused (429: a PodDisruptionBudget); retrying
    GPU_DAEMONSET_POD = "gpu-daemonset-pod"  #: a DaemonSet pod asks for a GPU: evicted, it comes back; exclude it
    GPU_IN_USE = "gpu-in-use"  #: the executor found a process on a GPU device: nothing changed, evicting again
    MIG_PENDING = "mig-pending"  #: mig-manager has not answered this request yet (or allocatable differs)
    DRIVER_PENDING = "driver-pending"  #: the operator's driver pod on the node is not Ready on the declared image
    REBOOT_PENDING = "reboot-pending"  #: allowReboot is false: /run/reboot-required written, waiting for a reboot
    OPERATOR_UPGRADING = "operator-upgrading"  #: the GPU Operator's upgrade controller holds the node: not now
    FENCING = "fencing-operator"  #: the operator's skip label is written; the cordon follows once it is seen
    SLOT_REFUSED = "slot-refused"  #: creating the node's Lease was refused (a quota, a webhook): see the detail
    # refused (nothing changed)
    PACKAGE_MANAGED = "package-managed"  #: dpkg/rpm owns the driver: not ours to remove
    MIXED_INSTALL = "mixed-install"  #: .run install records and package-owned files: a human must look
    UNKNOWN_INSTALL = "unknown-install"  #: driver files with neither a .run install record nor a package owner
    UNINSTALLER_MISSING = "uninstaller-missing"  #: .run install but no nvidia-uninstall on the host
    HOST_EXEC_FAILED = "host-exec-failed"  #: nsenter/chroot or dpkg -S/rpm -qf failed: the install kind is unknown
    DISK_FULL = "disk-full"  #: the host marker could not be written (no space): refusing to start
    # failed before the node was touched (uncordoned if it was schedulable, Lease deleted)
    EVICTION_TIMEOUT = "eviction-timeout"  #: GPU pods did not leave within evictionTimeoutSeconds
    # failed after the node was touched (stays cordoned, its Lease halts the pool)
    UNINSTALL_FAILED = "uninstall-failed"  #: nvidia-uninstall exited non-zero or timed out
    FILES_REMAIN = "files-remain"  #: driver files still present after the uninstall
    MODULE_STUCK = "module-stuck"  #: the nvidia module is still loaded after the one allowed reboot
    REBOOT_NOT_PERFORMED = "reboot-not-performed"  #: same boot id after rebootTimeoutSeconds
    DRIVER_NOT_READY = "driver-not-ready"  #: no Ready operator driver pod within driverReadyTimeoutSeconds
    DRIVER_REAPPEARED = "driver-reappeared"  #: a host driver is installed again after hand-over (taken back)
    MIG_FAILED = "mig-failed"  #: mig-manager reported failed again after the one toggle
    MIG_TIMEOUT = "mig-timeout"  #: no answer from mig-manager within migTimeoutSeconds, after the toggle
    SMOKE_FAILED = "smoke-failed"  #: a smoke pod for a MIG resource failed or did not finish in time
    NODE_DELETED = "node-deleted"  #: the Node went away mid-flow (its Lease, keyed by the node UID, stays)
    UNKNOWN_STATE = "unknown-state"  #: the state label holds a value this controller does not know
    EXECUTOR_LOST = "executor-lost"  #: the node's executor did not answer a host step in time
    HOST_STEP_FAILED = "host-step-failed"  #: the executor could not record the step on the host (disk full)
    UNKNOWN_REPORT = "unknown-report"  #: the executor's report is malformed or names a reason/outcome not known here
    DECLARATION_GONE = "declaration-gone"  #: the opt-in or desired MIG label was removed while the node was changed
    # the CUDA proof of a node (nothing changed: no halt; cordoned only with nodeAgent.cordonOnProofFailure)
    PROOF_FAILED = "cuda-proof-failed"  #: a smoke pod of the node's CUDA proof failed or did not finish in time


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
        Reason.EXECUTOR_LOST,
        Reason.HOST_STEP_FAILED,
        Reason.UNKNOWN_REPORT,
        Reason.DECLARATION_GONE,
    }
)
#: Reasons that go with State.FAILED after the CUDA proof of a node: nothing was changed, so no halt; the node is
#: cordoned only where ``nodeAgent.cordonOnProofFailure`` says so (docs/node-agent.md, "Continuous proof").
PROOF_FAILURES: Final = frozenset({Reason.PROOF_FAILED})
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
        Reason.GPU_DAEMONSET_POD,
        Reason.GPU_IN_USE,
        Reason.MIG_PENDING,
        Reason.DRIVER_PENDING,
        Reason.REBOOT_PENDING,
        Reason.OPERATOR_UPGRADING,
        Reason.FENCING,
        Reason.SLOT_REFUSED,
    }
)


@dataclass(frozen=True)
class Transition:
    """One edge of the controller's state machine, as the docs list it."""

    source: State
    target: State
    when: str


#: A state label removed or set to ``idle`` by hand mid-flow is written back from the record (and the Lease), so
#: the node goes on where it was instead of being taken again with its own cordon mistaken for someone else's.
_RESTORED: Final = tuple(
    Transition(State.IDLE, state, f"restored: the state label was edited by hand mid-flow, the record says {state}")
    for state in sorted(SLOT_STATES)
)
#: Every transition the controller makes (the fault tests check every move they see against this list).
TRANSITIONS: Final[tuple[Transition, ...]] = (
    *_RESTORED,
    Transition(
        State.IDLE, State.WAITING_SLOT, "work to do: the executor reported a .run driver, or a MIG layout differs"
    ),
    Transition(State.IDLE, State.CORDONED, "work to do and room in the budget: Lease created, cordoned in one write"),
    Transition(State.IDLE, State.REFUSED, "the executor's inspection refuses (a refusal reason)"),
    Transition(State.IDLE, State.DONE, "MIG layout already in place on a new node: the taint is removed"),
    Transition(
        State.WAITING_SLOT,
        State.CORDONED,
        "its Lease created within the budget, the operator's skip label seen on "
        "the node (written the pass before, reason fencing-operator); cordoned in one write",
    ),
    Transition(State.WAITING_SLOT, State.IDLE, "the work went away (driver gone, desired layout reached)"),
    Transition(State.WAITING_SLOT, State.REFUSED, "a new inspection refuses"),
    Transition(State.CORDONED, State.EVICTING, "eviction of the node's GPU pods starts"),
    Transition(
        State.CORDONED,
        State.WAITING_SLOT,
        "released untouched: operator-upgrading (the operator took it) or rollout-halted (another node failed)",
    ),
    Transition(
        State.EVICTING,
        State.WAITING_SLOT,
        "released untouched: operator-upgrading (the operator took it) or rollout-halted (another node failed)",
    ),
    Transition(State.CORDONED, State.IDLE, "the work went away before touching: uncordoned, Lease deleted"),
    Transition(State.EVICTING, State.IDLE, "the work went away before touching: uncordoned, Lease deleted"),
    Transition(State.EVICTING, State.UNINSTALLING, "no GPU pod left: Lease marked touched, uninstall requested"),
    Transition(State.EVICTING, State.MIG_APPLYING, "no GPU pod left: mig.config set and mig.config.state cleared"),
    Transition(State.EVICTING, State.MIG_RECOVERING, "no GPU pod left, mig.config already the target: the toggle"),
    Transition(State.EVICTING, State.FAILED, "eviction-timeout: uncordoned if it was schedulable, Lease deleted"),
    Transition(State.UNINSTALLING, State.VERIFYING, "the executor answered this uninstall request: done"),
    Transition(State.UNINSTALLING, State.EVICTING, "the executor found a GPU in use: nothing changed, evicting again"),
    Transition(State.UNINSTALLING, State.FAILED, "uninstall-failed, host-step-failed or executor-lost"),
    Transition(State.VERIFYING, State.REBOOTING, "the module is still loaded: the one reboot"),
    Transition(State.VERIFYING, State.HANDING_OVER, "no module, no file: nvidia.com/gpu.deploy.driver=true"),
    Transition(State.VERIFYING, State.FAILED, "files-remain, or module-stuck after the reboot"),
    Transition(State.REBOOTING, State.VERIFYING, "the executor reported a new boot id"),
    Transition(State.REBOOTING, State.FAILED, "reboot-not-performed: no new boot id within the timeout"),
    Transition(State.HANDING_OVER, State.DONE, "the operator's driver pod is Ready on the declared image"),
    Transition(State.HANDING_OVER, State.FAILED, "driver-not-ready"),
    Transition(State.MIG_APPLYING, State.SMOKE_TESTING, "mig-manager answered success and allocatable matches"),
    Transition(State.MIG_APPLYING, State.MIG_RECOVERING, "failed, or no answer in time: the one toggle"),
    Transition(State.MIG_APPLYING, State.FAILED, "mig-failed or mig-timeout after the toggle"),
    Transition(State.MIG_RECOVERING, State.MIG_APPLYING, "all-disabled applied: the desired config set again"),
    Transition(State.MIG_RECOVERING, State.FAILED, "mig-failed or mig-timeout: the toggle itself did not apply"),
    Transition(State.SMOKE_TESTING, State.DONE, "every smoke pod succeeded; uncordoned, taint removed, Lease deleted"),
    Transition(State.SMOKE_TESTING, State.FAILED, "smoke-failed"),
    Transition(State.DONE, State.WAITING_SLOT, "a new desired MIG layout"),
    Transition(State.DONE, State.CORDONED, "a new desired MIG layout, and room in the budget"),
    Transition(State.DONE, State.FAILED, "driver-reappeared: gpu.deploy.driver=false, cordoned, the pool halts"),
    Transition(State.REFUSED, State.WAITING_SLOT, "the refusal no longer holds (e.g. space freed)"),
    Transition(State.REFUSED, State.IDLE, "the work went away"),
    Transition(State.REFUSED, State.CORDONED, "the refusal no longer holds, and room in the budget"),
    Transition(
        State.FAILED,
        State.IDLE,
        "a person asked for a retry (the retry annotation): given back as before the first attempt, halt cleared",
    ),
    Transition(
        State.IDLE,
        State.PROVING,
        "its evidence passes and no CUDA proof of it as it is now (UID, boot ID) passed: its Lease created within "
        "the budget (not in a halted pool), its smoke pods created; not cordoned",
    ),
    Transition(
        State.DONE,
        State.PROVING,
        "as from idle: a node a flow finished (or rebooted) before it was proven as it is now",
    ),
    Transition(
        State.PROVING,
        State.IDLE,
        "every smoke pod succeeded (proof passed), or released (no free device, the operator took it, not Ready, "
        "no declaration): back to where it was, Lease deleted",
    ),
    Transition(State.PROVING, State.DONE, "as to idle, for a node that was done"),
    Transition(
        State.PROVING,
        State.FAILED,
        "cuda-proof-failed: a smoke pod failed or did not finish in time; Lease deleted, no halt; cordoned only "
        "with cordonOnProofFailure",
    ),
)
#: Failures reachable from every touched state, not listed above one by one.
ANY_STATE_FAILURES: Final = (
    Reason.NODE_DELETED,
    Reason.UNKNOWN_STATE,
    Reason.EXECUTOR_LOST,
    Reason.UNKNOWN_REPORT,
    Reason.DECLARATION_GONE,
)


class Step(StrEnum):
    """Host steps the controller asks an executor for (the ``step`` of :data:`REQUEST_ANNOTATION`)."""

    INSPECT = "inspect"  #: report the install kind, modules, driver files, boot id (changes nothing)
    UNINSTALL = "uninstall"  #: stop the GPU services, unload the modules, run nvidia-uninstall
    VERIFY = "verify"  #: report whether a module or a driver file remains
    REBOOT = "reboot"  #: the one reboot (or the kured sentinel); answered with the new boot id


class Outcome(StrEnum):
    """The ``outcome`` of :data:`REPORT_ANNOTATION`."""

    OK = "ok"  #: the step is done; ``facts`` holds what the executor saw
    FAILED = "failed"  #: the step failed; ``reason`` is a :class:`Reason`
    RUNNING = "running"  #: the step is under way (a reboot waiting for kured: reason reboot-pending)
    NOT_STARTED = "not-started"  #: the executor refused to start (a GPU in use): nothing changed


# -- node labels and annotations -----------------------------------------------------------------------
#: The state label, value from :class:`State`; ``kubectl get nodes -L`` shows it. Written by the controller.
STATE_LABEL: Final = f"{AGENT_PREFIX}state"
#: The reason label, value from :class:`Reason`; absent when there is none.
REASON_LABEL: Final = f"{AGENT_PREFIX}reason"
#: The flow label, value from :class:`Flow`.
FLOW_LABEL: Final = f"{AGENT_PREFIX}flow"
#: What the program wants nvidia.com/mig.config to be; the controller moves the real label to it.
MIG_DESIRED_LABEL: Final = f"{AGENT_PREFIX}mig-desired-config"
#: The controller's durable intent (JSON): node UID, flow, attempt, whether the node was schedulable before
#: the controller cordoned it (recorded in the same write as the cordon), step start, toggle used.
RECORD_ANNOTATION: Final = f"{AGENT_PREFIX}record"
#: The last human-readable message: what happens, what to do next.
DETAIL_ANNOTATION: Final = f"{AGENT_PREFIX}detail"
#: The controller's request to the node's executor (JSON ``{"id", "step"}``); ``id`` is new for every request.
REQUEST_ANNOTATION: Final = f"{AGENT_PREFIX}request"
#: The executor's report (JSON ``{"id", "step", "outcome", "reason", "detail", "facts"}``), written only by the
#: executor of this node: a report answers a request only when its ``id`` is the request's.
REPORT_ANNOTATION: Final = f"{AGENT_PREFIX}report"
#: New nodes of a MIG pool start with this taint; the controller removes it once the layout is in place.
MIG_PENDING_TAINT_KEY: Final = f"{AGENT_PREFIX}mig-layout-pending"
MIG_PENDING_TAINT_EFFECT: Final = "NoSchedule"

#: Labels the controller reads and writes besides its own.
MIG_LABEL: Final = MIG_CONFIG_LABEL
MIG_STATE_LABEL: Final = MIG_CONFIG_STATE_LABEL
MIG_TOGGLE_CONFIG: Final = MIG_ALL_DISABLED
#: The values mig-manager writes in :data:`MIG_STATE_LABEL` (mig-parted v0.15.0
#: pkg/mig/reconfigure/reconfigure.go: ``setNodeLabel(migConfigStateLabel, "pending"|"rebooting")``,
#: ``setState(migStateSuccess|migStateFailed)``). It writes none of them when the label changes: only after its
#: own ``kubectl get`` and ``nvidia-mig-parted assert`` calls, so a value present right after a change is old.
MIG_STATE_SUCCESS: Final = "success"
MIG_STATE_FAILED: Final = "failed"
MIG_STATE_PENDING: Final = "pending"
MIG_STATE_REBOOTING: Final = "rebooting"
#: The operand labels mig-manager sets to ``paused-for-mig-change`` before a change and back to ``true`` after
#: (mig-parted ``shutdownKubernetesGPUClients`` / ``restartKubernetesGPUClients``, in
#: :mod:`components.catalog.gpu_operator_upgrade`). Its package variable ``NoRestartK8sDaemonsetsOnExit`` is set by
#: the first success and never reset, so a later failure in the same pod leaves them paused: the controller
#: restores them once mig-manager has answered. k8s-driver-manager pauses more of them
#: (``paused-for-driver-upgrade``) while a driver loads; those are its own to restore, the controller only waits.
OPERAND_DEPLOY_LABELS: Final = operator.MIG_MANAGER_PAUSED_LABELS
PAUSED_FOR_MIG: Final = operator.PAUSED_FOR_MIG
GPU_DEPLOY_DRIVER_LABEL: Final = "nvidia.com/gpu.deploy.driver"
#: What the operator's driver manager writes when it finds a host driver; the controller writes "false" when a
#: host driver reappears after hand-over, so the operator's driver never runs beside it.
DEPLOY_DRIVER_PRE_INSTALLED: Final = "pre-installed"
#: The operator's driver pods and DaemonSets, in both modes (ClusterPolicy: ``app=nvidia-driver-daemonset``;
#: NVIDIADriver: ``app=nvidia-<driverType>-driver-<os>-<hash>``, one DaemonSet per resource and OS): by the
#: component label they all carry.
DRIVER_POD_LABEL: Final = (operator.DRIVER_COMPONENT_LABEL, operator.DRIVER_COMPONENT)
DRIVER_CONTAINER: Final = operator.DRIVER_CONTAINER
#: The operator's skip label: set by the controller before its first disruptive write (a pass before the cordon)
#: and removed when the node leaves maintenance, so the operator's upgrade controller never starts on a node the
#: controller holds.
UPGRADE_SKIP_LABEL: Final = operator.UPGRADE_SKIP_LABEL
#: Every label key the controller may change on a Node (its admission policy allows exactly these).
CONTROLLER_LABELS: Final = (
    STATE_LABEL,
    REASON_LABEL,
    FLOW_LABEL,
    MIG_LABEL,
    MIG_STATE_LABEL,
    GPU_DEPLOY_DRIVER_LABEL,
    UPGRADE_SKIP_LABEL,
    *OPERAND_DEPLOY_LABELS,
)
#: A person asks for another attempt of a failed node with this annotation (any new value): the controller gives
#: the node back as it was before the first attempt (its cordon, the skip label), clears the halt, and starts over.
RETRY_ANNOTATION: Final = f"{AGENT_PREFIX}retry"
#: The controller set the GPU Operator's skip label on a node waiting in ``upgrade-required`` to keep the operator
#: within the pool's shared budget (the operator counts only the nodes it manages; see docs/node-agent.md, "Sharing
#: nodes with the GPU Operator"); it lifts the label, and this note, when the budget has room again.
THROTTLE_ANNOTATION: Final = f"{AGENT_PREFIX}throttled"
#: The node's proof record, written by the rollout controller's continuous proof (``controller/proving.py``) on
#: every GPU node of a pool with a declaration, and read by ``tools/status`` and the alerts: JSON
#: ``{"result": "passed"|"failed", "at": "<RFC3339>", "reason": str, "driver": str, "mig": str, "cuda": {...}}``: the
#: evidence (the proof Job's checks of the driver and the MIG layout), and under ``cuda`` the CUDA proof of the node's
#: identity (``catalog.proof.PROOF_CUDA_KEYS``; absent until its first CUDA proof is decided). The record's vocabulary
#: (its results, its keys, the rules it applies) is ``components/catalog/proof.py``'s.
PROOF_ANNOTATION: Final = f"{AGENT_PREFIX}proof"

#: Every annotation key the controller may change on a Node: its own, and the operator's initial-state note, which
#: it removes when the operator wrote it only because the controller's own cordon was there (see
#: docs/node-agent.md, "Sharing nodes with the GPU Operator").
CONTROLLER_ANNOTATIONS: Final = (
    RECORD_ANNOTATION,
    DETAIL_ANNOTATION,
    REQUEST_ANNOTATION,
    RETRY_ANNOTATION,
    PROOF_ANNOTATION,
    THROTTLE_ANNOTATION,
    operator.UPGRADE_INITIAL_STATE_ANNOTATION,
)
#: The one annotation an executor may change, on its own Node only.
EXECUTOR_ANNOTATIONS: Final = (REPORT_ANNOTATION,)
#: Label of the controller's smoke pods.
SMOKE_LABEL: Final = f"{AGENT_PREFIX}smoke"
#: The Kubernetes taint a cordon implies; the smoke pods tolerate it (kubelet admits a pod with ``nodeName``).
UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"

# -- Leases: one per node in maintenance, named by the node's UID ------------------------------------------
#: ``node-agent-<node uid>``: created before the node is cordoned, marked touched before the first host step,
#: marked failed (a halt) before a touched node is failed; deleted when the node is done. Keyed by UID, so a
#: node recreated under the same name never inherits it, and a vanished node's Lease keeps the pool halted.
NODE_LEASE_PREFIX: Final = "node-agent-"
#: The controller's leader-election Lease.
CONTROLLER_LEASE: Final = "node-agent-controller"
#: Lease label naming the pool (so ``kubectl get leases -l`` lists one pool's Leases).
LEASE_POOL_LABEL: Final = f"{AGENT_PREFIX}pool"
#: Lease annotation: the node's name when the Lease was created.
LEASE_NODE_ANNOTATION: Final = f"{AGENT_PREFIX}node"
#: Lease annotation set before the controller first changes the node's host or MIG layout.
LEASE_TOUCHED_ANNOTATION: Final = f"{AGENT_PREFIX}touched"
#: Lease annotation naming the reason a touched node failed: the pool halts until an operator deletes the Lease.
LEASE_FAILED_ANNOTATION: Final = f"{AGENT_PREFIX}failed"
#: Lease annotations that keep whose cordon it is where no edit of the node can reach: whether the node was
#: unschedulable before the controller cordoned it (written before the cordon), and that the controller's cordon
#: landed (written once the node is seen in maintenance with the controller's record).
LEASE_WAS_UNSCHEDULABLE_ANNOTATION: Final = f"{AGENT_PREFIX}was-unschedulable"
LEASE_CORDONED_ANNOTATION: Final = f"{AGENT_PREFIX}cordoned"
#: Lease annotation: the controller set the GPU Operator's skip label on the node (so it removes it at the end).
LEASE_FENCED_ANNOTATION: Final = f"{AGENT_PREFIX}fenced"
#: Node label naming the node's pool (set by the program: node group / bare-metal pool).
POOL_LABEL: Final = NODE_GROUP_LABEL


def node_lease_name(uid: str) -> str:
    """The Lease of the node with ``uid``."""
    return f"{NODE_LEASE_PREFIX}{uid}"


def retry_command(node: str) -> str:
    """The documented command a person runs, after fixing a failed node: another attempt, the halt cleared."""
    return f'kubectl annotate node {node} --overwrite {RETRY_ANNOTATION}="$(date -u +%FT%TZ)"'


def clear_command(namespace: str, uid: str) -> str:
    """The command that ends the halt of a node that is gone (no node left to retry): delete its Lease."""
    return f"kubectl -n {namespace} delete lease {node_lease_name(uid)}"


# -- the host ----------------------------------------------------------------------------------------------
#: Survives reboots: the executor's last request id, and the boot id when it asked for the reboot.
HOST_MARKER_FILE: Final = "/var/lib/gpu-platform/node-agent/state.json"
#: kured's sentinel, written instead of rebooting when allowReboot is false.
HOST_REBOOT_SENTINEL: Final = "/run/reboot-required"
#: The files whose presence means a host driver (checked again after the uninstall; the bare-metal
#: ``driver-check.sh`` looks for the same ones on a driverless host: tests/bare_metal/test_host_prep.py).
#: The operator's driver container installs under its own root (``/run/nvidia/driver`` on the host), never these
#: paths. ``libnvidia-ml.so.1`` is where a driver install puts its libraries: ``/usr/lib64`` (RHEL family), or the
#: multiarch folder of a Debian-family host, x86_64 or aarch64 (Grace/GH200 hosts): the folders the GPU Operator
#: itself searches a driver root for it (gpu-operator v26.7.0 ``internal/driver/root.go``
#: ``GetDriverLibraryPath``: /usr/lib64, /usr/lib/x86_64-linux-gnu, /usr/lib/aarch64-linux-gnu, and the /lib
#: twins that usrmerge makes the same folders).
HOST_DRIVER_FILES: Final = (
    "/usr/bin/nvidia-smi",
    "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
    "/usr/lib64/libnvidia-ml.so.1",
    "/usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1",
)
#: The .run installer's own record of what it installed: ``init_backup`` creates it and ``do_uninstall``
#: removes the whole directory (NVIDIA/nvidia-installer backup.c: ``BACKUP_DIRECTORY "/var/lib/nvidia"``,
#: ``BACKUP_LOG BACKUP_DIRECTORY "/log"``). Its presence means a .run install; nvidia-uninstall removes it.
HOST_RUN_BACKUP_LOG: Final = "/var/lib/nvidia/log"
#: NOT evidence of a .run install: nvidia-uninstall leaves it (it logs to ``/var/log/nvidia-uninstall.log``,
#: nvidia-installer.h ``DEFAULT_UNINSTALL_LOG_FILE_NAME``), and the operator's driver container mounts the
#: host's ``/var/log`` (0500_daemonset.yaml volume ``var-log``) and writes it again.
HOST_RUN_INSTALL_LOG: Final = "/var/log/nvidia-installer.log"
HOST_UNINSTALLER: Final = "/usr/bin/nvidia-uninstall"
NVIDIA_MODULES: Final = ("nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia_peermem", "nvidia")

# -- events ------------------------------------------------------------------------------------------------
#: Events about a Node go to ``default``: the API server accepts events of cluster-scoped objects only there.
EVENT_NAMESPACE: Final = "default"
EVENT_SOURCE: Final = "gpu-platform-node-agent"
#: The field manager of every node write the agent makes (``?fieldManager=``).
FIELD_MANAGER: Final = EVENT_SOURCE

# -- metrics -----------------------------------------------------------------------------------------------
#: The controller serves Prometheus's text format on this port at ``/metrics`` (the ``metrics`` port of its pod
#: and Service; the ServiceMonitor scrapes it where the Prometheus Operator runs).
METRICS_PORT: Final = 8080
METRICS_PORT_NAME: Final = "metrics"
METRICS_PATH: Final = "/metrics"
#: The Service in front of the controller's metrics port (its ``app.kubernetes.io/name`` label too: the
#: ServiceMonitor selects it by that label, in the node agent's namespace).
METRICS_SERVICE: Final = "node-agent-controller-metrics"
#: Per pool and verdict, the GPU nodes the controller's continuous proof counts (``controller/proving.py``).
FLEET_METRIC: Final = "gpu_platform_fleet_nodes"


class FleetVerdict(StrEnum):
    """The ``verdict`` label of :data:`FLEET_METRIC`."""

    CONFORMANT = "conformant"
    DRIFTING = "drifting"
    IN_MAINTENANCE = "in_maintenance"
    FAILED = "failed"
    UNPROVEN = "unproven"


# -- settings ----------------------------------------------------------------------------------------------
#: The agent's namespace (its controller, executors, Leases and settings) unless ``nodeAgent.namespace`` says
#: otherwise. Its executors are privileged: the policy pack allows privileged pods here by default.
DEFAULT_AGENT_NAMESPACE: Final = "gpu-platform-system"
#: The controller reads its settings from this ConfigMap at every reconcile (a change reaches a running rollout).
SETTINGS_CONFIG_MAP: Final = "node-agent-settings"
SETTINGS_KEY: Final = "settings.json"
ENV_NODE_NAME: Final = "NODE_NAME"
ENV_NAMESPACE: Final = "AGENT_NAMESPACE"
ENV_POD_NAME: Final = "POD_NAME"
ENV_ALLOW_REBOOT: Final = "ALLOW_REBOOT"
ENV_UNINSTALL_TIMEOUT: Final = "UNINSTALL_TIMEOUT_SECONDS"


# -- where the agent works, and its budget per pool --------------------------------------------------------
def pool_budget(max_unavailable: int | str, nodes: int) -> int:
    """Nodes of a pool of ``nodes`` that may be in maintenance at once (``nodeAgent.maxUnavailable``): read as the
    GPU Operator reads its own ``maxUnavailable`` (a number, or a percentage of the nodes rounded up:
    :func:`components.catalog.nvidia_driver.max_unavailable_nodes`, one budget with the operator's), and at least
    one node, so a small pool still moves."""
    return max(1, max_unavailable_nodes(max_unavailable, nodes))


def works_on_pool(*, host_driver_removal: bool, mig_pool: bool, mig_layout: bool) -> bool:
    """The rule of where the agent runs: on a pool opted in to the host-driver hand-over
    (``hostDriverRemoval: true``), and on a pool the program partitions with MIG when layout changes go through the
    agent (``nodeAgent.migLayout: true``). Its controller and executors exist only where it works on some pool."""
    return host_driver_removal or (mig_layout and mig_pool)


#: The kubelet's admission rejects a pod bound to a node without enough of a resource with the reason
#: ``OutOf<resource>`` (kubernetes ``pkg/kubelet/lifecycle/predicate.go``, ``InsufficientResourceError``; the pod
#: ends ``Failed``, its message "Pod was rejected: Node didn't have enough resource: ..."): the node's devices are
#: all in use. That is no failure of the node: a CUDA proof is given back and tried again. The kubelet is not among
#: the pinned sources in ``.upstream/``, so no upstream fact checks this one.
NO_FREE_DEVICE_PREFIX: Final = "OutOf"
