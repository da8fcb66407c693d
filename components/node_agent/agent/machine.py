"""The node agent's state machine: ``step(record, observations, settings) -> (actions, next record)``.

Pure: no I/O, no clock, no randomness. The executor observes the node, the host and the budget, calls
:func:`step`, and performs the returned actions in order, stopping at the first that fails; the next
record is persisted by the :class:`Persist` action at the point in the list where it must be durable
(before a step that touches the node, so that a restart at any moment resumes from a state that says
what was being done). Every state, reason and transition is a name in ``components.catalog.node_agent``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from components.catalog.node_agent import (
    DEPLOY_DRIVER_PRE_INSTALLED,
    MIG_TOGGLE_CONFIG,
    TOUCHED_STATES,
    Flow,
    Reason,
    State,
)


class Install:
    """Kinds of host driver install the host inspection reports."""

    NONE = "none"
    RUN = "run"
    PACKAGE = "package"
    MIXED = "mixed"
    UNKNOWN = "unknown"
    EXEC_ERROR = "exec-error"


@dataclass(frozen=True)
class Settings:
    """The agent's tuning (rendered by the component as JSON into the pod's env)."""

    pool_budgets: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False
    allow_reboot: bool = True
    eviction_timeout_seconds: float = 600.0
    reboot_timeout_seconds: float = 900.0
    driver_ready_timeout_seconds: float = 1200.0
    mig_timeout_seconds: float = 900.0
    smoke_timeout_seconds: float = 600.0
    lease_ttl_seconds: float = 300.0
    poll_seconds: float = 10.0
    #: Poll interval while waiting for a slot or idle: 200 waiting nodes stay a light load on the API.
    idle_poll_seconds: float = 60.0
    uninstall_timeout_seconds: float = 900.0
    #: The MIG resources a node of each pool should advertise: one smoke pod each.
    mig_resources: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Settings:
        """Settings from the component's JSON (unknown keys are an error: a mismatch must not pass silently)."""
        values = dict(data)
        resources = values.pop("mig_resources", {})
        settings = cls(**values)  # type: ignore[arg-type]
        return replace(settings, mig_resources={k: tuple(v) for k, v in dict(resources).items()})  # type: ignore[call-overload]


@dataclass(frozen=True)
class Record:
    """What the agent remembers about a node; persisted on the Node (annotation) and on the host (marker)."""

    state: State = State.IDLE
    flow: Flow | None = None
    reason: Reason | None = None
    detail: str = ""
    attempt: int = 0
    initial_unschedulable: bool = False
    since: float = 0.0  #: when the current state (or wait) began, by the agent's clock
    reboot_boot_id: str = ""  #: the boot id when the one reboot was requested
    toggled: bool = False  #: the MIG toggle was used
    mig_target: str = ""  #: the layout this attempt applies
    unknown: str = ""  #: a state label value this agent does not know (read from the node)


@dataclass(frozen=True)
class Observations:
    """What the executor saw this tick. ``api_ok`` False: the API failed while observing."""

    now: float
    api_ok: bool = True
    node_exists: bool = True
    unschedulable: bool = False
    opted_in: bool = False
    deploy_driver: str = ""
    mig_desired: str = ""
    mig_current: str = ""
    mig_state: str = ""
    mig_taint: bool = False
    install: str = Install.NONE
    install_detail: str = ""
    uninstaller: bool = False
    reboot_requested: bool = False  #: this process asked for the reboot already
    uninstall_rc: int | None = None  #: result of this process's uninstall run (None: not run by this process)
    modules_loaded: bool = False
    files_remain: bool = False
    boot_id: str = ""
    driver_ready: bool = False
    gpu_pods: int = 0
    eviction_blocked: bool = False
    slot_held: bool = False
    slot_lost: bool = False  #: our Lease was taken over (it expired before we touched the node)
    halted_by: str = ""  #: a touched node of the pool that failed or stopped renewing: "node (reason)"
    smoke: str = ""  #: "" not started, "running", "succeeded", "failed"
    marker_ok: bool = True  #: the host marker can be written


# -- actions ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Action:
    """Something the executor does."""


@dataclass(frozen=True)
class Persist(Action):
    """Write the record to the Node (labels, annotations) and to the host marker."""

    record: Record


@dataclass(frozen=True)
class AcquireSlot(Action):
    """Take a free slot Lease of the node's pool (create, or take over an expired untouched one)."""


@dataclass(frozen=True)
class MarkTouched(Action):
    """Annotate our Lease as touched (compare-and-swap): from now on it is never taken over."""


@dataclass(frozen=True)
class HaltSlot(Action):
    """Annotate our Lease as failed: the pool halts until an operator deletes the Lease."""

    reason: Reason


@dataclass(frozen=True)
class ReleaseSlot(Action):
    """Delete our Lease."""


@dataclass(frozen=True)
class Cordon(Action):
    pass


@dataclass(frozen=True)
class Uncordon(Action):
    pass


@dataclass(frozen=True)
class EvictGpuPods(Action):
    """Ask the Eviction API to evict every GPU pod on the node (PDBs respected)."""


@dataclass(frozen=True)
class Uninstall(Action):
    """Run nvidia-uninstall on the host (with a heartbeat that renews the Lease)."""


@dataclass(frozen=True)
class UnloadModules(Action):
    pass


@dataclass(frozen=True)
class Reboot(Action):
    """Reboot the host (or write the kured sentinel when reboots are not allowed)."""

    allowed: bool


@dataclass(frozen=True)
class SetLabel(Action):
    key: str
    value: str


@dataclass(frozen=True)
class RemoveMigTaint(Action):
    pass


@dataclass(frozen=True)
class StartSmokePods(Action):
    pass


@dataclass(frozen=True)
class DeleteSmokePods(Action):
    pass


@dataclass(frozen=True)
class Emit(Action):
    """Send an Event about the Node."""

    reason: str
    message: str
    warning: bool = False


Step = tuple[list[Action], Record]


def _enter(record: Record, obs: Observations, state: State, reason: Reason | None = None, detail: str = "") -> Record:
    since = record.since if (state is record.state and reason is record.reason) else obs.now
    return replace(record, state=state, reason=reason, detail=detail, since=since)


def _waited(record: Record, obs: Observations) -> float:
    return obs.now - record.since


def _persist(record: Record, new: Record) -> list[Action]:
    return [Persist(new)] if new != record else []


def _work(obs: Observations) -> Flow | None:
    """What the node needs: a driver hand-over first, then the MIG layout."""
    if obs.opted_in and obs.install != Install.NONE and obs.deploy_driver in ("", DEPLOY_DRIVER_PRE_INSTALLED):
        return Flow.DRIVER_HANDOVER
    if obs.mig_desired and (obs.mig_current != obs.mig_desired or obs.mig_state not in ("", "success")):
        return Flow.MIG_LAYOUT
    return None


def _refusal(obs: Observations) -> tuple[Reason, str] | None:
    if obs.install == Install.PACKAGE:
        return Reason.PACKAGE_MANAGED, f"a package owns the driver ({obs.install_detail}); not ours to remove"
    if obs.install == Install.MIXED:
        return Reason.MIXED_INSTALL, f".run traces and package-owned files ({obs.install_detail}); look by hand"
    if obs.install == Install.UNKNOWN:
        return Reason.UNKNOWN_INSTALL, "driver files with neither .run traces nor a package owner"
    if obs.install == Install.EXEC_ERROR:
        return Reason.HOST_EXEC_FAILED, f"could not inspect the host: {obs.install_detail}"
    if not obs.uninstaller:
        return Reason.UNINSTALLER_MISSING, "a .run install without nvidia-uninstall on the host"
    return None


def _fail(record: Record, obs: Observations, reason: Reason, detail: str) -> Step:
    """Fail: a touched node stays cordoned and halts the pool; an untouched one is released."""
    new = _enter(record, obs, State.FAILED, reason, detail)
    actions: list[Action] = []
    if record.state in TOUCHED_STATES:
        actions += [HaltSlot(reason), Persist(new)]
    else:
        actions += [Persist(new)]
        if not record.initial_unschedulable:
            actions.append(Uncordon())
        actions.append(ReleaseSlot())
    actions.append(Emit("NodeAgentFailed", f"{reason}: {detail}", warning=True))
    return actions, new


def _finish(record: Record, obs: Observations, detail: str) -> Step:
    new = _enter(replace(record, toggled=False), obs, State.DONE, None, detail)
    actions: list[Action] = [Persist(new)]
    if obs.mig_taint:
        actions.append(RemoveMigTaint())
    if not record.initial_unschedulable:
        actions.append(Uncordon())
    actions += [ReleaseSlot(), Emit("NodeAgentDone", detail)]
    return actions, new


def step(record: Record, obs: Observations, settings: Settings) -> Step:
    """One tick of the machine."""
    if not obs.api_ok:
        # Nothing can be written; the executor backs off and observes again. The state stays what it was.
        return [], record
    if not obs.node_exists:
        if record.state in TOUCHED_STATES:
            new = _enter(record, obs, State.FAILED, Reason.NODE_DELETED, "the Node object was deleted mid-flow")
            return [Persist(new)], new  # the executor writes only the host marker for a missing node
        return [], record
    if record.unknown:
        # Treated as touched: we cannot know what was done, so the node stays cordoned.
        unknown = replace(record, state=State.VERIFYING, unknown="")
        actions, new = _fail(unknown, obs, Reason.UNKNOWN_STATE, f"state label {record.unknown!r} is not known")
        return [Cordon(), *actions], new
    if record.state in TOUCHED_STATES and not obs.slot_held:
        # Resumed after an operator cleared the slot: never act on a touched node without holding one.
        detail = "resumed without a slot (cleared by an operator?); waiting for one"
        new = _enter(record, obs, record.state, Reason.BUDGET_FULL, detail)
        return [*_persist(record, new), AcquireSlot()], new
    if record.state in TOUCHED_STATES and record.reason is Reason.BUDGET_FULL:
        new = _enter(record, obs, record.state, None, "slot taken again; resuming")
        return [MarkTouched(), Persist(new)], new
    handler = _HANDLERS[record.state]
    return handler(record, obs, settings)


def _idle(record: Record, obs: Observations, settings: Settings) -> Step:
    flow = _work(obs)
    if flow is None:
        if obs.mig_taint and obs.mig_desired and obs.mig_current == obs.mig_desired and obs.mig_state == "success":
            new = _enter(record, obs, State.DONE, None, "MIG layout in place")
            return [Persist(new), RemoveMigTaint()], new
        return [], record
    if flow is Flow.DRIVER_HANDOVER:
        refusal = _refusal(obs)
        if refusal is not None:
            new = _enter(record, obs, State.REFUSED, *refusal)
            return [Persist(new), Emit("NodeAgentRefused", f"{refusal[0]}: {refusal[1]}", warning=True)], new
    if not obs.marker_ok:
        new = _enter(record, obs, State.REFUSED, Reason.DISK_FULL, "the host marker cannot be written (disk full?)")
        return [Persist(new), Emit("NodeAgentRefused", "disk-full: the host marker cannot be written", True)], new
    if settings.dry_run:
        detail = f"dry run: would run {flow} (attempt {record.attempt + 1})"
        new = _enter(record, obs, State.IDLE, None, detail)
        return _persist(record, new), new
    new = replace(_enter(record, obs, State.WAITING_SLOT, Reason.BUDGET_FULL, "waiting for a slot"), flow=flow)
    return [Persist(new), AcquireSlot()], new


def _waiting_slot(record: Record, obs: Observations, settings: Settings) -> Step:
    if _work(obs) is None:
        new = _enter(record, obs, State.IDLE)
        return [Persist(new), ReleaseSlot()], new
    if not obs.marker_ok:
        new = _enter(record, obs, State.REFUSED, Reason.DISK_FULL, "the host marker cannot be written")
        return [Persist(new), ReleaseSlot()], new
    if obs.slot_held:
        new = replace(
            _enter(record, obs, State.CORDONED, None, "slot taken, cordoned"),
            attempt=record.attempt + 1,
            initial_unschedulable=obs.unschedulable,
            flow=_work(obs),
            mig_target=obs.mig_desired,
            toggled=False,
            reboot_boot_id="",
        )
        return [Persist(new), Cordon(), Emit("NodeAgentStarted", f"{new.flow} attempt {new.attempt}")], new
    if obs.halted_by:
        new = _enter(record, obs, State.WAITING_SLOT, Reason.ROLLOUT_HALTED, f"rollout halted by {obs.halted_by}")
        return _persist(record, new), new
    new = _enter(record, obs, State.WAITING_SLOT, Reason.BUDGET_FULL, "waiting for a slot")
    return [*_persist(record, new), AcquireSlot()], new


def _lost_slot(record: Record, obs: Observations) -> Step:
    """Our Lease expired before we touched the node and was taken: step back, untouched."""
    new = _enter(record, obs, State.WAITING_SLOT, Reason.BUDGET_FULL, "slot lost before touching; waiting again")
    actions: list[Action] = [Persist(new)]
    if not record.initial_unschedulable:
        actions.append(Uncordon())
    return actions, new


def _cordoned(record: Record, obs: Observations, settings: Settings) -> Step:
    if obs.slot_lost:
        return _lost_slot(record, obs)
    new = _enter(record, obs, State.EVICTING, None, "evicting GPU pods")
    return [Cordon(), Persist(new), EvictGpuPods()], new


def _evicting(record: Record, obs: Observations, settings: Settings) -> Step:
    if obs.slot_lost:
        return _lost_slot(record, obs)
    if obs.gpu_pods == 0:
        if record.flow is Flow.DRIVER_HANDOVER:
            new = _enter(record, obs, State.UNINSTALLING, None, "running nvidia-uninstall")
            return [MarkTouched(), Persist(new), UnloadModules(), Uninstall()], new
        target = record.mig_target or obs.mig_desired
        new = _enter(replace(record, mig_target=target), obs, State.MIG_APPLYING, Reason.MIG_PENDING, target)
        return [MarkTouched(), Persist(new), SetLabel("nvidia.com/mig.config", target)], new
    waited = obs.now - record.since
    if waited >= settings.eviction_timeout_seconds:
        detail = f"{obs.gpu_pods} GPU pods still on the node after {int(waited)} s"
        return _fail(record, obs, Reason.EVICTION_TIMEOUT, detail)
    reason = Reason.EVICTION_BLOCKED if obs.eviction_blocked else None
    detail = "an eviction was refused (PodDisruptionBudget); retrying" if reason else "evicting GPU pods"
    new = replace(_enter(record, obs, State.EVICTING, reason, detail), since=record.since)
    return [*_persist(record, new), EvictGpuPods()], new


def _uninstalling(record: Record, obs: Observations, settings: Settings) -> Step:
    if obs.uninstall_rc is None and obs.install == Install.RUN and obs.uninstaller:
        return [UnloadModules(), Uninstall()], record  # restarted mid-step: run it again
    if obs.uninstall_rc not in (None, 0):
        return _fail(record, obs, Reason.UNINSTALL_FAILED, f"nvidia-uninstall exited {obs.uninstall_rc}")
    new = _enter(record, obs, State.VERIFYING, None, "verifying no module and no file remains")
    return [Persist(new)], new


def _verifying(record: Record, obs: Observations, settings: Settings) -> Step:
    if obs.files_remain:
        return _fail(record, obs, Reason.FILES_REMAIN, "driver files remain after nvidia-uninstall")
    if obs.modules_loaded:
        if record.reboot_boot_id:
            return _fail(record, obs, Reason.MODULE_STUCK, "the nvidia module is loaded after the one reboot")
        new = replace(
            _enter(record, obs, State.REBOOTING, None if settings.allow_reboot else Reason.REBOOT_PENDING, "reboot"),
            reboot_boot_id=obs.boot_id,
        )
        return [Persist(new), Reboot(settings.allow_reboot)], new
    new = _enter(record, obs, State.HANDING_OVER, Reason.DRIVER_PENDING, "waiting for the operator's driver")
    return [Persist(new), SetLabel("nvidia.com/gpu.deploy.driver", "true")], new


def _rebooting(record: Record, obs: Observations, settings: Settings) -> Step:
    if obs.boot_id and obs.boot_id != record.reboot_boot_id:
        new = _enter(record, obs, State.VERIFYING, None, "rebooted; verifying")
        return [Persist(new)], new
    if settings.allow_reboot and _waited(record, obs) >= settings.reboot_timeout_seconds:
        return _fail(record, obs, Reason.REBOOT_NOT_PERFORMED, f"same boot id {obs.boot_id} after the reboot")
    if not obs.reboot_requested:
        # A new process on the same boot (SIGTERM before the reboot was asked for): ask for it (again).
        return [Reboot(settings.allow_reboot)], record
    return [], record


def _handing_over(record: Record, obs: Observations, settings: Settings) -> Step:
    if obs.driver_ready:
        if obs.mig_desired and (obs.mig_current != obs.mig_desired or obs.mig_state != "success"):
            target = obs.mig_desired
            new = replace(
                _enter(record, obs, State.MIG_APPLYING, Reason.MIG_PENDING, target),
                flow=Flow.MIG_LAYOUT,
                mig_target=target,
            )
            return [Persist(new), SetLabel("nvidia.com/mig.config", target)], new
        return _finish(record, obs, "handed over to the GPU Operator's driver")
    if _waited(record, obs) >= settings.driver_ready_timeout_seconds:
        return _fail(record, obs, Reason.DRIVER_NOT_READY, "the operator's driver did not become ready")
    return [], record


def _mig_applying(record: Record, obs: Observations, settings: Settings) -> Step:
    target = record.mig_target or obs.mig_desired
    if obs.mig_current != target:
        return [SetLabel("nvidia.com/mig.config", target)], record
    if obs.mig_state == "success":
        new = _enter(record, obs, State.SMOKE_TESTING, None, "smoke pods running")
        return [Persist(new), DeleteSmokePods(), StartSmokePods()], new
    stuck = obs.mig_state == "failed" or _waited(record, obs) >= settings.mig_timeout_seconds
    if not stuck:
        return [], record
    if record.toggled:
        reason = Reason.MIG_FAILED if obs.mig_state == "failed" else Reason.MIG_TIMEOUT
        return _fail(record, obs, reason, f"mig.config.state={obs.mig_state or 'unset'} after the toggle")
    new = replace(
        _enter(record, obs, State.MIG_RECOVERING, Reason.MIG_PENDING, f"toggling through {MIG_TOGGLE_CONFIG}"),
        toggled=True,
    )
    return [Persist(new), SetLabel("nvidia.com/mig.config", MIG_TOGGLE_CONFIG)], new


def _mig_recovering(record: Record, obs: Observations, settings: Settings) -> Step:
    if obs.mig_current == MIG_TOGGLE_CONFIG and obs.mig_state == "success":
        target = record.mig_target or obs.mig_desired
        new = _enter(record, obs, State.MIG_APPLYING, Reason.MIG_PENDING, target)
        return [Persist(new), SetLabel("nvidia.com/mig.config", target)], new
    if obs.mig_current != MIG_TOGGLE_CONFIG:
        return [SetLabel("nvidia.com/mig.config", MIG_TOGGLE_CONFIG)], record
    if obs.mig_state == "failed" or _waited(record, obs) >= settings.mig_timeout_seconds:
        return _fail(record, obs, Reason.MIG_FAILED, f"the toggle through {MIG_TOGGLE_CONFIG} did not apply")
    return [], record


def _smoke_testing(record: Record, obs: Observations, settings: Settings) -> Step:
    if obs.smoke == "succeeded":
        actions, new = _finish(record, obs, f"MIG layout {record.mig_target} in place")
        return [DeleteSmokePods(), *actions], new
    if obs.smoke == "failed" or _waited(record, obs) >= settings.smoke_timeout_seconds:
        return _fail(record, obs, Reason.SMOKE_FAILED, "a smoke pod for a MIG resource failed or timed out")
    if obs.smoke == "":
        return [StartSmokePods()], record
    return [], record


def _done(record: Record, obs: Observations, settings: Settings) -> Step:
    if obs.opted_in and obs.install != Install.NONE and record.flow is Flow.DRIVER_HANDOVER:
        # No two drivers: take the node out of the operator's hands, cordon, and halt.
        new = _enter(record, obs, State.FAILED, Reason.DRIVER_REAPPEARED, "a host driver is installed again")
        return [
            Persist(new),
            SetLabel("nvidia.com/gpu.deploy.driver", "false"),
            Cordon(),
            Emit("NodeAgentFailed", "driver-reappeared: a host driver is installed again", warning=True),
        ], new
    if _work(obs) is not None:
        return _idle(replace(record, state=State.IDLE), obs, settings)
    if obs.mig_taint and obs.mig_current == obs.mig_desired and obs.mig_state == "success":
        return [RemoveMigTaint()], record
    return [], record


def _refused(record: Record, obs: Observations, settings: Settings) -> Step:
    if record.reason is Reason.DISK_FULL and obs.marker_ok:
        return _idle(replace(record, state=State.IDLE), obs, settings)
    return [], record


def _terminal(record: Record, obs: Observations, settings: Settings) -> Step:
    if record.reason is Reason.DRIVER_REAPPEARED and obs.deploy_driver != "false":
        return [SetLabel("nvidia.com/gpu.deploy.driver", "false")], record
    return [], record


_HANDLERS = {
    State.IDLE: _idle,
    State.WAITING_SLOT: _waiting_slot,
    State.CORDONED: _cordoned,
    State.EVICTING: _evicting,
    State.UNINSTALLING: _uninstalling,
    State.REBOOTING: _rebooting,
    State.VERIFYING: _verifying,
    State.HANDING_OVER: _handing_over,
    State.MIG_APPLYING: _mig_applying,
    State.MIG_RECOVERING: _mig_recovering,
    State.SMOKE_TESTING: _smoke_testing,
    State.DONE: _done,
    State.REFUSED: _refused,
    State.FAILED: _terminal,
}
