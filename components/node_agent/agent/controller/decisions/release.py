"""Giving a node back: its cordon as it was found, the skip label the controller set, the operator's note its
cordon caused, the slot; done, released untouched, yielded to the operator, or retried by a person.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.node_agent import (
    FLOW_LABEL,
    LEASE_CORDONED_ANNOTATION,
    LEASE_FENCED_ANNOTATION,
    LEASE_WAS_UNSCHEDULABLE_ANNOTATION,
    REASON_LABEL,
    RECORD_ANNOTATION,
    RETRY_ANNOTATION,
    UPGRADE_SKIP_LABEL,
    Flow,
    Reason,
    State,
    node_lease_name,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.actions import (
    Action,
    DeleteLease,
)
from components.node_agent.agent.controller.decisions.context import Context
from components.node_agent.agent.controller.decisions.operands import has_mig_taint, paused_operands, without_mig_taint
from components.node_agent.agent.controller.decisions.writes import move, node_event, node_patch
from components.node_agent.agent.controller.view import NodeView, Record

#: Upgrade states in which the operator has already read its initial-state note (or holds none).
_NOTE_READ = frozenset(
    {operator.UpgradeState.UNKNOWN, operator.UpgradeState.DONE, operator.UpgradeState.UNCORDON_REQUIRED}
)


def was_unschedulable(view: NodeView, record: Record) -> bool:
    """Whether the node was unschedulable before the controller cordoned it: the Lease's note once the controller's
    cordon landed (no edit of the node reaches it), else the record's."""
    notes = objects.annotations_of(view.lease or {})
    if notes.get(LEASE_CORDONED_ANNOTATION) and LEASE_WAS_UNSCHEDULABLE_ANNOTATION in notes:
        return notes[LEASE_WAS_UNSCHEDULABLE_ANNOTATION] == "true"
    return record.was_unschedulable


def give_back(view: NodeView, record: Record) -> tuple[Record, dict[str, str | None], dict[str, str | None]]:
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
        not was_unschedulable(view, record)
        and operator.UPGRADE_INITIAL_STATE_ANNOTATION in view.annotations
        and view.operator_state not in _NOTE_READ
    ):
        notes[operator.UPGRADE_INITIAL_STATE_ANNOTATION] = None
    return replace(record, fenced=False), labels, notes


def delete_lease_after(view: NodeView) -> list[Action]:
    if view.lease is None:
        return []
    return [DeleteLease(node_lease_name(view.uid), str(view.lease["metadata"].get("resourceVersion", "")))]


def drop_lease(view: NodeView) -> list[Action]:
    """A node out of maintenance holds no slot: its Lease goes, unless it is a halt (failed)."""
    if view.lease is None or view.lease_failed:
        return []
    return [DeleteLease(node_lease_name(view.uid), str(view.lease["metadata"].get("resourceVersion", "")))]


def unfence_outside(view: NodeView) -> list[Action]:
    """Out of maintenance with no slot: the skip label the controller set goes (the work went away, or waits)."""
    record = view.record
    if record is None or not record.fenced or (view.lease is not None and not view.lease_failed):
        return []
    record, labels, notes = give_back(view, record)
    if not labels and not notes:
        return []
    body_notes = {**notes, RECORD_ANNOTATION: record.dumps()}
    return [node_patch(view, "the operator's skip label removed", labels=labels, annotations=body_notes)]


def release_untouched(view: NodeView, record: Record, ctx: Context, detail: str) -> list[Action]:
    spec = {} if was_unschedulable(view, record) else {"unschedulable": False}
    record, labels, notes = give_back(view, record)
    actions: list[Action] = [move(view, record, State.IDLE, detail, spec=spec, labels=labels, annotations=notes)]
    return actions + delete_lease_after(view)


def finish(view: NodeView, record: Record, ctx: Context, detail: str) -> list[Action]:
    """Done in one write (state, uncordon if it was schedulable, taint removed), then the Lease goes."""
    spec: dict[str, Any] = {} if was_unschedulable(view, record) else {"unschedulable": False}
    if has_mig_taint(view) and record.flow == Flow.MIG_LAYOUT:
        spec["taints"] = without_mig_taint(view)
    record, labels, notes = give_back(view, replace(record, since=ctx.now))
    labels.update(paused_operands(view))
    actions: list[Action] = [
        move(view, record, State.DONE, f"done: {detail}", spec=spec, labels=labels, annotations=notes)
    ]
    actions.append(node_event(view, "Done", f"{record.flow} done on {view.name}: {detail}"))
    return actions + delete_lease_after(view)


def yield_to_operator(view: NodeView, record: Record) -> list[Action]:
    """The operator's upgrade controller took a node the controller holds but has not touched (its view was older
    than the skip label): the controller lets go, Lease and all, and takes it again after the operator is done.

    The cordon stays: the operator cordons the node itself and uncordons it at ``uncordon-required``, unless it was
    unschedulable before the controller took it (then the operator's initial-state note keeps it cordoned).
    """
    record, labels, notes = give_back(view, record)
    detail = (
        f"the GPU Operator's upgrade controller took the node ({operator.UPGRADE_STATE_LABEL}={view.operator_state}) "
        "before it was touched: released to it, taken again once it is done"
    )
    actions: list[Action] = [
        move(
            view, record, State.WAITING_SLOT, detail, reason=Reason.OPERATOR_UPGRADING, labels=labels, annotations=notes
        )
    ]
    return actions + delete_lease_after(view)


def retry_node(view: NodeView, asked: str) -> list[Action]:
    """A person fixed a failed node and asked for another attempt: the node is given back as it was before the
    first attempt (uncordoned if it was schedulable, the skip label the controller set removed), the halt its Lease
    held is cleared, and the flow starts over from idle (the next pass inspects and admits it as any other)."""
    record = view.record or Record(uid=view.uid)
    spec = {} if was_unschedulable(view, record) else {"unschedulable": False}
    if view.labels.get(REASON_LABEL) == Reason.PROOF_FAILED and not record.proof_cordoned:
        spec = {}  # a failed CUDA proof that did not cordon: the cordon is not the controller's to lift
    record, labels, notes = give_back(view, record)
    notes[RETRY_ANNOTATION] = None
    labels[FLOW_LABEL] = None
    detail = f"retry asked ({asked}): given back as before the attempt, the halt cleared; starting over"
    actions: list[Action] = [
        move(view, record, State.IDLE, detail, labels=labels, annotations=notes, spec=spec),
        node_event(view, "Retry", f"{view.name}: {detail}"),
    ]
    if view.lease is not None:
        actions.append(DeleteLease(node_lease_name(view.uid), str(view.lease["metadata"].get("resourceVersion", ""))))
    return actions
