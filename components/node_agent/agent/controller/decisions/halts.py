"""Failures and halts: a touched node that fails halts its pool (its Lease says failed first); an untouched one
is given back; a halt stops every untouched node; a declaration that went away stops its flow.
"""

from __future__ import annotations

from typing import Any

from components.catalog.names import HOST_DRIVER_REMOVAL_LABEL
from components.catalog.node_agent import (
    FLOW_LABEL,
    LEASE_FAILED_ANNOTATION,
    LEASE_TOUCHED_ANNOTATION,
    MIG_DESIRED_LABEL,
    Flow,
    Reason,
    State,
    node_lease_name,
    retry_command,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import (
    Action,
    AnnotateLease,
    CreateLease,
    DeleteLease,
)
from components.node_agent.agent.controller.decisions.context import Context
from components.node_agent.agent.controller.decisions.release import delete_lease_after, give_back, was_unschedulable
from components.node_agent.agent.controller.decisions.writes import move, node_event
from components.node_agent.agent.controller.view import NodeView, Record


def fail_touched(
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
    actions.append(move(view, record, State.FAILED, text, reason=reason, labels=labels, spec=spec))
    actions.append(node_event(view, "Failed", text, True))
    return actions


def fail_untouched(view: NodeView, record: Record, reason: Reason, detail: str, ctx: Context) -> list[Action]:
    """Failed before the host was touched: uncordoned if it was schedulable, the slot released; no halt."""
    spec = {} if was_unschedulable(view, record) else {"unschedulable": False}
    record, labels, notes = give_back(view, record)
    text = f"{reason.value}: {detail}"
    actions: list[Action] = [
        move(view, record, State.FAILED, text, reason=reason, spec=spec, labels=labels, annotations=notes)
    ]
    actions.append(node_event(view, "Failed", f"{reason.value}: {detail}", True))
    return actions + delete_lease_after(view)


def unknown_state(view: NodeView, ctx: Context) -> list[Action]:
    record = view.record or Record(uid=view.uid, flow=view.labels.get(FLOW_LABEL, ""))
    detail = f"the state label holds {view.state!r} without a record this controller wrote for this node"
    return fail_touched(view, record, Reason.UNKNOWN_STATE, detail, ctx, spec={"unschedulable": True})


def stop_for_halt(view: NodeView, record: Record, halted_by: tuple[str, ...]) -> list[Action]:
    """The pool halted (a touched node failed) while this node was admitted but not yet touched: it stops before its
    first change to the host or the MIG layout, is uncordoned if it was schedulable, and gives its slot back."""
    spec = {} if was_unschedulable(view, record) else {"unschedulable": False}
    record, labels, notes = give_back(view, record)
    detail = f"stopped before any change: the pool {view.pool} is halted by {', '.join(halted_by)}"
    actions: list[Action] = [
        move(
            view,
            record,
            State.WAITING_SLOT,
            detail,
            reason=Reason.ROLLOUT_HALTED,
            labels=labels,
            annotations=notes,
            spec=spec,
        ),
        node_event(view, "Halted", f"{view.name}: {detail}", True),
    ]
    return actions + delete_lease_after(view)


def declaration_gone(view: NodeView, record: Record) -> str:
    """What of the node's declaration went away mid-flow ("" when nothing did): the hand-over's opt-in label, or
    the desired MIG layout. Without it the controller's next writes (the uninstall request, gpu.deploy.driver,
    nvidia.com/mig.config) are refused by its admission policy, so the flow stops here instead of retrying them."""
    if record.flow == Flow.DRIVER_HANDOVER and not view.opted_in:
        return f"the hand-over opt-in {HOST_DRIVER_REMOVAL_LABEL} was removed"
    if record.flow == Flow.MIG_LAYOUT and not view.labels.get(MIG_DESIRED_LABEL):
        return f"the desired MIG layout {MIG_DESIRED_LABEL} was removed"
    return ""


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
