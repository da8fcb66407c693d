"""Admission and budget: a node outside maintenance waits, is fenced (the operator's skip label), admitted
(Lease, then cordon), refused or left alone.
"""

from __future__ import annotations

from dataclasses import replace

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.node_agent import (
    FLOW_LABEL,
    LEASE_CORDONED_ANNOTATION,
    LEASE_FENCED_ANNOTATION,
    LEASE_WAS_UNSCHEDULABLE_ANNOTATION,
    MIG_DESIRED_LABEL,
    REASON_LABEL,
    RETRY_ANNOTATION,
    SLOT_HOLDING_STATES,
    UPGRADE_SKIP_LABEL,
    Flow,
    Reason,
    State,
    node_lease_name,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import (
    Action,
    AnnotateLease,
    CreateLease,
)
from components.node_agent.agent.controller.decisions.context import Context
from components.node_agent.agent.controller.decisions.cuda import start_proof
from components.node_agent.agent.controller.decisions.handover import reappeared
from components.node_agent.agent.controller.decisions.operands import has_mig_taint, restore_operands, without_mig_taint
from components.node_agent.agent.controller.decisions.release import (
    drop_lease,
    retry_node,
    unfence_outside,
)
from components.node_agent.agent.controller.decisions.writes import (
    inspect_annotation,
    inspect_request,
    move,
    node_event,
    node_patch,
)
from components.node_agent.agent.controller.view import NodeView, PoolView, Record
from components.node_agent.agent.controller.work import (
    HOST_DRIVER_KINDS,
    Work,
    mig_in_place,
)


def wants_slot(view: NodeView, work: Work) -> bool:
    """A node not in maintenance with work to do (and no refusal) wants a slot; a node in its CUDA proof finishes it
    first (a few seconds: its smoke pods), and is taken afterwards."""
    return not (view.state in SLOT_HOLDING_STATES or view.state == State.FAILED or work.refusal or not work.flow)


def outside_maintenance(view: NodeView, work: Work, ctx: Context) -> list[Action]:
    state, now = view.state, ctx.now
    if state == State.FAILED:
        retry = view.annotations.get(RETRY_ANNOTATION)
        if retry:
            return retry_node(view, retry)
        return restore_operands(view)
    if state == State.DONE and view.record is not None and view.record.flow == Flow.DRIVER_HANDOVER:
        facts = work.facts or {}
        if str(facts.get("install", "")) in HOST_DRIVER_KINDS:
            return reappeared(view, view.record, facts, ctx)
    actions: list[Action] = []
    if work.refusal:
        if state != State.REFUSED or view.labels.get(REASON_LABEL) != work.refusal:
            request = inspect_request(view, now) if work.inspect else None
            actions.append(
                move(
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
            actions.append(node_patch(view, "inspect again", annotations=inspect_annotation(view, now)))
        return actions + drop_lease(view) + unfence_outside(view)
    if work.flow:
        if view.operator_holds:
            detail = (
                f"waiting: the GPU Operator's upgrade controller holds the node ({operator.UPGRADE_STATE_LABEL}="
                f"{view.operator_state}); taken once it is done"
            )
            actions += _waiting_outside(view, work, detail, Reason.OPERATOR_UPGRADING, now)
            return actions + drop_lease(view) + unfence_outside(view)
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
        actions += _waiting_outside(view, work, detail, reason, now)
        return actions + drop_lease(view) + unfence_outside(view)
    # No work.
    if state in (State.WAITING_SLOT, State.REFUSED) and (work.facts is not None or not view.opted_in):
        actions.append(move(view, None, State.IDLE, "nothing to do", keep_request=True))
    elif work.inspect:
        actions.append(node_patch(view, "inspect the host", annotations=inspect_annotation(view, now)))
    elif has_mig_taint(view) and ctx.settings.mig_layout and not ctx.settings.dry_run:
        desired = view.labels.get(MIG_DESIRED_LABEL, "")
        if desired and mig_in_place(view, ctx.settings, desired):
            actions.append(
                move(
                    view,
                    None,
                    State.DONE,
                    f"MIG layout {desired} in place: taint removed",
                    keep_request=True,
                    spec={"taints": without_mig_taint(view)},
                )
            )
    else:
        restored = restore_operands(view)
        if ctx.proof and not restored and not unfence_outside(view):
            return start_proof(view, ctx)  # its CUDA proof: a slot, not a cordon (decisions/cuda.py)
        actions += restored
    return actions + drop_lease(view) + unfence_outside(view)


def _budget_detail(view: NodeView, pool: PoolView | None) -> str:
    """Why there is no room: the budget, and which nodes are away (the controller's and the others')."""
    if pool is None:
        return f"waiting: no budget for the pool {view.pool}"
    away = ", ".join(pool.away[:5]) + (" ..." if len(pool.away) > 5 else "")
    return (
        f"waiting: {len(pool.holders | pool.unavailable)} node(s) of the pool {view.pool} away, budget "
        f"{pool.budget} (in maintenance, upgraded by the GPU Operator, cordoned or NotReady: {away or 'none'})"
    )


def _waiting_outside(view: NodeView, work: Work, detail: str, reason: Reason, now: float) -> list[Action]:
    """Waiting for a slot, said once (state waiting-slot, its reason, the flow); a node that waits longer than the
    recheck period has its host inspected again, so a refusal that arises meanwhile is seen before it is taken."""
    if view.state == State.WAITING_SLOT and view.labels.get(REASON_LABEL) == reason:
        if work.inspect:
            return [node_patch(view, "inspect again while waiting", annotations=inspect_annotation(view, now))]
        return []
    labels: dict[str, str | None] = {FLOW_LABEL: work.flow}
    return [move(view, None, State.WAITING_SLOT, detail, reason=reason, keep_request=True, labels=labels)]


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
        move(
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


def _create_slot(view: NodeView, work: Work) -> CreateLease:
    """The node's Lease, and what the node says if the API refuses it (the refusal is appended to the detail)."""
    refused = move(
        view,
        None,
        State.WAITING_SLOT,
        f"waiting: the Lease {node_lease_name(view.uid)} for {work.flow} was refused by the API",
        reason=Reason.SLOT_REFUSED,
        keep_request=True,
        labels={FLOW_LABEL: work.flow},
    )
    return CreateLease(node_lease_name(view.uid), view.pool, view.name, on_refused=refused)


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
        move(view, record, State.CORDONED, f"cordoned for {work.flow}: {work.detail}", spec={"unschedulable": True})
    )
    actions.append(node_event(view, "Cordoned", f"cordoned for {work.flow}: {work.detail}"))
    return actions
