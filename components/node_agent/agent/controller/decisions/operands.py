"""The operand labels mig-manager leaves paused, the MIG-pending taint, and whether a MIG change is still wanted."""

from __future__ import annotations

from typing import Any

from components.catalog.node_agent import (
    MIG_DESIRED_LABEL,
    MIG_PENDING_TAINT_KEY,
    MIG_STATE_FAILED,
    MIG_STATE_LABEL,
    MIG_STATE_SUCCESS,
    OPERAND_DEPLOY_LABELS,
    PAUSED_FOR_MIG,
    Flow,
)
from components.node_agent.agent.controller.actions import (
    Action,
)
from components.node_agent.agent.controller.decisions.context import Context
from components.node_agent.agent.controller.decisions.writes import node_patch
from components.node_agent.agent.controller.view import NodeView, Record
from components.node_agent.agent.controller.work import (
    mig_in_place,
)


def paused_operands(view: NodeView) -> dict[str, str | None]:
    """Operand labels mig-manager left paused, set back to ``true`` (only once mig-manager has answered)."""
    if view.labels.get(MIG_STATE_LABEL) not in (MIG_STATE_SUCCESS, MIG_STATE_FAILED):
        return {}
    return {key: "true" for key in OPERAND_DEPLOY_LABELS if view.labels.get(key) == PAUSED_FOR_MIG}


def without_mig_taint(view: NodeView) -> list[dict[str, Any]]:
    return [taint for taint in view.taints if taint.get("key") != MIG_PENDING_TAINT_KEY]


def has_mig_taint(view: NodeView) -> bool:
    return any(taint.get("key") == MIG_PENDING_TAINT_KEY for taint in view.taints)


def restore_operands(view: NodeView) -> list[Action]:
    restore = paused_operands(view)
    if not restore:
        return []
    return [node_patch(view, "operands left paused-for-mig-change restored", labels=restore)]


def mig_work_gone(view: NodeView, record: Record, ctx: Context) -> bool:
    if record.flow != Flow.MIG_LAYOUT:
        return False
    desired = view.labels.get(MIG_DESIRED_LABEL, "")
    return not ctx.settings.mig_layout or not desired or mig_in_place(view, ctx.settings, desired)
