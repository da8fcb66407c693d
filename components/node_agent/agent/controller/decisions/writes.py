"""The writes a decision returns: one merge patch per move (state, reason, record, detail, request and any
cluster-side effect together, with the resourceVersion it was computed from), Events, the MIG label write.

The transition table (``components.catalog.node_agent.TRANSITIONS``) is the source of truth: a move to a state
the table does not allow from the node's current state is never written (``UndeclaredTransition``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from components.catalog.node_agent import (
    ANY_STATE_FAILURES,
    DETAIL_ANNOTATION,
    FLOW_LABEL,
    MIG_LABEL,
    MIG_STATE_LABEL,
    REASON_LABEL,
    RECORD_ANNOTATION,
    REQUEST_ANNOTATION,
    STATE_LABEL,
    TOUCHED_STATES,
    TRANSITIONS,
    State,
    Step,
)
from components.node_agent.agent.controller.actions import (
    Action,
    Event,
    PatchNode,
)
from components.node_agent.agent.controller.view import NodeView, Record


def node_patch(
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


def move(
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
    """One write: the new state, reason, flow, record, detail, request, and any cluster-side effect with them.

    Only along the transition table: a move the table does not list from the node's current state raises
    ``UndeclaredTransition`` instead of being written (the reconcile logs it for that node and goes on)."""
    check_transition(view.state, state, reason)
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
    return node_patch(view, f"{view.state} -> {state.value}: {detail}", labels=all_labels, annotations=notes, spec=spec)


class UndeclaredTransition(Exception):
    """A decision tried a move the transition table does not list: a bug, never written to the node."""


#: The table as (source, target) pairs.
_ALLOWED = frozenset((t.source.value, t.target.value) for t in TRANSITIONS)
_ANY_STATE_FAILURES = frozenset(reason.value for reason in ANY_STATE_FAILURES)
_TOUCHED = frozenset(state.value for state in TOUCHED_STATES)


def check_transition(source: str, target: State, reason: str | None) -> None:
    """Raise ``UndeclaredTransition`` unless ``source -> target`` is in the table: the same state (a new reason or
    detail), a listed transition, a failure any state may reach (``ANY_STATE_FAILURES``), or any failure of a
    touched node (the table's ``*-> failed`` rows are the touched states' own)."""
    if source == target.value or (source, target.value) in _ALLOWED:
        return
    if target == State.FAILED and (reason in _ANY_STATE_FAILURES or source in _TOUCHED):
        return
    raise UndeclaredTransition(f"{source} -> {target.value} is not in the transition table (reason {reason})")


def new_request(view: NodeView, record: Record, step: Step, now: float) -> tuple[Record, dict[str, Any]]:
    seq = record.seq + 1
    request = {"id": f"{view.uid}.{record.attempt}.{seq}", "step": step.value, "at": now}
    return replace(record, seq=seq, step_at=now), request


def inspect_request(view: NodeView, now: float) -> dict[str, Any]:
    return {"id": f"{view.uid}.inspect.{int(now * 1000)}", "step": Step.INSPECT.value, "at": now}


def inspect_annotation(view: NodeView, now: float) -> dict[str, str | None]:
    return {REQUEST_ANNOTATION: json.dumps(inspect_request(view, now), sort_keys=True, separators=(",", ":"))}


def node_event(view: NodeView, reason: str, message: str, warning: bool = False) -> Event:
    return Event(view.name, view.uid, reason, message, warning)


def with_spec(action: Action, spec: dict[str, Any]) -> Action:
    if not isinstance(action, PatchNode):
        return action
    body = dict(action.patch)
    merged = {**spec, **(body.get("spec") or {})}
    body["spec"] = merged
    return PatchNode(action.node, body, action.why)


def say_waiting(view: NodeView, record: Record, state: State, detail: str, reason: str | None) -> list[Action]:
    """Say once, on the node, what it waits for (state, reason, detail); nothing while it already says so."""
    if view.labels.get(REASON_LABEL) == reason:
        return []
    return [move(view, record, state, detail, reason=reason, keep_request=True)]


def write_mig(view: NodeView, record: Record, state: State, config: str, detail: str) -> PatchNode:
    """Set the MIG config and clear mig-manager's state in one write: any state seen after it is an answer."""
    return move(view, record, state, detail, labels={MIG_LABEL: config, MIG_STATE_LABEL: None})
