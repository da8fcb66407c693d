"""Holding the GPU Operator's upgrade controller off a pool while the rollout controller works there.

Its own module: a pool-level decision (not one node's), pure like the other decisions, computed after them in
each pass from the same views.
"""

from __future__ import annotations

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.node_agent import (
    MIG_DESIRED_LABEL,
    SLOT_STATES,
    THROTTLE_ANNOTATION,
    UPGRADE_SKIP_LABEL,
    State,
)
from components.node_agent.agent.controller.actions import Action, PatchNode
from components.node_agent.agent.controller.decisions.slots import wants_slot
from components.node_agent.agent.controller.view import NodeView, PoolView
from components.node_agent.agent.controller.work import Work


def throttle(views: list[NodeView], works: dict[str, Work], pools: dict[str, PoolView]) -> list[Action]:
    """One maintainer per pool while the controller works on it: the GPU Operator's upgrade controller is held off
    the pool's other nodes with its own skip label, and let back when the controller's work there is done.

    Why a whole pool: the operator admits a node while the nodes *it manages* that are away stay below its own
    limit, and it may move a node from ``upgrade-done`` through ``upgrade-required`` to ``cordon-required`` in one
    reconcile. Nodes the controller holds in a hand-over have no operator driver pod yet, so the operator does not
    count them: the two together could take more of the pool down than its budget (the randomised soak found it).
    So while any node of the pool has the controller's work (waiting, or held), every other node the operator
    manages there (it runs a driver pod) carries the skip label with the controller's throttle note; the notes
    and labels go again once the pool has no work left. Only labels the controller set are removed. The operator
    then upgrades the pool after the controller's rollout, within its own budget.
    """
    actions: list[Action] = []
    busy = busy_pools(views, works, pools)
    for name, pool in sorted(pools.items()):
        members = sorted((view for view in views if view.pool == name), key=lambda item: item.name)
        for view in members:
            throttled = view.annotations.get(THROTTLE_ANNOTATION) == "true"
            held = _holds(view, pool, works[view.name])
            if name in busy and not held and holdable(view):
                actions.append(_throttle_patch(view, hold=True))
            elif throttled and view.skip_label and name not in busy and _flow_applies(view):
                actions.append(_throttle_patch(view, hold=False))
    return actions


def busy_pools(views: list[NodeView], works: dict[str, Work], pools: dict[str, PoolView]) -> set[str]:
    """The pools where the controller's work holds a node, or wants to: the operator is held off their other nodes."""
    return {
        name
        for name, pool in pools.items()
        if any(_holds(view, pool, works[view.name]) for view in views if view.pool == name)
    }


def holdable(view: NodeView) -> bool:
    """A node of a busy pool that the throttle labels: one a flow applies to (not the controller's to label
    otherwise), running the operator's driver pod (the operator manages it), not already skip-labelled or throttled,
    and not already the operator's. A CUDA proof that starts on such a node carries the labels in its own write."""
    throttled = view.annotations.get(THROTTLE_ANNOTATION) == "true"
    return (
        _flow_applies(view)
        and not throttled
        and not view.skip_label
        and bool(view.driver_pods)
        and not view.operator_holds
    )


def _flow_applies(view: NodeView) -> bool:
    """A node the controller's flows apply to (opted in, or a desired MIG layout): the only ones it labels."""
    return view.opted_in or bool(view.labels.get(MIG_DESIRED_LABEL))


def _holds(view: NodeView, pool: PoolView, work: Work) -> bool:
    """The controller's work holds the node, or wants to. A CUDA proof does not count: its node keeps its operator
    driver pod and is not cordoned, so the operator counts it as it is (nothing taken away that it cannot see); in a
    busy pool it is held off like any other node the operator manages (its proof's first write carries the labels,
    ``decisions/cuda.py``)."""
    if view.state == State.PROVING:
        return False
    return view.state in SLOT_STATES or view.uid in pool.holders or wants_slot(view, work)


def _throttle_patch(view: NodeView, *, hold: bool) -> PatchNode:
    labels = {UPGRADE_SKIP_LABEL: operator.UPGRADE_SKIP_VALUE if hold else None}
    notes = {THROTTLE_ANNOTATION: "true" if hold else None}
    why = "the operator's upgrade held: the pool's shared budget is full" if hold else "the operator's upgrade released"
    return PatchNode(view.name, {"metadata": {"resourceVersion": view.rv, "labels": labels, "annotations": notes}}, why)
