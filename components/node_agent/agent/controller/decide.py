"""The controller's decisions for one node: observations and durable intent in, the next API calls out.

Pure: no I/O, no clock. Every call it returns is idempotent and is computed again at the next reconcile
if it did not happen, so no decision depends on "the previous write succeeded". The rules that make a
failed write harmless:

- cluster-side effects on a Node (state, reason, cordon, uncordon, MIG label, ``gpu.deploy.driver``, operand
  labels, the request to the executor) go in **one** merge patch, with the resourceVersion they were computed
  from: they all happen, or none does;
- a node's Lease is created **before** the node is cordoned, marked touched **before** the first host step,
  and marked failed (the halt) **before** the node is failed; it is deleted only **after** the node is done;
- before every step that changes the host or the MIG layout, the node's pods are checked again: a GPU pod
  on the node (even a DaemonSet's) means evict and wait, never act;
- one maintainer per node: the GPU Operator's skip label is written (and seen) before the cordon, a node the
  operator's upgrade controller holds is never taken, and a node leaves maintenance without the skip label the
  controller set and schedulable as it was found (docs/node-agent.md, "Sharing nodes with the GPU Operator").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.names import HOST_DRIVER_REMOVAL_LABEL
from components.catalog.node_agent import (
    DETAIL_ANNOTATION,
    FLOW_LABEL,
    GPU_DEPLOY_DRIVER_LABEL,
    LEASE_CORDONED_ANNOTATION,
    LEASE_FAILED_ANNOTATION,
    LEASE_FENCED_ANNOTATION,
    LEASE_TOUCHED_ANNOTATION,
    LEASE_WAS_UNSCHEDULABLE_ANNOTATION,
    MIG_DESIRED_LABEL,
    MIG_LABEL,
    MIG_PENDING_TAINT_KEY,
    MIG_STATE_FAILED,
    MIG_STATE_LABEL,
    MIG_STATE_SUCCESS,
    MIG_TOGGLE_CONFIG,
    OPERAND_DEPLOY_LABELS,
    PAUSED_FOR_MIG,
    REASON_LABEL,
    RECORD_ANNOTATION,
    REQUEST_ANNOTATION,
    RETRY_ANNOTATION,
    SLOT_STATES,
    STATE_LABEL,
    TOUCHED_STATES,
    UPGRADE_SKIP_LABEL,
    Flow,
    Outcome,
    Reason,
    State,
    Step,
    node_lease_name,
    retry_command,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import (
    Action,
    AnnotateLease,
    CreateLease,
    CreatePod,
    DeleteLease,
    Event,
    Evict,
    PatchNode,
)
from components.node_agent.agent.controller.smoke import smoke_name, smoke_pod
from components.node_agent.agent.controller.view import NodeView, PoolView, Record, driver_pod_problem
from components.node_agent.agent.controller.work import (
    HOST_DRIVER_KINDS,
    Work,
    allocatable_matches,
    answer,
    mig_in_place,
    planned_resources,
)
from components.node_agent.agent.settings import Settings

KNOWN_STATES = frozenset(state.value for state in State)


@dataclass(frozen=True)
class Context:
    """Everything one decision reads besides the node."""

    settings: Settings
    now: float
    namespace: str
    pool: PoolView | None
    #: The node may take a slot now (decided per pool, in name order, by the reconcile).
    granted: bool = False
    #: Seconds since this replica first saw each time mark of the node's record (``since``, ``step_at``,
    #: ``evicting_since``): every timeout is measured on this replica's own clock from what it observed, never by
    #: comparing a time another replica (or the API server) wrote with this one's clock.
    ages: dict[str, float] = field(default_factory=dict)

    def age(self, mark: str) -> float:
        """Seconds this replica has seen ``mark`` of the node's record (0 for a mark it has not seen yet)."""
        return self.ages.get(mark, 0.0)


def wants_slot(view: NodeView, work: Work) -> bool:
    """A node not in maintenance with work to do (and no refusal) wants a slot."""
    return not (view.state in SLOT_STATES or view.state == State.FAILED or work.refusal or not work.flow)


def decide(view: NodeView, work: Work, ctx: Context) -> list[Action]:
    """The API calls that move ``view`` towards its next state (empty: nothing to do now)."""
    state = view.state
    if state not in KNOWN_STATES:
        return _unknown_state(view, ctx)
    if state not in SLOT_STATES and view.lease is not None and not view.lease_failed:
        kept = view.record.state if view.record is not None else ""
        if kept in SLOT_STATES:
            # The state label was edited or removed by hand mid-flow: the record (and the Lease) say where the
            # node is; the label is only their mirror, written back before anything else.
            labels: dict[str, str | None] = {STATE_LABEL: kept, FLOW_LABEL: view.record.flow if view.record else None}
            return [_patch(view, f"the state label {state!r} edited by hand: {kept} again", labels=labels)]
        if view.record is None and view.lease_touched:
            return _unknown_state(view, ctx)  # label and record both gone from a touched node: say so, halt
    if state in SLOT_STATES:
        if view.record is None:
            return _unknown_state(view, ctx)
        return _in_maintenance(view, view.record, work, ctx)
    return _outside(view, work, ctx)


# -- writing ----------------------------------------------------------------------------------------------
def _patch(
    view: NodeView,
    why: str,
    *,
    labels: dict[str, str | None] | None = None,
    annotations: dict[str, str | None] | None = None,
    spec: dict[str, Any] | None = None,
) -> PatchNode:
    metadata: dict[str, Any] = {"resourceVersion": view.rv}
    if labels:
        metadata["labels"] = dict(sorted(labels.items()))
    if annotations:
        metadata["annotations"] = dict(sorted(annotations.items()))
    body: dict[str, Any] = {"metadata": metadata}
    if spec:
        body["spec"] = spec
    return PatchNode(view.name, body, why)


def _move(
    view: NodeView,
    record: Record | None,
    state: State,
    detail: str,
    *,
    reason: str | None = None,
    labels: dict[str, str | None] | None = None,
    request: dict[str, Any] | None = None,
    keep_request: bool = False,
    spec: dict[str, Any] | None = None,
    annotations: dict[str, str | None] | None = None,
) -> PatchNode:
    """One write: the new state, reason, flow, record, detail, request, and any cluster-side effect with them."""
    all_labels: dict[str, str | None] = {STATE_LABEL: state.value, REASON_LABEL: reason or None}
    if record is not None:
        all_labels[FLOW_LABEL] = record.flow or None
    all_labels.update(labels or {})
    notes: dict[str, str | None] = {**(annotations or {}), DETAIL_ANNOTATION: detail[:1000]}
    if record is not None:
        notes[RECORD_ANNOTATION] = replace(record, state=state.value).dumps()
    if request is not None:
        notes[REQUEST_ANNOTATION] = json.dumps(request, sort_keys=True, separators=(",", ":"))
    elif not keep_request:
        notes[REQUEST_ANNOTATION] = None
    return _patch(view, f"{view.state} -> {state.value}: {detail}", labels=all_labels, annotations=notes, spec=spec)


def _request(view: NodeView, record: Record, step: Step, now: float) -> tuple[Record, dict[str, Any]]:
    seq = record.seq + 1
    request = {"id": f"{view.uid}.{record.attempt}.{seq}", "step": step.value, "at": now}
    return replace(record, seq=seq, step_at=now), request


def _inspect_request(view: NodeView, now: float) -> dict[str, Any]:
    return {"id": f"{view.uid}.inspect.{int(now * 1000)}", "step": Step.INSPECT.value, "at": now}


def _paused_operands(view: NodeView) -> dict[str, str | None]:
    """Operand labels mig-manager left paused, set back to ``true`` (only once mig-manager has answered)."""
    if view.labels.get(MIG_STATE_LABEL) not in (MIG_STATE_SUCCESS, MIG_STATE_FAILED):
        return {}
    return {key: "true" for key in OPERAND_DEPLOY_LABELS if view.labels.get(key) == PAUSED_FOR_MIG}


def _without_mig_taint(view: NodeView) -> list[dict[str, Any]]:
    return [taint for taint in view.taints if taint.get("key") != MIG_PENDING_TAINT_KEY]


def _has_mig_taint(view: NodeView) -> bool:
    return any(taint.get("key") == MIG_PENDING_TAINT_KEY for taint in view.taints)


def _event(view: NodeView, reason: str, message: str, warning: bool = False) -> Event:
    return Event(view.name, view.uid, reason, message, warning)


# -- outside maintenance ----------------------------------------------------------------------------------
def _outside(view: NodeView, work: Work, ctx: Context) -> list[Action]:
    state, now = view.state, ctx.now
    if state == State.FAILED:
        retry = view.annotations.get(RETRY_ANNOTATION)
        if retry:
            return _retry(view, retry)
        return _restore_operands(view)
    if state == State.DONE and view.record is not None and view.record.flow == Flow.DRIVER_HANDOVER:
        facts = work.facts or {}
        if str(facts.get("install", "")) in HOST_DRIVER_KINDS:
            return _reappeared(view, view.record, facts, ctx)
    actions: list[Action] = []
    if work.refusal:
        if state != State.REFUSED or view.labels.get(REASON_LABEL) != work.refusal:
            request = _inspect_request(view, now) if work.inspect else None
            actions.append(
                _move(
                    view,
                    None,
                    State.REFUSED,
                    f"refused: {work.detail}",
                    reason=work.refusal,
                    request=request,
                    keep_request=True,
                )
            )
        elif work.inspect:
            actions.append(_patch(view, "inspect again", annotations=_inspect_annotation(view, now)))
        return actions + _drop_lease(view) + _unfence_outside(view)
    if work.flow:
        if view.operator_holds:
            detail = (
                f"waiting: the GPU Operator's upgrade controller holds the node ({operator.UPGRADE_STATE_LABEL}="
                f"{view.operator_state}); taken once it is done"
            )
            actions += _waiting_outside(view, work, detail, Reason.OPERATOR_UPGRADING)
            return actions + _drop_lease(view) + _unfence_outside(view)
        if ctx.granted and not view.skip_label:
            return _fence(view, work, ctx)
        if ctx.granted:
            return _admit(view, work, ctx)
        pool = ctx.pool
        halted = bool(pool and pool.halted_by)
        reason = Reason.ROLLOUT_HALTED if halted else Reason.BUDGET_FULL
        if halted and pool:
            detail = f"waiting: the pool {view.pool} is halted by {', '.join(pool.halted_by)}"
        else:
            detail = _budget_detail(view, pool)
        actions += _waiting_outside(view, work, detail, reason)
        return actions + _drop_lease(view) + _unfence_outside(view)
    # No work.
    if state in (State.WAITING_SLOT, State.REFUSED) and (work.facts is not None or not view.opted_in):
        actions.append(_move(view, None, State.IDLE, "nothing to do", keep_request=True))
    elif work.inspect:
        actions.append(_patch(view, "inspect the host", annotations=_inspect_annotation(view, now)))
    elif _has_mig_taint(view) and ctx.settings.mig_layout and not ctx.settings.dry_run:
        desired = view.labels.get(MIG_DESIRED_LABEL, "")
        if desired and mig_in_place(view, ctx.settings, desired):
            actions.append(
                _move(
                    view,
                    None,
                    State.DONE,
                    f"MIG layout {desired} in place: taint removed",
                    keep_request=True,
                    spec={"taints": _without_mig_taint(view)},
                )
            )
    else:
        actions += _restore_operands(view)
    return actions + _drop_lease(view) + _unfence_outside(view)


def _budget_detail(view: NodeView, pool: PoolView | None) -> str:
    """Why there is no room: the budget, and which nodes are away (the controller's and the others')."""
    if pool is None:
        return f"waiting: no budget for the pool {view.pool}"
    away = ", ".join(pool.away[:5]) + (" ..." if len(pool.away) > 5 else "")
    return (
        f"waiting: {len(pool.holders | pool.unavailable)} node(s) of the pool {view.pool} away, budget "
        f"{pool.budget} (in maintenance, upgraded by the GPU Operator, cordoned or NotReady: {away or 'none'})"
    )


def _retry(view: NodeView, asked: str) -> list[Action]:
    """A person fixed a failed node and asked for another attempt: the node is given back as it was before the
    first attempt (uncordoned if it was schedulable, the skip label the controller set removed), the halt its Lease
    held is cleared, and the flow starts over from idle (the next pass inspects and admits it as any other)."""
    record = view.record or Record(uid=view.uid)
    spec = {} if _was_unschedulable(view, record) else {"unschedulable": False}
    record, labels, notes = _release(view, record)
    notes[RETRY_ANNOTATION] = None
    labels[FLOW_LABEL] = None
    detail = f"retry asked ({asked}): given back as before the attempt, the halt cleared; starting over"
    actions: list[Action] = [
        _move(view, record, State.IDLE, detail, labels=labels, annotations=notes, spec=spec),
        _event(view, "Retry", f"{view.name}: {detail}"),
    ]
    if view.lease is not None:
        actions.append(DeleteLease(node_lease_name(view.uid), str(view.lease["metadata"].get("resourceVersion", ""))))
    return actions


def _waiting_outside(view: NodeView, work: Work, detail: str, reason: Reason) -> list[Action]:
    """Waiting for a slot, said once (state waiting-slot, its reason, the flow)."""
    if view.state == State.WAITING_SLOT and view.labels.get(REASON_LABEL) == reason:
        return []
    labels: dict[str, str | None] = {FLOW_LABEL: work.flow}
    return [_move(view, None, State.WAITING_SLOT, detail, reason=reason, keep_request=True, labels=labels)]


def _fence(view: NodeView, work: Work, ctx: Context) -> list[Action]:
    """The slot is granted: the Lease first (it counts), then the operator's skip label, a pass before the cordon.

    The GPU Operator's upgrade controller takes a node out of ``upgrade-required`` only without the skip label, and
    counts (and fast-tracks) every cordoned node: with the label seen on the node before the cordon, the operator
    cannot start on a node the controller is about to take. The record notes that the controller set it.
    """
    actions: list[Action] = []
    fenced_note = {LEASE_FENCED_ANNOTATION: "true"}
    if view.lease is None:
        actions.append(replace(_create_slot(view, work), annotations=fenced_note))
    elif not objects.annotations_of(view.lease).get(LEASE_FENCED_ANNOTATION):
        actions.append(AnnotateLease(node_lease_name(view.uid), fenced_note))
    previous = view.record or Record(uid=view.uid)
    record = replace(previous, uid=view.uid, flow=work.flow, fenced=True)
    detail = f"{operator.UPGRADE_SKIP_LABEL}=true written for {work.flow}: cordoned once it is seen on the node"
    actions.append(
        _move(
            view,
            record,
            State.WAITING_SLOT,
            detail,
            reason=Reason.FENCING,
            keep_request=True,
            labels={UPGRADE_SKIP_LABEL: operator.UPGRADE_SKIP_VALUE},
        )
    )
    return actions


#: Upgrade states in which the operator has already read its initial-state note (or holds none).
_NOTE_READ = frozenset(
    {operator.UpgradeState.UNKNOWN, operator.UpgradeState.DONE, operator.UpgradeState.UNCORDON_REQUIRED}
)


def _was_unschedulable(view: NodeView, record: Record) -> bool:
    """Whether the node was unschedulable before the controller cordoned it: the Lease's note once the controller's
    cordon landed (no edit of the node reaches it), else the record's."""
    notes = objects.annotations_of(view.lease or {})
    if notes.get(LEASE_CORDONED_ANNOTATION) and LEASE_WAS_UNSCHEDULABLE_ANNOTATION in notes:
        return notes[LEASE_WAS_UNSCHEDULABLE_ANNOTATION] == "true"
    return record.was_unschedulable


def _create_slot(view: NodeView, work: Work) -> CreateLease:
    """The node's Lease, and what the node says if the API refuses it (the refusal is appended to the detail)."""
    refused = _move(
        view,
        None,
        State.WAITING_SLOT,
        f"waiting: the Lease {node_lease_name(view.uid)} for {work.flow} was refused by the API",
        reason=Reason.SLOT_REFUSED,
        keep_request=True,
        labels={FLOW_LABEL: work.flow},
    )
    return CreateLease(node_lease_name(view.uid), view.pool, view.name, on_refused=refused)


def _release(view: NodeView, record: Record) -> tuple[Record, dict[str, str | None], dict[str, str | None]]:
    """What leaving maintenance gives back, in the same write: the skip label the controller set, and the
    operator's initial-state note when the operator wrote it only because the controller's cordon was there.

    The operator notes ``node-initial-state.unschedulable`` when it marks a cordoned node ``upgrade-required``,
    and reads it when it would uncordon (``updateNodeToUncordonOrDoneState``, on the way to ``uncordon-required``
    or out of ``upgrade-failed``): a node the controller cordoned would be left cordoned for good after the
    operator's upgrade. The note is removed only where the node was schedulable before the controller took it,
    and only before the operator has read it.
    """
    labels: dict[str, str | None] = {}
    notes: dict[str, str | None] = {}
    fenced = record.fenced or bool(objects.annotations_of(view.lease or {}).get(LEASE_FENCED_ANNOTATION))
    if fenced and view.skip_label:
        labels[UPGRADE_SKIP_LABEL] = None
    if (
        not _was_unschedulable(view, record)
        and operator.UPGRADE_INITIAL_STATE_ANNOTATION in view.annotations
        and view.operator_state not in _NOTE_READ
    ):
        notes[operator.UPGRADE_INITIAL_STATE_ANNOTATION] = None
    return replace(record, fenced=False), labels, notes


def _unfence_outside(view: NodeView) -> list[Action]:
    """Out of maintenance with no slot: the skip label the controller set goes (the work went away, or waits)."""
    record = view.record
    if record is None or not record.fenced or (view.lease is not None and not view.lease_failed):
        return []
    record, labels, notes = _release(view, record)
    if not labels and not notes:
        return []
    body_notes = {**notes, RECORD_ANNOTATION: record.dumps()}
    return [_patch(view, "the operator's skip label removed", labels=labels, annotations=body_notes)]


def _inspect_annotation(view: NodeView, now: float) -> dict[str, str | None]:
    return {REQUEST_ANNOTATION: json.dumps(_inspect_request(view, now), sort_keys=True, separators=(",", ":"))}


def _restore_operands(view: NodeView) -> list[Action]:
    restore = _paused_operands(view)
    if not restore:
        return []
    return [_patch(view, "operands left paused-for-mig-change restored", labels=restore)]


def _drop_lease(view: NodeView) -> list[Action]:
    """A node out of maintenance holds no slot: its Lease goes, unless it is a halt (failed)."""
    if view.lease is None or view.lease_failed:
        return []
    return [DeleteLease(node_lease_name(view.uid), str(view.lease["metadata"].get("resourceVersion", "")))]


def _admit(view: NodeView, work: Work, ctx: Context) -> list[Action]:
    """Take a slot: the Lease first (it counts against the budget), then cordon and record in one write.

    What the node was before (schedulable or not) is written in the Lease before the cordon and read from there
    once the cordon landed: a person editing the state label or the record later cannot make the controller take
    its own cordon for somebody else's."""
    actions: list[Action] = []
    lease_notes = objects.annotations_of(view.lease or {})
    if lease_notes.get(LEASE_CORDONED_ANNOTATION) and LEASE_WAS_UNSCHEDULABLE_ANNOTATION in lease_notes:
        # The node is unschedulable by the controller's own cordon: its state or record was edited by hand
        # since. What it was before stays what the Lease says, never what the node says now.
        was_unschedulable = lease_notes[LEASE_WAS_UNSCHEDULABLE_ANNOTATION] == "true"
    else:
        was_unschedulable = view.unschedulable
        note = {LEASE_WAS_UNSCHEDULABLE_ANNOTATION: str(was_unschedulable).lower()}
        if view.lease is None:
            actions.append(replace(_create_slot(view, work), annotations=note))
        elif lease_notes.get(LEASE_WAS_UNSCHEDULABLE_ANNOTATION) != note[LEASE_WAS_UNSCHEDULABLE_ANNOTATION]:
            actions.append(AnnotateLease(node_lease_name(view.uid), note))
    previous = view.record.attempt if view.record is not None else 0
    record = Record(
        uid=view.uid,
        flow=work.flow,
        attempt=previous + 1,
        was_unschedulable=was_unschedulable,
        since=ctx.now,
        target=work.target,
        fenced=view.record.fenced if view.record is not None else False,
    )
    actions.append(
        _move(view, record, State.CORDONED, f"cordoned for {work.flow}: {work.detail}", spec={"unschedulable": True})
    )
    actions.append(_event(view, "Cordoned", f"cordoned for {work.flow}: {work.detail}"))
    return actions


def _reappeared(view: NodeView, record: Record, facts: dict[str, Any], ctx: Context) -> list[Action]:
    """A host driver after the hand-over: no two drivers (gpu.deploy.driver=false), cordoned, the pool halts."""
    detail = f"a host driver is installed again after the hand-over ({facts.get('install')}: {facts.get('detail', '')})"
    return _fail_touched(
        view,
        record,
        Reason.DRIVER_REAPPEARED,
        detail,
        ctx,
        labels={GPU_DEPLOY_DRIVER_LABEL: "false"},
        spec={"unschedulable": True},
    )


def _unknown_state(view: NodeView, ctx: Context) -> list[Action]:
    record = view.record or Record(uid=view.uid, flow=view.labels.get(FLOW_LABEL, ""))
    detail = f"the state label holds {view.state!r} without a record this controller wrote for this node"
    return _fail_touched(view, record, Reason.UNKNOWN_STATE, detail, ctx, spec={"unschedulable": True})


# -- in maintenance ---------------------------------------------------------------------------------------
def _in_maintenance(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    state = State(view.state)
    touched = state in TOUCHED_STATES
    prelude: list[Action] = []
    lease = node_lease_name(view.uid)
    ours = {
        LEASE_CORDONED_ANNOTATION: "true",
        LEASE_WAS_UNSCHEDULABLE_ANNOTATION: str(record.was_unschedulable).lower(),
    }
    if view.lease is None:
        notes = {LEASE_TOUCHED_ANNOTATION: "true", **ours} if touched else ours
        prelude.append(CreateLease(lease, view.pool, view.name, notes))
    else:
        lease_notes = objects.annotations_of(view.lease)
        missing = {} if lease_notes.get(LEASE_CORDONED_ANNOTATION) else dict(ours)
        if LEASE_WAS_UNSCHEDULABLE_ANNOTATION in lease_notes:
            missing.pop(LEASE_WAS_UNSCHEDULABLE_ANNOTATION, None)  # written before the cordon: it stays
        if touched and not view.lease_touched:
            missing[LEASE_TOUCHED_ANNOTATION] = "true"
        if missing:
            prelude.append(AnnotateLease(lease, missing))
    recordon: dict[str, Any] = {}
    if not view.unschedulable:
        recordon = {"unschedulable": True}
        prelude.append(
            _event(view, "Recordoned", f"{view.name} was uncordoned during {state.value}: cordoned again", True)
        )
    if view.operator_holds and not touched:
        return prelude + _yield_to_operator(view, record)
    gone = _declaration_gone(view, record)
    if gone and not touched and not view.lease_touched:
        return prelude + _release_untouched(view, record, ctx, f"{gone} before the node was touched: released")
    if gone:
        return prelude + _fail_touched(view, record, Reason.DECLARATION_GONE, gone, ctx)
    halted_by = ctx.pool.halted_by if ctx.pool is not None else ()
    if halted_by and not touched and not view.lease_touched and not view.lease_failed:
        return prelude + _stop_for_halt(view, record, halted_by)
    handler = _HANDLERS[state]
    actions = handler(view, record, work, ctx)
    if recordon:
        if any(isinstance(action, PatchNode) for action in actions):
            actions = [_with_spec(action, recordon) for action in actions]
        else:
            actions = [_patch(view, "cordoned again", spec=recordon), *actions]
    return prelude + actions


def _declaration_gone(view: NodeView, record: Record) -> str:
    """What of the node's declaration went away mid-flow ("" when nothing did): the hand-over's opt-in label, or
    the desired MIG layout. Without it the controller's next writes (the uninstall request, gpu.deploy.driver,
    nvidia.com/mig.config) are refused by its admission policy, so the flow stops here instead of retrying them."""
    if record.flow == Flow.DRIVER_HANDOVER and not view.opted_in:
        return f"the hand-over opt-in {HOST_DRIVER_REMOVAL_LABEL} was removed"
    if record.flow == Flow.MIG_LAYOUT and not view.labels.get(MIG_DESIRED_LABEL):
        return f"the desired MIG layout {MIG_DESIRED_LABEL} was removed"
    return ""


def _stop_for_halt(view: NodeView, record: Record, halted_by: tuple[str, ...]) -> list[Action]:
    """The pool halted (a touched node failed) while this node was admitted but not yet touched: it stops before its
    first change to the host or the MIG layout, is uncordoned if it was schedulable, and gives its slot back."""
    spec = {} if _was_unschedulable(view, record) else {"unschedulable": False}
    record, labels, notes = _release(view, record)
    detail = f"stopped before any change: the pool {view.pool} is halted by {', '.join(halted_by)}"
    actions: list[Action] = [
        _move(
            view,
            record,
            State.WAITING_SLOT,
            detail,
            reason=Reason.ROLLOUT_HALTED,
            labels=labels,
            annotations=notes,
            spec=spec,
        ),
        _event(view, "Halted", f"{view.name}: {detail}", True),
    ]
    return actions + _delete_lease_after(view)


def _yield_to_operator(view: NodeView, record: Record) -> list[Action]:
    """The operator's upgrade controller took a node the controller holds but has not touched (its view was older
    than the skip label): the controller lets go, Lease and all, and takes it again after the operator is done.

    The cordon stays: the operator cordons the node itself and uncordons it at ``uncordon-required``, unless it was
    unschedulable before the controller took it (then the operator's initial-state note keeps it cordoned).
    """
    record, labels, notes = _release(view, record)
    detail = (
        f"the GPU Operator's upgrade controller took the node ({operator.UPGRADE_STATE_LABEL}={view.operator_state}) "
        "before it was touched: released to it, taken again once it is done"
    )
    actions: list[Action] = [
        _move(
            view, record, State.WAITING_SLOT, detail, reason=Reason.OPERATOR_UPGRADING, labels=labels, annotations=notes
        )
    ]
    return actions + _delete_lease_after(view)


def _with_spec(action: Action, spec: dict[str, Any]) -> Action:
    if not isinstance(action, PatchNode):
        return action
    body = dict(action.patch)
    merged = {**spec, **(body.get("spec") or {})}
    body["spec"] = merged
    return PatchNode(action.node, body, action.why)


def _evict(view: NodeView, ctx: Context) -> list[Action]:
    """Evict the node's GPU pods, except a DaemonSet's: its controller puts it back on a cordoned node
    (DaemonSet pods tolerate ``node.kubernetes.io/unschedulable``), so it is waited on, never evicted."""
    return [
        Evict(pod["metadata"].get("namespace", ""), objects.name(pod), view.name)
        for pod in view.gpu_pods
        if not objects.terminating(pod) and objects.owner_kind(pod) != "DaemonSet"
    ]


def _waiting(view: NodeView, record: Record, state: State, detail: str, reason: str | None) -> list[Action]:
    """Say once, on the node, what it waits for (state, reason, detail); nothing while it already says so."""
    if view.labels.get(REASON_LABEL) == reason:
        return []
    return [_move(view, record, state, detail, reason=reason, keep_request=True)]


def _gpu_pod_names(view: NodeView) -> str:
    return ", ".join(f"{pod['metadata'].get('namespace', '')}/{objects.name(pod)}" for pod in view.gpu_pods[:5])


def _hold_for_pods(view: NodeView, record: Record, ctx: Context, reason: Reason) -> list[Action]:
    """A GPU pod is on a touched node: evict it and wait; no host or MIG step under it."""
    detail = f"GPU pods on the node ({_gpu_pod_names(view)}): evicting first"
    actions = _waiting(view, record, State(view.state), detail, reason)
    if actions:  # said once, with an Event for the person watching
        actions.append(_event(view, "GpuPodOnNode", f"GPU pods on {view.name} during {view.state}: evicting", True))
    return actions + _evict(view, ctx)


def _mig_work_gone(view: NodeView, record: Record, ctx: Context) -> bool:
    if record.flow != Flow.MIG_LAYOUT:
        return False
    desired = view.labels.get(MIG_DESIRED_LABEL, "")
    return not ctx.settings.mig_layout or not desired or mig_in_place(view, ctx.settings, desired)


def _release_untouched(view: NodeView, record: Record, ctx: Context, detail: str) -> list[Action]:
    spec = {} if _was_unschedulable(view, record) else {"unschedulable": False}
    record, labels, notes = _release(view, record)
    actions: list[Action] = [_move(view, record, State.IDLE, detail, spec=spec, labels=labels, annotations=notes)]
    return actions + _delete_lease_after(view)


def _delete_lease_after(view: NodeView) -> list[Action]:
    if view.lease is None:
        return []
    return [DeleteLease(node_lease_name(view.uid), str(view.lease["metadata"].get("resourceVersion", "")))]


def _cordoned(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    if _mig_work_gone(view, record, ctx):
        return _release_untouched(view, record, ctx, "the work went away before the node was touched: uncordoned")
    record = replace(record, since=ctx.now, evicting_since=ctx.now)
    return [_move(view, record, State.EVICTING, "evicting the node's GPU pods")]


def _evicting(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    settings = ctx.settings
    if _mig_work_gone(view, record, ctx):
        return _release_untouched(view, record, ctx, "the work went away before the node was touched: uncordoned")
    timed_out = ctx.age("evicting_since" if record.evicting_since else "since") > settings.eviction_timeout_seconds
    if not view.gpu_pods and not (timed_out and view.labels.get(REASON_LABEL) == Reason.GPU_IN_USE):
        return _first_touch(view, record, work, ctx)
    if timed_out:
        holders = _gpu_pod_names(view) or f"a host process ({view.annotations.get(DETAIL_ANNOTATION, '')})"
        detail = f"the GPUs were not free within {int(settings.eviction_timeout_seconds)} s: {holders}"
        if view.lease_touched:  # the executor was asked once already: keep it cordoned, halt
            return _fail_touched(view, record, Reason.EVICTION_TIMEOUT, detail, ctx)
        return _fail_untouched(view, record, Reason.EVICTION_TIMEOUT, detail, ctx)
    daemon = [pod for pod in view.gpu_pods if objects.owner_kind(pod) == "DaemonSet"]
    reason: str | None = None
    detail = f"evicting {_gpu_pod_names(view)}"
    if daemon:
        reason = Reason.GPU_DAEMONSET_POD
        detail = (
            f"DaemonSet pods ask for a GPU ({', '.join(objects.owner_name(pod) for pod in daemon)}): the DaemonSet "
            "refills them on a cordoned node; keep it off this pool (nodeSelector/affinity) or scale it down"
        )
    elif view.eviction_blocked:
        reason = Reason.EVICTION_BLOCKED
        detail = f"an eviction was refused (a PodDisruptionBudget): {_gpu_pod_names(view)}"
    return _waiting(view, record, State.EVICTING, detail, reason) + _evict(view, ctx)


def _first_touch(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    """The first change to the host or the MIG layout: the Lease says touched first, then one write."""
    actions: list[Action] = []
    if view.lease is not None and not view.lease_touched:
        actions.append(AnnotateLease(node_lease_name(view.uid), {LEASE_TOUCHED_ANNOTATION: "true"}))
    now = ctx.now
    if record.flow == Flow.DRIVER_HANDOVER:
        record, request = _request(view, replace(record, since=now), Step.UNINSTALL, now)
        actions.append(_move(view, record, State.UNINSTALLING, "the executor runs nvidia-uninstall", request=request))
    else:
        target = view.labels.get(MIG_DESIRED_LABEL, "") or record.target
        if view.labels.get(MIG_LABEL) == target:
            # mig-manager acts on a change of the label's value: the same value again would be no request.
            record = replace(record, since=now, target=target, toggled=True)
            detail = f"nvidia.com/mig.config is {target} already but not in place: the one toggle"
            actions.append(_write_mig(view, record, State.MIG_RECOVERING, MIG_TOGGLE_CONFIG, detail))
            return actions
        record = replace(record, since=now, target=target, toggled=False)
        actions.append(_write_mig(view, record, State.MIG_APPLYING, target, f"nvidia.com/mig.config={target} written"))
    return actions


def _write_mig(view: NodeView, record: Record, state: State, config: str, detail: str) -> PatchNode:
    """Set the MIG config and clear mig-manager's state in one write: any state seen after it is an answer."""
    return _move(view, record, state, detail, labels={MIG_LABEL: config, MIG_STATE_LABEL: None})


def _report_timeout(record: Record, limit: float, ctx: Context) -> bool:
    return ctx.age("step_at") > limit


def _failed_or_lost(
    view: NodeView,
    record: Record,
    report: dict[str, Any] | None,
    default: Reason,
    limit: float,
    step: str,
    ctx: Context,
) -> list[Action]:
    """A host step that failed (its reason, else ``default``) or got no answer within ``limit``: fail, halt."""
    if report is not None and report.get("outcome") == Outcome.FAILED.value:
        reason = Reason(report.get("reason") or default)  # known: ``answer`` turns any other into unknown-report
        return _fail_touched(view, record, reason, str(report.get("detail", "")), ctx)
    if _report_timeout(record, limit, ctx):
        return _fail_touched(view, record, Reason.EXECUTOR_LOST, f"no answer to the {step} request", ctx)
    return []


def _uninstalling(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    report = answer(view, Step.UNINSTALL)
    settings, now = ctx.settings, ctx.now
    if report is not None and report.get("outcome") == Outcome.OK.value:
        record, request = _request(view, replace(record, since=now), Step.VERIFY, now)
        return [_move(view, record, State.VERIFYING, "nvidia-uninstall done; verifying", request=request)]
    if report is not None and report.get("outcome") == Outcome.NOT_STARTED.value:
        record = replace(record, since=now)
        return [
            _move(
                view,
                record,
                State.EVICTING,
                f"the executor found a GPU in use: {report.get('detail', '')}",
                reason=Reason.GPU_IN_USE,
            )
        ]
    limit = settings.uninstall_timeout_seconds + settings.executor_timeout_seconds
    return _failed_or_lost(view, record, report, Reason.UNINSTALL_FAILED, limit, "uninstall", ctx)


def _verifying(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    report = answer(view, Step.VERIFY)
    now = ctx.now
    if report is not None and report.get("outcome") == Outcome.OK.value:
        facts = report.get("facts") or {}
        if facts.get("files_remain"):
            return _fail_touched(
                view, record, Reason.FILES_REMAIN, f"driver files remain: {facts.get('detail', '')}", ctx
            )
        if facts.get("modules_loaded"):
            if record.rebooted:
                return _fail_touched(
                    view, record, Reason.MODULE_STUCK, "the nvidia module is loaded after the reboot", ctx
                )
            if view.gpu_pods:
                return _hold_for_pods(view, record, ctx, Reason.GPU_IN_USE)
            record, request = _request(view, replace(record, since=now, rebooted=True), Step.REBOOT, now)
            return [_move(view, record, State.REBOOTING, "the module is still loaded: the one reboot", request=request)]
        stale = sorted(objects.uid(pod) for pod in view.driver_pods)
        record = replace(record, since=now, handover_at=now, stale_driver_pods=stale)
        return [
            _move(
                view,
                record,
                State.HANDING_OVER,
                "no host driver left: gpu.deploy.driver=true",
                labels={GPU_DEPLOY_DRIVER_LABEL: "true"},
            )
        ]
    limit = ctx.settings.executor_timeout_seconds
    return _failed_or_lost(view, record, report, Reason.HOST_STEP_FAILED, limit, "verify", ctx)


def _rebooting(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    report = answer(view, Step.REBOOT)
    now = ctx.now
    if report is not None and report.get("outcome") == Outcome.OK.value:
        record, request = _request(view, replace(record, since=now), Step.VERIFY, now)
        return [_move(view, record, State.VERIFYING, "rebooted (new boot id); verifying", request=request)]
    if report is not None and report.get("outcome") == Outcome.FAILED.value:
        return _fail_touched(
            view,
            record,
            Reason(report.get("reason") or Reason.REBOOT_NOT_PERFORMED),
            str(report.get("detail", "")),
            ctx,
        )
    if report is not None and report.get("reason") == Reason.REBOOT_PENDING:
        detail = "waiting for a reboot (/run/reboot-required written)"
        return _waiting(view, record, State.REBOOTING, detail, Reason.REBOOT_PENDING)
    if _report_timeout(record, ctx.settings.reboot_timeout_seconds, ctx):
        return _fail_touched(view, record, Reason.REBOOT_NOT_PERFORMED, "no new boot id in time", ctx)
    return []


def _driver_ready(view: NodeView, record: Record) -> bool:
    """The operator's driver pod on this node is Ready, current (its DaemonSet's newest revision, the DaemonSet of
    the node's owner, on the declared image: ``driver_pod_problem``), and not one that was there at the hand-over
    (by UID: the pod's ``creationTimestamp`` is the API server's clock, not this replica's)."""
    for pod in view.driver_pods:
        if objects.terminating(pod) or not objects.pod_ready(pod):
            continue
        if objects.uid(pod) in record.stale_driver_pods:  # there before the hand-over: not its answer
            continue
        if driver_pod_problem(pod, view.labels, view.driver_sets):
            continue
        return True
    return False


def _handing_over(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    if view.labels.get(GPU_DEPLOY_DRIVER_LABEL) != "true":
        return [_patch(view, "gpu.deploy.driver=true again", labels={GPU_DEPLOY_DRIVER_LABEL: "true"})]
    if _driver_ready(view, record):
        return _finish(view, record, ctx, "the operator's driver pod is Ready on the declared image")
    if ctx.age("since") > ctx.settings.driver_ready_timeout_seconds:
        return _fail_touched(view, record, Reason.DRIVER_NOT_READY, "no Ready operator driver pod in time", ctx)
    return _waiting(view, record, State.HANDING_OVER, "waiting for the operator's driver pod", Reason.DRIVER_PENDING)


def _mig_applying(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    settings, now = ctx.settings, ctx.now
    desired = view.labels.get(MIG_DESIRED_LABEL, "") or record.target
    if desired != record.target or view.labels.get(MIG_LABEL) != record.target:
        if view.gpu_pods:
            return _hold_for_pods(view, record, ctx, Reason.GPU_IN_USE)
        record = replace(record, since=now, target=desired, toggled=False)
        return [_write_mig(view, record, State.MIG_APPLYING, desired, f"nvidia.com/mig.config={desired} written")]
    answered = view.labels.get(MIG_STATE_LABEL, "")
    restore = _paused_operands(view)
    timed_out = ctx.age("since") > settings.mig_timeout_seconds
    if answered == MIG_STATE_SUCCESS and allocatable_matches(view, settings):
        record = replace(record, since=now)
        return [_move(view, record, State.SMOKE_TESTING, "layout applied; smoke pods", labels=restore or None)]
    if answered == MIG_STATE_FAILED or timed_out:
        why = "mig-manager reported failed" if answered == MIG_STATE_FAILED else "no answer from mig-manager in time"
        if record.toggled:
            reason = Reason.MIG_FAILED if answered == MIG_STATE_FAILED else Reason.MIG_TIMEOUT
            return _fail_touched(view, record, reason, why, ctx, labels=restore)
        if view.gpu_pods:
            return _hold_for_pods(view, record, ctx, Reason.GPU_IN_USE)
        record = replace(record, since=now, toggled=True)
        return [_write_mig(view, record, State.MIG_RECOVERING, MIG_TOGGLE_CONFIG, f"{why}: the one toggle")]
    if view.gpu_pods:
        return _hold_for_pods(view, record, ctx, Reason.MIG_PENDING)
    detail = "waiting for mig-manager's answer and the allocatable"
    return _waiting(view, record, State.MIG_APPLYING, detail, Reason.MIG_PENDING)


def _mig_recovering(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    answered = view.labels.get(MIG_STATE_LABEL, "")
    if view.labels.get(MIG_LABEL) != MIG_TOGGLE_CONFIG:
        return [_write_mig(view, record, State.MIG_RECOVERING, MIG_TOGGLE_CONFIG, "the toggle written again")]
    if answered == MIG_STATE_SUCCESS:
        if view.gpu_pods:
            return _hold_for_pods(view, record, ctx, Reason.GPU_IN_USE)
        target = view.labels.get(MIG_DESIRED_LABEL, "") or record.target  # the desired layout may have moved on
        record = replace(record, since=ctx.now, target=target)
        return [_write_mig(view, record, State.MIG_APPLYING, target, f"toggled; {target} written")]
    if answered == MIG_STATE_FAILED:
        return _fail_touched(
            view,
            record,
            Reason.MIG_FAILED,
            "the toggle through all-disabled failed",
            ctx,
            labels=_paused_operands(view),
        )
    if ctx.age("since") > ctx.settings.mig_timeout_seconds:
        return _fail_touched(view, record, Reason.MIG_TIMEOUT, "no answer to the toggle in time", ctx)
    return []


def _smoke_testing(view: NodeView, record: Record, work: Work, ctx: Context) -> list[Action]:
    resources = sorted(planned_resources(view, ctx.settings)) or ["nvidia.com/gpu"]
    wanted = {smoke_name(view, record, index): resource for index, resource in enumerate(resources)}
    present = {objects.name(pod): pod for pod in view.smoke_pods}
    phases = [(present[name].get("status") or {}).get("phase", "Pending") for name in wanted if name in present]
    if any(phase == "Failed" for phase in phases):
        return _fail_touched(view, record, Reason.SMOKE_FAILED, "a smoke pod failed", ctx)
    if len(phases) == len(wanted) and all(phase == "Succeeded" for phase in phases):
        return _finish(view, record, ctx, "every smoke pod succeeded")
    if ctx.age("since") > ctx.settings.smoke_timeout_seconds:
        return _fail_touched(view, record, Reason.SMOKE_FAILED, "the smoke pods did not finish in time", ctx)
    return [
        CreatePod(smoke_pod(view, record, index, resource, ctx.namespace, ctx.settings.runtime_class))
        for index, resource in enumerate(resources)
        if smoke_name(view, record, index) not in present
    ]


def _finish(view: NodeView, record: Record, ctx: Context, detail: str) -> list[Action]:
    """Done in one write (state, uncordon if it was schedulable, taint removed), then the Lease goes."""
    spec: dict[str, Any] = {} if _was_unschedulable(view, record) else {"unschedulable": False}
    if _has_mig_taint(view) and record.flow == Flow.MIG_LAYOUT:
        spec["taints"] = _without_mig_taint(view)
    record, labels, notes = _release(view, replace(record, since=ctx.now))
    labels.update(_paused_operands(view))
    actions: list[Action] = [
        _move(view, record, State.DONE, f"done: {detail}", spec=spec, labels=labels, annotations=notes)
    ]
    actions.append(_event(view, "Done", f"{record.flow} done on {view.name}: {detail}"))
    return actions + _delete_lease_after(view)


def _fail_touched(
    view: NodeView,
    record: Record,
    reason: Reason,
    detail: str,
    ctx: Context,
    *,
    labels: dict[str, str | None] | None = None,
    spec: dict[str, Any] | None = None,
) -> list[Action]:
    """The halt first (the node's Lease says failed), then the node: failed, cordoned, with its reason."""
    lease = node_lease_name(view.uid)
    notes = {LEASE_TOUCHED_ANNOTATION: "true", LEASE_FAILED_ANNOTATION: reason.value}
    actions: list[Action] = []
    if view.lease is None:
        actions.append(CreateLease(lease, view.pool, view.name, notes))
    elif view.lease_failed != reason.value:
        actions.append(AnnotateLease(lease, notes))
    text = (
        f"{reason.value}: {detail}; the pool {view.pool} halts until the node is fixed and retried: "
        f"`{retry_command(view.name)}`"
    )
    actions.append(_move(view, record, State.FAILED, text, reason=reason, labels=labels, spec=spec))
    actions.append(_event(view, "Failed", text, True))
    return actions


def _fail_untouched(view: NodeView, record: Record, reason: Reason, detail: str, ctx: Context) -> list[Action]:
    """Failed before the host was touched: uncordoned if it was schedulable, the slot released; no halt."""
    spec = {} if _was_unschedulable(view, record) else {"unschedulable": False}
    record, labels, notes = _release(view, record)
    text = f"{reason.value}: {detail}"
    actions: list[Action] = [
        _move(view, record, State.FAILED, text, reason=reason, spec=spec, labels=labels, annotations=notes)
    ]
    actions.append(_event(view, "Failed", f"{reason.value}: {detail}", True))
    return actions + _delete_lease_after(view)


_HANDLERS = {
    State.CORDONED: _cordoned,
    State.EVICTING: _evicting,
    State.UNINSTALLING: _uninstalling,
    State.VERIFYING: _verifying,
    State.REBOOTING: _rebooting,
    State.HANDING_OVER: _handing_over,
    State.MIG_APPLYING: _mig_applying,
    State.MIG_RECOVERING: _mig_recovering,
    State.SMOKE_TESTING: _smoke_testing,
}


def orphan_lease_actions(lease: dict[str, Any], live_uids: set[str]) -> list[Action]:
    """A Lease whose node is gone: touched -> the halt (node-deleted); untouched -> deleted; failed -> kept."""
    uid = objects.name(lease).removeprefix("node-agent-")
    if uid in live_uids:
        return []
    notes = objects.annotations_of(lease)
    if notes.get(LEASE_FAILED_ANNOTATION):
        return []
    if notes.get(LEASE_TOUCHED_ANNOTATION):
        return [AnnotateLease(objects.name(lease), {LEASE_FAILED_ANNOTATION: Reason.NODE_DELETED.value})]
    return [DeleteLease(objects.name(lease), str(lease["metadata"].get("resourceVersion", "")))]
