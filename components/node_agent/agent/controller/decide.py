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

from typing import Any

from components.catalog.node_agent import (
    FLOW_LABEL,
    LEASE_CORDONED_ANNOTATION,
    LEASE_TOUCHED_ANNOTATION,
    LEASE_WAS_UNSCHEDULABLE_ANNOTATION,
    SLOT_STATES,
    STATE_LABEL,
    TOUCHED_STATES,
    Reason,
    State,
    node_lease_name,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import (
    Action,
    AnnotateLease,
    CreateLease,
    PatchNode,
)
from components.node_agent.agent.controller.decisions.context import KNOWN_STATES, Context
from components.node_agent.agent.controller.decisions.cuda import on_proving
from components.node_agent.agent.controller.decisions.eviction import on_cordoned, on_evicting
from components.node_agent.agent.controller.decisions.halts import (
    declaration_gone,
    fail_touched,
    stop_for_halt,
    unknown_state,
)
from components.node_agent.agent.controller.decisions.handover import (
    on_handing_over,
    on_rebooting,
    on_uninstalling,
    on_verifying,
)
from components.node_agent.agent.controller.decisions.mig import on_mig_applying, on_mig_recovering, on_smoke_testing
from components.node_agent.agent.controller.decisions.release import (
    release_untouched,
    yield_to_operator,
)
from components.node_agent.agent.controller.decisions.slots import outside_maintenance
from components.node_agent.agent.controller.decisions.writes import node_event, node_patch, with_spec
from components.node_agent.agent.controller.view import NodeView, Record
from components.node_agent.agent.controller.work import (
    Work,
)


def decide(view: NodeView, work: Work, ctx: Context) -> list[Action]:
    """The API calls that move ``view`` towards its next state (empty: nothing to do now)."""
    state = view.state
    if state not in KNOWN_STATES:
        return unknown_state(view, ctx)
    if state not in SLOT_STATES and view.lease is not None and not view.lease_failed:
        kept = view.record.state if view.record is not None else ""
        if kept in SLOT_STATES:
            # The state label was edited or removed by hand mid-flow: the record (and the Lease) say where the
            # node is; the label is only their mirror, written back before anything else.
            labels: dict[str, str | None] = {STATE_LABEL: kept, FLOW_LABEL: view.record.flow if view.record else None}
            return [node_patch(view, f"the state label {state!r} edited by hand: {kept} again", labels=labels)]
        if view.record is None and view.lease_touched:
            return unknown_state(view, ctx)  # label and record both gone from a touched node: say so, halt
    if state in SLOT_STATES:
        if view.record is None:
            return unknown_state(view, ctx)
        return _in_maintenance(view, view.record, work, ctx)
    if state == State.PROVING:
        return on_proving(view, work, ctx)  # a slot, not maintenance: not cordoned, nothing changed on the node
    return outside_maintenance(view, work, ctx)


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
            node_event(view, "Recordoned", f"{view.name} was uncordoned during {state.value}: cordoned again", True)
        )
    if view.operator_holds and not touched:
        return prelude + yield_to_operator(view, record)
    gone = declaration_gone(view, record)
    if gone and not touched and not view.lease_touched:
        return prelude + release_untouched(view, record, ctx, f"{gone} before the node was touched: released")
    if gone:
        return prelude + fail_touched(view, record, Reason.DECLARATION_GONE, gone, ctx)
    halted_by = ctx.pool.halted_by if ctx.pool is not None else ()
    if halted_by and not touched and not view.lease_touched and not view.lease_failed:
        return prelude + stop_for_halt(view, record, halted_by)
    handler = _HANDLERS[state]
    actions = handler(view, record, work, ctx)
    if recordon:
        if any(isinstance(action, PatchNode) for action in actions):
            actions = [with_spec(action, recordon) for action in actions]
        else:
            actions = [node_patch(view, "cordoned again", spec=recordon), *actions]
    return prelude + actions


_HANDLERS = {
    State.CORDONED: on_cordoned,
    State.EVICTING: on_evicting,
    State.UNINSTALLING: on_uninstalling,
    State.VERIFYING: on_verifying,
    State.REBOOTING: on_rebooting,
    State.HANDING_OVER: on_handing_over,
    State.MIG_APPLYING: on_mig_applying,
    State.MIG_RECOVERING: on_mig_recovering,
    State.SMOKE_TESTING: on_smoke_testing,
}
